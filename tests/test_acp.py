"""``mini-letta acp`` as an editor drives it: the SDK's client over the process's pipes, against the
fake OpenAI server (real HTTP, streaming). A prompt with a tool call and its approval, an edit with
its diff (through the editor's buffers too), the modes, a cancel mid-stream, a resume, a compaction."""

from __future__ import annotations

import asyncio
import json

import pytest
from acp_support import Agent, Editor, run
from fakes import Reply
from fakes.openai_server import FakeOpenAIServer


@pytest.fixture
def fake():
    with FakeOpenAIServer() as server:
        yield server


def sent_messages(fake) -> list[dict]:
    return fake.requests_to("/v1/chat/completions")[-1].body["messages"]


def bash(call_id: str, command: str) -> tuple[str, str, str]:
    return (call_id, "bash", json.dumps({"command": command}))


def test_a_command_is_asked_through_the_editor_with_the_repl_choices_and_runs_once_allowed(fake, tmp_path, workspace):
    fake.enqueue(Reply(tool_calls=[bash("c1", "echo hello-from-bash")]), Reply(text="It printed hello."))
    editor = Editor(answers=["allow_once"])

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:
            return await agent.prompt("run echo")

    assert run(dialogue()) == "end_turn"
    [(asked, options)] = editor.questions
    assert asked.tool_call_id == "c1" and "echo hello-from-bash" in asked.title
    assert [(o.option_id, o.kind) for o in options] == [("allow_once", "allow_once"), ("always:a", "allow_always"),
                                                         ("reject_once", "reject_once")]
    assert "`echo` commands" in options[1].name
    started, *updates = editor.tool_updates("c1")
    assert started.session_update == "tool_call" and started.kind == "execute"
    assert updates[-1].status == "completed" and "hello-from-bash" in updates[-1].content[-1].content.text
    assert editor.text() == "It printed hello."
    # The model read the command's output.
    assert any("hello-from-bash" in (m.get("content") or "") for m in sent_messages(fake) if m["role"] == "tool")
    assert editor.of("usage_update")[-1].size > 0


def test_always_for_the_prefix_runs_the_next_such_command_unasked_and_no_refuses(fake, tmp_path, workspace):
    fake.enqueue(Reply(tool_calls=[bash("c1", "echo one")]), Reply(tool_calls=[bash("c2", "echo two")]),
                 Reply(tool_calls=[bash("c3", "touch made.txt")]), Reply(text="done"))
    editor = Editor(answers=["always:a", "reject_once"])

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:
            return await agent.prompt("echo twice, then touch")

    assert run(dialogue()) == "end_turn"
    assert [asked.tool_call_id for asked, _ in editor.questions] == ["c1", "c3"]
    assert editor.tool_updates("c2")[-1].status == "completed"
    assert editor.tool_updates("c3")[-1].status == "failed" and not (workspace / "made.txt").exists()


def test_an_edit_shows_its_diff_and_its_location_before_it_is_allowed(fake, tmp_path, workspace):
    (workspace / "notes.txt").write_text("one\ntwo\n")
    edit = json.dumps({"path": "notes.txt", "old_string": "two", "new_string": "three"})
    fake.enqueue(Reply(tool_calls=[("e1", "edit_file", edit)]), Reply(text="Edited."))
    editor = Editor(answers=["allow_once"])

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:
            return await agent.prompt("change two to three")

    assert run(dialogue()) == "end_turn"
    [(asked, _)] = editor.questions
    [change] = asked.content
    assert change.type == "diff" and change.path == str(workspace / "notes.txt")
    assert (change.old_text, change.new_text) == ("one\ntwo\n", "one\nthree\n")
    assert asked.locations[0].path == str(workspace / "notes.txt") and asked.kind == "edit"
    assert editor.tool_updates("e1")[-1].content[0].type == "diff"
    assert (workspace / "notes.txt").read_text() == "one\nthree\n"


def test_with_the_editors_fs_an_unsaved_buffer_is_read_and_the_edit_goes_through_the_editor(fake, tmp_path,
                                                                                            workspace):
    path = workspace / "app.py"
    path.write_text("x = 1\n")
    read = json.dumps({"path": "app.py"})
    edit = json.dumps({"path": "app.py", "old_string": "y = 2", "new_string": "y = 3"})
    fake.enqueue(Reply(tool_calls=[("r1", "read_file", read)]), Reply(tool_calls=[("e1", "edit_file", edit)]),
                 Reply(text="Done."))
    editor = Editor(answers=["allow_once"], buffers={str(path): "x = 1\ny = 2\n"})

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:
            return await agent.prompt("read app.py and bump y")

    assert run(dialogue()) == "end_turn"
    assert "y = 2" in editor.tool_updates("r1")[-1].content[-1].content.text  # the buffer, not the disk
    assert editor.tool_updates("r1")[0].session_update == "tool_call"
    assert editor.written == {str(path): "x = 1\ny = 3\n"}
    assert path.read_text() == "x = 1\n"  # the editor owns the write (it saves when it will)


def test_modes_auto_accept_edits_runs_edits_unasked_and_plan_mode_changes_nothing(fake, tmp_path, workspace):
    write = lambda name: json.dumps({"path": name, "content": "hi\n"})  # noqa: E731
    fake.enqueue(Reply(tool_calls=[("w1", "write_file", write("a.txt"))]), Reply(text="Wrote it."),
                 Reply(tool_calls=[("w2", "write_file", write("b.txt"))]), Reply(text="Could not."))
    editor = Editor()

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:
            await agent.conn.set_session_mode(session_id=agent.session, mode_id="acceptEdits")
            first = await agent.prompt("write a.txt")
            await agent.conn.set_session_mode(session_id=agent.session, mode_id="plan")
            return first, await agent.prompt("write b.txt")

    assert run(dialogue()) == ("end_turn", "end_turn")
    assert editor.questions == []
    assert (workspace / "a.txt").read_text() == "hi\n" and not (workspace / "b.txt").exists()
    assert "plan mode" in editor.tool_updates("w2")[-1].content[-1].content.text


def test_cancel_mid_stream_ends_the_prompt_as_cancelled_and_keeps_a_valid_history(fake, tmp_path, workspace):
    fake.enqueue(Reply(text="The first part of a long answer. " * 20, chunk_size=8, stall_after=4, stall=60),
                 Reply(text="Second answer."))
    editor = Editor()

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:
            turn = asyncio.ensure_future(agent.prompt("tell me a long story"))
            await editor.first_text.wait()
            await agent.conn.cancel(session_id=agent.session)
            stopped = await turn
            return stopped, await agent.prompt("and now briefly")

    assert run(dialogue()) == ("cancelled", "end_turn")
    streamed = editor.text().removesuffix("Second answer.")
    assert streamed and ("The first part of a long answer. " * 20).startswith(streamed)
    # The partial reply was kept in the history the next request sent.
    roles = [(m["role"], m.get("content") or "") for m in sent_messages(fake)]
    assert roles[-2][0] == "assistant" and roles[-2][1].startswith(streamed)
    assert roles[-1] == ("user", "and now briefly")


def test_session_load_replays_the_history_and_goes_on_from_it(fake, tmp_path, workspace):
    fake.enqueue(Reply(tool_calls=[bash("c1", "echo remembered")]), Reply(text="First answer."),
                 Reply(text="Second answer."))
    home = tmp_path / "home"
    first, second = Editor(answers=["allow_once"]), Editor()

    async def dialogue():
        async with Agent(fake, home, workspace, first) as agent:
            await agent.prompt("first question")
            session = agent.session
        async with Agent(fake, home, workspace, second, load=session) as agent:
            replayed = list(second.updates)
            return replayed, await agent.prompt("second question")

    replayed, stopped = run(dialogue())
    assert stopped == "end_turn"
    kinds = [u.session_update for u in replayed]
    assert kinds[:4] == ["user_message_chunk", "tool_call", "agent_message_chunk", "usage_update"]
    assert replayed[0].content.text == "first question" and replayed[2].content.text == "First answer."
    assert replayed[1].status == "completed" and "remembered" in replayed[1].content[0].content.text
    assert [m.get("content") for m in sent_messages(fake) if m["role"] == "user"][-2:] == ["first question",
                                                                                           "second question"]


LONG_ANSWER = "The importer reads each row, splits it on the separator and checks the column count. " * 40


def test_compact_is_a_command_and_its_result_says_the_context_left(fake, tmp_path, workspace):
    for turn in range(3):
        fake.enqueue(Reply(text=f"Answer {turn}: " + LONG_ANSWER, chunk_size=400))
    fake.enqueue(Reply(text="## 1. Primary request and intent\nThe user asked how the CSV importer works."))
    editor = Editor()

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:
            for turn in range(3):
                await agent.prompt(f"Question {turn}: how does the CSV importer work?")
            before = editor.of("usage_update")[-1].used
            return before, await agent.prompt("/compact keep the importer")

    before, stopped = run(dialogue())
    assert stopped == "end_turn"
    reply = editor.of("agent_message_chunk")[-1].content.text
    assert "older messages" in reply and "% context left" in reply
    assert editor.of("usage_update")[-1].used < before
    commands = editor.of("available_commands_update")[0].available_commands
    assert {"compact", "context", "rewind"} <= {c.name for c in commands}


def test_an_automatic_compaction_is_told_as_a_thought_with_the_context_left(fake, tmp_path, workspace):
    env = {"CODEAGENT_MAX_CONTEXT_TOKENS": "6000"}
    # Answers and the summary alike: which request the compaction's summary is depends on the counts.
    fake.enqueue(*[Reply(text="## 1. Primary request and intent\nThe user asked how the CSV importer works.\n"
                              + LONG_ANSWER, chunk_size=400) for _ in range(10)])
    editor = Editor()

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor, env=env) as agent:
            return [await agent.prompt(f"Question {turn}: how does the CSV importer work?") for turn in range(5)]

    assert run(dialogue()) == ["end_turn"] * 5
    thoughts = editor.text("agent_thought_chunk")
    assert "compacting" in thoughts and "% context left" in thoughts


# --- the wire: what is not a well-formed, well-ordered request gets an error, and the agent goes on -----
def _exchange(fake, tmp_path, workspace, lines: list[str]) -> tuple[list[dict], str, int]:
    """Write ``lines`` to the agent's standard input, one by one, reading one reply after each."""
    import subprocess
    import sys

    from acp_support import agent_command
    from fault_support import cli_env

    process = subprocess.Popen([sys.executable, *agent_command(fake)], cwd=workspace, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=cli_env(tmp_path / "home", {"MINI_LETTA_SANDBOX": "off"}))
    replies = []
    for line in lines:
        process.stdin.write(line.encode() + b"\n")
        process.stdin.flush()
        replies.append(json.loads(process.stdout.readline()))
    process.stdin.close()
    stderr = process.stderr.read().decode()
    return replies, stderr, process.wait(timeout=30)


def test_malformed_and_out_of_order_messages_get_json_rpc_errors_and_the_agent_goes_on(fake, tmp_path, workspace):
    new = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}})
    replies, stderr, code = _exchange(fake, tmp_path, workspace, [
        "this is not json {",
        "[1, 2]",
        '{"jsonrpc": "2.0", "id": 7, "method": 42}',
        new,  # before initialize
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": 1}}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                    "params": {"sessionId": "no-such", "prompt": [{"type": "text", "text": "hi"}]}}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"sessionId": 12}}),
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "session/fly", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}}),
        new,
    ])
    errors = [(reply.get("id"), reply.get("error", {}).get("code")) for reply in replies]
    assert errors[:9] == [(None, -32700), (None, -32600), (7, -32600), (2, -32600), (3, None), (4, -32602),
                          (5, -32602), (6, -32601), (8, -32602)]
    assert "initialize" in replies[3]["error"]["message"]
    assert "session/new" in replies[5]["error"]["message"]
    assert replies[4]["result"]["agentCapabilities"]["loadSession"] is True
    assert replies[9]["result"]["sessionId"] and replies[9]["result"]["modes"]["currentModeId"] == "default"
    assert code == 0 and "Traceback" not in stderr


def test_a_second_prompt_while_one_runs_is_refused_and_the_first_goes_on(fake, tmp_path, workspace):
    from acp import RequestError, text_block

    import threading

    held = threading.Event()
    fake.enqueue(Reply(text="Slow answer.", hold=held))
    editor = Editor()

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:
            editor.updates.clear()
            editor.first_update.clear()
            first = asyncio.ensure_future(agent.prompt("first"))
            await editor.first_update.wait()  # the first turn has begun (its notices are said)
            with pytest.raises(RequestError) as refused:
                await agent.conn.prompt(session_id=agent.session, prompt=[text_block("second")])
            held.set()
            return await first, str(refused.value)

    stopped, refusal = run(dialogue())
    assert stopped == "end_turn" and "already answering a prompt" in refusal


def test_a_plan_approved_in_the_editors_dialog_leaves_plan_mode_and_the_picker_follows(fake, tmp_path, workspace):
    plan = json.dumps({"plan": "1. Write a.txt with hi."})
    fake.enqueue(Reply(tool_calls=[("p1", "exit_plan_mode", plan)]),
                 Reply(tool_calls=[("w1", "write_file", json.dumps({"path": "a.txt", "content": "hi\n"}))]),
                 Reply(text="Done."))
    editor = Editor(answers=["acceptEdits"])

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:
            await agent.conn.set_session_mode(session_id=agent.session, mode_id="plan")
            return await agent.prompt("plan, then write a.txt")

    assert run(dialogue()) == "end_turn"
    [(asked, options)] = editor.questions  # the plan; the write then ran unasked
    assert asked.content[0].content.text == "1. Write a.txt with hi."
    assert [o.option_id for o in options] == ["acceptEdits", "default", "keep"]
    assert [u.current_mode_id for u in editor.of("current_mode_update")] == ["acceptEdits"]
    assert (workspace / "a.txt").read_text() == "hi\n"


class TerminalEditor(Editor):
    """An editor that offers its terminals: it runs each command itself, with a variable of its own
    set, so the output shows whose terminal ran it."""

    def __init__(self, answers=None):
        super().__init__(answers)
        self.terminals: dict[str, dict] = {}
        self.released: list[str] = []

    def capabilities(self):
        from acp.schema import ClientCapabilities

        return ClientCapabilities(terminal=True)

    async def create_terminal(self, session_id, command, args=None, env=None, cwd=None, output_byte_limit=None, **kw):
        import os

        from acp.schema import CreateTerminalResponse

        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env={**os.environ, "RAN_IN": "the-editors-terminal"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = {"process": process, "command": [command, *(args or [])], "cwd": cwd}
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kw):
        from acp.schema import WaitForTerminalExitResponse

        entry = self.terminals[terminal_id]
        entry["output"] = (await entry["process"].stdout.read()).decode()
        return WaitForTerminalExitResponse(exit_code=await entry["process"].wait())

    async def terminal_output(self, session_id, terminal_id, **kw):
        from acp.schema import TerminalExitStatus, TerminalOutputResponse

        entry = self.terminals[terminal_id]
        return TerminalOutputResponse(output=entry.get("output", ""), truncated=False,
                                      exit_status=TerminalExitStatus(exit_code=entry["process"].returncode))

    async def kill_terminal(self, session_id, terminal_id, **kw):
        self.terminals[terminal_id]["process"].kill()

    async def release_terminal(self, session_id, terminal_id, **kw):
        self.released.append(terminal_id)


def test_without_a_sandbox_a_command_runs_in_the_editors_terminal_and_the_call_shows_it(fake, tmp_path, workspace):
    fake.enqueue(Reply(tool_calls=[bash("c1", 'echo "ran in: $RAN_IN"; exit 3')]), Reply(text="It ran."))
    editor = TerminalEditor(answers=["allow_once"])

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:  # MINI_LETTA_SANDBOX=off
            return await agent.prompt("run it")

    assert run(dialogue()) == "end_turn"
    [(terminal_id, entry)] = editor.terminals.items()
    assert entry["command"] == ["bash", "-c", 'echo "ran in: $RAN_IN"; exit 3'] and entry["cwd"] == str(workspace)
    assert editor.released == [terminal_id]  # given back once read
    # The call's updates embed the editor's terminal, and the model read what it printed and its code.
    shown = [block for u in editor.tool_updates("c1") for block in (u.content or []) if block.type == "terminal"]
    assert [block.terminal_id for block in shown] == [terminal_id]
    (result,) = [m["content"] for m in sent_messages(fake) if m["role"] == "tool"]
    assert "ran in: the-editors-terminal" in result and "[exit code 3]" in result


def test_rewind_lists_the_messages_and_rewind_n_puts_the_file_and_the_conversation_back(fake, tmp_path, workspace):
    write = json.dumps({"path": "made.txt", "content": "written by the model\n"})
    fake.enqueue(Reply(text="Noted."), Reply(tool_calls=[("w1", "write_file", write)]), Reply(text="Written."),
                 Reply(text="After the rewind."))
    editor = Editor(answers=["allow_once"])

    async def dialogue():
        async with Agent(fake, tmp_path / "home", workspace, editor) as agent:
            await agent.prompt("remember the plan")
            await agent.prompt("write made.txt")
            assert (workspace / "made.txt").exists()
            await agent.prompt("/rewind")
            listing = editor.of("agent_message_chunk")[-1].content.text
            await agent.prompt("/rewind 2")
            done = editor.of("agent_message_chunk")[-1].content.text
            await agent.prompt("go on")
            return listing, done

    listing, done = run(dialogue())
    assert "remember the plan" in listing and "write made.txt" in listing
    assert not (workspace / "made.txt").exists()
    assert "Restored 1 file" in done and "back to before message 2" in done
    # The next request holds the first exchange and the new message, nothing of the rewound one.
    texts = [m.get("content") or "" for m in sent_messages(fake)]
    assert any("remember the plan" in t for t in texts) and not any("write made.txt" in t for t in texts)
    assert texts[-1] == "go on" or "go on" in texts[-1]
