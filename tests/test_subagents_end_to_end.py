"""Subagents against the fake OpenAI server (its own tokenizer, its window enforced): only the
report reaches the parent, a child compacts inside a 4k window and finishes, and each way a
child can end badly is one clear message that loses nothing of the parent's session."""

from __future__ import annotations

import json
import threading

import pytest
from fakes import Fault, Reply
from subagent_support import TeamServer, call, first_user_text, tool_results

from mini_letta import config
from mini_letta.loop.agent import TurnInterrupted
from mini_letta.app import Options, build_agent
from mini_letta.hooks import trust
from mini_letta.notices import Notices
from mini_letta.providers import create_provider
from mini_letta.sessions.store import load_session
from mini_letta.subagents.transcript import read_transcripts
from mini_letta.toolbox import approve_all

FILES = 6
TASK_PROMPT = "Read every file named audit_N.py in the workspace and report what each one defines."


@pytest.fixture
def ws(workspace):
    for n in range(FILES):
        body = "".join(f"def check_{n}_{i}(value):\n    return value + {i}  # AUDIT-LINE-{n}\n" for i in range(40))
        (workspace / f"audit_{n}.py").write_text(body)
    return workspace


def agent_for(server, ws, **options):
    provider = create_provider("openai", options.pop("model", "gpt-test"), base_url=server.base_url)
    return build_agent(Options(workspace=ws, headless=True, **options), approve_all, provider=provider)


def delegate(subagent_type="explore", prompt=TASK_PROMPT, description="audit the files"):
    return call("task", description=description, prompt=prompt, subagent_type=subagent_type)


def parent_delegates_once(final="All files audited.", task=None):
    """The parent's model: one ``task`` call (``task``, else the default ``delegate()``), then ``final``."""
    def parent(body, step):
        if step == 0:
            return Reply(tool_calls=[task or delegate()])
        return Reply(text=final)
    return parent


def child_reads_then_reports(body, step):
    if step < FILES:
        return Reply(tool_calls=[call("read_file", path=f"audit_{step}.py")])
    return Reply(text=f"REPORT: {FILES} files, each defines 40 check_ functions. No problems found.")


def test_the_parents_request_after_a_subagent_holds_its_report_and_none_of_its_reads(ws):
    with TeamServer(parent_delegates_once(), child_reads_then_reports) as server:
        agent = agent_for(server, ws)
        result = agent.run_turn("Audit the package.")
    assert result.text == "All files audited."
    after = json.dumps(server.parent_requests[1])
    assert "REPORT: 6 files, each defines 40 check_ functions." in after
    assert "AUDIT-LINE-" not in after
    child = server.child_requests
    assert len(child) == FILES + 1 and "AUDIT-LINE-5" in json.dumps(child[-1])
    # A fresh conversation: its own system prompt, the brief, none of the parent's history.
    assert first_user_text(child[0]) == TASK_PROMPT
    assert "Audit the package." not in json.dumps(child[0])
    assert [tool["function"]["name"] for tool in child[0]["tools"]] == ["read_file", "grep", "glob"]
    run = agent.subagents.runs[0]
    assert (run.agent, run.status, run.steps) == ("explore", "done", FILES + 1)
    assert run.tokens > 0 and run.window == agent.budget.window


def test_the_subagents_transcript_is_in_the_session_file_but_not_in_a_resumed_context(ws):
    with TeamServer(parent_delegates_once(), child_reads_then_reports) as server:
        agent = agent_for(server, ws)
        agent.run_turn("Audit the package.")
    path = agent.session.path
    loaded = load_session(path)
    assert "AUDIT-LINE-" not in json.dumps([m.to_dict() for m in loaded.messages_in_context])
    assert "REPORT: 6 files" in json.dumps([m.to_dict() for m in loaded.messages_in_context])
    (entries,) = read_transcripts(path).values()
    assert entries[0]["agent"] == "explore" and entries[-1]["type"] == "end"
    assert entries[-1]["status"] == "done" and entries[-1]["steps"] == FILES + 1
    assert sum(1 for e in entries if e["type"] == "message") == 2 * FILES + 2


def test_a_subagent_that_compacts_inside_a_4k_window_finishes(ws):
    with TeamServer(parent_delegates_once(), child_reads_then_reports) as server:
        server.as_llama_cpp(4096, supports_tools=True)
        agent = agent_for(server, ws, model="SmolLM2-135M-Instruct.Q4_1.gguf")
        result = agent.run_turn("Audit the package.")
        rejections = server.rejections
    assert agent.budget.window == 4096
    run = agent.subagents.runs[0]
    assert run.status == "done" and run.compactions >= 1, run
    assert rejections == 0
    assert result.text == "All files audited."
    assert "REPORT: 6 files" in json.dumps(server.parent_requests[-1])


def test_a_failing_provider_is_one_error_result_and_the_parent_goes_on(ws):
    def child(body, step):
        return Fault(400, "the model is overloaded")

    def parent(body, step):
        if step == 0:
            return Reply(tool_calls=[delegate()])
        return Reply(text="The subagent failed; I will read the files myself.")

    with TeamServer(parent, child) as server:
        agent = agent_for(server, ws)
        result = agent.run_turn("Audit the package.")
    (outcome,) = tool_results(server.parent_requests[1])
    assert outcome.startswith("The subagent explore (audit the files) failed after 0 steps: ")
    assert "overloaded" in outcome and "Nothing of this conversation was lost" in outcome
    assert result.text == "The subagent failed; I will read the files myself."
    assert [m.role for m in agent.conversation.messages] == ["user", "assistant", "tool", "assistant"]


def test_the_step_limit_is_said_and_the_parent_gets_the_last_words(ws, home_agents):
    home_agents("short.md", "---\nname: short\ndescription: reads two files at most\ntools: Read\nmaxTurns: 2\n"
                            "---\nYou read files, working for another agent.\n")

    def parent(body, step):
        if step == 0:
            return Reply(tool_calls=[delegate("short")])
        return Reply(text="ok")

    with TeamServer(parent, child_reads_then_reports) as server:
        agent = agent_for(server, ws)
        agent.run_turn("Audit the package.")
    (outcome,) = tool_results(server.parent_requests[1])
    assert outcome == ("[The subagent short (audit the files) stopped at its step limit (2 steps) before it "
                       "finished. It wrote no report.]")
    assert len(server.child_requests) == 2
    # Nobody is asked to go on in a subagent, so the loop's "send a message to go on" is not said.
    assert not [text for text in agent.say.__self__.take() if "go on" in text]


def test_an_unknown_type_and_a_bad_agent_file_each_give_one_clear_message(ws, home_agents):
    home_agents("broken.md", "---\nname: broken\ndescription: Use it when: always\n---\nBody\n")

    def parent(body, step):
        if step == 0:
            return Reply(tool_calls=[delegate("broken")])
        return Reply(text="ok")

    with TeamServer(parent, child_reads_then_reports) as server:
        agent = agent_for(server, ws)
        notices = agent.say.__self__.take()
        agent.run_turn("Audit the package.")
    assert [n for n in notices if "broken.md" in n] == [
        f"Skipping agent file {config.home() / 'agents' / 'broken.md'}, line 3: the front matter is not valid "
        'YAML: mapping values are not allowed here (quote a value that holds ": ").']
    (outcome,) = tool_results(server.parent_requests[1])
    assert outcome == "There is no agent named 'broken'; subagent_type is one of: explore, general."
    assert server.child_requests == []


def test_ctrl_c_during_a_subagent_stops_it_and_the_parent_turn_keeps_its_history(ws):
    started = threading.Event()

    def child(body, step):
        started.set()
        return Reply(text="never sent", stall=30)

    with TeamServer(parent_delegates_once(), child) as server:
        agent = agent_for(server, ws)
        import _thread

        timer = threading.Thread(target=lambda: started.wait(10) and _thread.interrupt_main())
        timer.start()
        with pytest.raises(TurnInterrupted):
            agent.run_turn("Audit the package.")
        timer.join()
    messages = agent.conversation.messages
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert messages[2].text == ("The subagent explore (audit the files) was stopped after 0 steps.\n"
                                "Interrupted by the user.")
    assert agent.subagents.runs[0].status == "interrupted"
    saved = load_session(agent.session.path)
    assert [m.role for m in saved.messages_in_context] == ["user", "assistant", "tool"]


def test_ctrl_c_after_some_steps_keeps_the_subagents_work_in_the_session_file(ws):
    started = threading.Event()

    def child(body, step):
        if step < 2:
            return Reply(tool_calls=[call("read_file", path=f"audit_{step}.py")])
        started.set()
        return Reply(text="never sent", stall=30)

    with TeamServer(parent_delegates_once(), child) as server:
        agent = agent_for(server, ws)
        import _thread

        timer = threading.Thread(target=lambda: started.wait(10) and _thread.interrupt_main())
        timer.start()
        with pytest.raises(TurnInterrupted):
            agent.run_turn("Audit the package.")
        timer.join()
    (run,) = agent.subagents.runs
    assert run.status == "interrupted" and run.steps == 2
    assert agent.conversation.messages[-1].text == ("The subagent explore (audit the files) was stopped after 2 steps.\n"
                                                    "Interrupted by the user.")
    assert agent.spend.calls == 1 + 2  # the child's two replies are paid for in the parent's spend
    (entries,) = read_transcripts(agent.session.path).values()
    results = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "tool"]
    assert len(results) == 2 and "AUDIT-LINE-1" in json.dumps(results[1])
    assert entries[-1]["type"] == "end" and entries[-1]["status"] == "interrupted" and entries[-1]["steps"] == 2
    saved = load_session(agent.session.path)
    assert [m.role for m in saved.messages_in_context] == ["user", "assistant", "tool"]


def test_read_only_task_calls_of_one_reply_run_side_by_side(ws):
    both_started = threading.Barrier(2, timeout=10)

    def parent(body, step):
        if step == 0:
            return Reply(tool_calls=[delegate(prompt=f"Read audit_{n}.py and report.", description=f"file {n}")
                                     for n in range(2)])
        return Reply(text="ok")

    def child(body, step):
        if step == 0:
            both_started.wait()  # breaks (an error reply) unless the other child asks at the same time
            return Reply(tool_calls=[call("read_file", path=first_user_text(body).split()[1])])
        return Reply(text=f"REPORT on {first_user_text(body).split()[1]}")

    with TeamServer(parent, child) as server:
        agent = agent_for(server, ws)
        agent.run_turn("Audit two files.")
    results = tool_results(server.parent_requests[1])
    assert results == ["REPORT on audit_0.py", "REPORT on audit_1.py"]


def test_a_writer_type_runs_alone_with_the_parents_tools_but_not_task(ws):
    parent = parent_delegates_once("ok", delegate("general", prompt="Write notes.txt", description="write notes"))

    def child(body, step):
        if step == 0:
            return Reply(tool_calls=[call("write_file", path="notes.txt", content="written by a subagent\n")])
        return Reply(text="REPORT: wrote notes.txt")

    with TeamServer(parent, child) as server:
        agent = agent_for(server, ws)
        agent.run_turn("Write notes.")
    names = [tool["function"]["name"] for tool in server.child_requests[0]["tools"]]
    assert "task" not in names and {"bash", "write_file", "edit_file"} <= set(names)
    assert (ws / "notes.txt").read_text() == "written by a subagent\n"
    assert tool_results(server.parent_requests[1]) == ["REPORT: wrote notes.txt"]


def test_a_subagents_spend_counts_in_the_parents(ws):
    with TeamServer(parent_delegates_once(), child_reads_then_reports) as server:
        agent = agent_for(server, ws)
        result = agent.run_turn("Audit the package.")
    run = agent.subagents.runs[0]
    parent_only = sum(1 for _ in server.parent_requests)
    assert agent.spend.calls == parent_only + run.steps
    assert result.spend.calls == agent.spend.calls
    assert agent.spend.usage.prompt_tokens + agent.spend.usage.output_tokens > run.tokens


@pytest.fixture
def home_agents():
    def write(name, text):
        folder = config.home() / "agents"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return write


def test_workspace_agent_files_need_trust(ws):
    folder = ws / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "rev.md").write_text("---\nname: rev\ndescription: reviews\ntools: Read, Grep\n---\nYou review.\n")
    with TeamServer(parent_delegates_once(), child_reads_then_reports) as server:
        untrusted = agent_for(server, ws)
        assert "rev" not in untrusted.subagents.catalog.types
        trust(config.home(), ws)
        trusted = agent_for(server, ws)
        assert "rev" in trusted.subagents.catalog.types
        (spec,) = [s for s in trusted.toolbox.specs() if s.name == "task"]
        assert "- rev: reviews" in spec.description


def test_print_mode_json_lists_each_subagent_and_rewind_undoes_what_it_wrote(tmp_path, ws):
    from fault_support import cli

    def parent(body, step):
        if not tool_results(body):
            return Reply(tool_calls=[delegate("general", prompt="Write notes.txt", description="write notes")])
        return Reply(text="Notes written.")

    def child(body, step):
        if not tool_results(body):
            return Reply(tool_calls=[call("write_file", path="notes.txt", content="by a subagent\n")])
        return Reply(text="REPORT: wrote notes.txt")

    home = tmp_path / "cli-home"
    with TeamServer(parent, child) as server:
        done = cli(["-p", "Write notes.", "--output-format", "json", "--yolo", "--model", "gpt-test"],
                   home=home, cwd=ws, env={"OPENAI_BASE_URL": server.base_url})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["result"] == "Notes written."
    (run,) = result["subagents"]
    assert {key: run[key] for key in ("agent", "description", "status", "steps", "compactions")} == {
        "agent": "general", "description": "write notes", "status": "done", "steps": 2, "compactions": 0}
    assert run["tokens"] > 0 and run["window"] == result["context"]["window"]
    assert (ws / "notes.txt").read_text() == "by a subagent\n"
    listing = cli(["rewind", "--list"], home=home, cwd=ws)
    assert "1 file changed since: notes.txt" in listing.stdout, listing.stdout
    undone = cli(["rewind", "--to", "1", "--code-only"], home=home, cwd=ws)
    assert undone.returncode == 0, undone.stderr
    assert not (ws / "notes.txt").exists()


def test_a_subagent_whose_file_names_task_may_delegate_but_not_deeper_than_two_levels(ws, home_agents):
    home_agents("lead.md", "---\nname: lead\ndescription: splits work\ntools: Read, Task\n---\n"
                           "You split the work, working for another agent.\n")

    def parent(body, step):
        return Reply(tool_calls=[delegate("lead")]) if step == 0 else Reply(text="ok")

    def child(body, step):
        if first_user_text(body) == TASK_PROMPT:
            return Reply(tool_calls=[delegate("lead", prompt="deeper")]) if step == 0 else Reply(text="REPORT")
        return Reply(text="REPORT from below")

    with TeamServer(parent, child) as server:
        agent = agent_for(server, ws)
        agent.run_turn("Go.")
    tools = {first_user_text(body): [tool["function"]["name"] for tool in body["tools"]]
             for body in server.child_requests}
    assert tools == {TASK_PROMPT: ["read_file", "task"], "deeper": ["read_file"]}
    assert tool_results(server.child_requests[-1]) == ["REPORT from below"]
    assert [run.status for run in agent.subagents.runs] == ["done"]


def test_cost_and_context_count_the_subagents_beside_the_parents_context(ws):
    from rich.console import Console

    from mini_letta.cost import dollars
    from mini_letta.repl.views import context_view, cost_view

    with TeamServer(parent_delegates_once(), child_reads_then_reports) as server:
        agent = agent_for(server, ws, model="gpt-4o")
        agent.run_turn("Audit the package.")
    run = agent.subagents.runs[0]
    assert run.cost_usd is not None and 0 < run.cost_usd < agent.spend.usd
    console = Console(width=200, record=True)
    console.print(cost_view(agent))
    console.print(context_view(agent))
    shown = console.export_text()
    line = (f"1 subagent run: 7 steps, {run.tokens:,} tokens in their own windows (not in this context), "
            f"0 compactions, {dollars(run.cost_usd)}.")
    assert f"Counted above: {line}" in shown
    assert f"\n{line}" in shown
    assert f"Cost: {dollars(agent.spend.usd)} over {agent.spend.calls} calls" in shown


def _running(marker: str) -> bool:
    from pathlib import Path

    for proc in Path("/proc").iterdir():
        try:
            if marker in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                return True
        except OSError:
            continue
    return False


def test_a_subagents_background_commands_end_with_it_and_its_report_says_so(ws):
    marker = "sleep 313.25"  # a command line no other process has
    parent = parent_delegates_once("ok", delegate("general", prompt="Start the watcher.", description="start it"))

    def child(body, step):
        if step == 0:
            return Reply(tool_calls=[call("bash", command=marker, run_in_background=True)])
        assert _running(marker)  # it ran while the subagent worked
        return Reply(text="REPORT: started")

    with TeamServer(parent, child) as server:
        agent = agent_for(server, ws)
        agent.run_turn("Start the watcher.")
    assert tool_results(server.parent_requests[1]) == [
        "REPORT: started\n[1 background command the subagent started was stopped when it ended]"]
    assert not _running(marker)  # no one could have read or stopped it after the subagent ended


def test_a_subagent_that_repeats_a_failing_call_says_so_in_its_result(ws):
    def child(body, step):
        return Reply(tool_calls=[("call_same_%d" % step, "read_file", json.dumps({"path": "missing.py"}))])

    with TeamServer(parent_delegates_once(), child) as server:
        agent = agent_for(server, ws)
        agent.run_turn("Audit the package.")
    (outcome,) = tool_results(server.parent_requests[1])
    assert outcome == "[The subagent's work ended early: it repeated the same failing tool call 3 times]"
    assert len(server.child_requests) == 3


def test_a_long_report_is_cut_to_the_room_left_and_says_where(ws):
    lines = ["Answer: every file is fine."] + [f"detail {n}: " + "x" * 80 for n in range(3_000)] + ["End of report."]

    def child(body, step):
        return Reply(text="\n".join(lines), chunk_size=4_000)

    with TeamServer(parent_delegates_once(), child) as server:
        agent = agent_for(server, ws)
        agent.run_turn("Audit the package.")
        rejections = server.rejections
    (outcome,) = tool_results(server.parent_requests[1])
    assert outcome.startswith("Answer: every file is fine.\n") and outcome.rstrip().endswith("End of report.")
    assert "[report cut here to fit the room left in the context: lines " in outcome
    # Cut to the room by the report's own rule, so the toolbox's and the loop's caps found nothing to cut.
    assert len(outcome) < len("\n".join(lines)) // 4 and "[output cut" not in outcome
    assert rejections == 0


def test_the_demo_model_delegates_offline(ws):
    from mini_letta.providers.demo import DemoProvider

    agent = build_agent(Options(workspace=ws, headless=True), approve_all, provider=DemoProvider())
    result = agent.run_turn("delegate grep AUDIT-LINE-3 audit_3.py")
    (run,) = agent.subagents.runs
    assert (run.agent, run.status, run.steps) == ("explore", "done", 2)
    (report,) = [m.text for m in agent.conversation.messages if m.role == "tool"]
    assert report.startswith("`grep` returned ") and "AUDIT-LINE-3" in report
    assert result.text.startswith("`task` returned ")
    # grep's 40 matching lines stayed in the subagent's context: the parent holds the report's line.
    assert sum(m.text.count("AUDIT-LINE-3") for m in agent.conversation.messages) <= 3


def test_a_childs_notice_reaches_the_parents_channel_named_and_before_the_parents_turn_ends(ws):
    """Issue 33 item 4: a child says into its parent's run, prefixed with its type, while it works."""
    seen_by_parent_step: list[list[str]] = []
    channel = Notices()

    def parent(body, step):
        if step == 0:
            return Reply(tool_calls=[delegate("explore")])
        seen_by_parent_step.append([text for text in channel.take() if "empty reply" in text])
        return Reply(text="ok")

    def child(body, step):
        return Reply(text="")  # the loop says "The model returned an empty reply."

    with TeamServer(parent, child) as server:
        agent = agent_for(server, ws, notices=channel)
        agent.run_turn("Audit the package.")
    assert seen_by_parent_step == [["Subagent explore: The model returned an empty reply."]]
