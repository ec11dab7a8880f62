"""Real MCP servers called end to end through the agent loop with a scripted model, approval included:
the registry's Python ``mcp-server-time`` and npm's ``server-everything`` over stdio, and an
``MCPServer`` of our own over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from agent_support import make_agent, script, tool_call
from mcp_support import (HttpServer, RecordingApprover, agents, agent_with_servers, config_file, everything_command, said, stdio,
                         time_server_command)  # noqa: F401 (agents: a fixture)
from mini_letta import config
from mini_letta.toolbox.permissions import settings_rules


def run_one_call(agents, workspace, servers, name, arguments, approver=None):
    approver = approver or RecordingApprover()
    provider = script([tool_call(name, **arguments), "done"], window=64_000)
    agent, _ = agent_with_servers(agents, workspace, servers, provider, approver=approver)
    # As build_agent does: the settings' permissions.allow rules.
    agent.toolbox.permissions.add(settings_rules(config.home(), workspace))
    result = agent.run_turn("use the tool")
    results = [m for m in agent.conversation.messages if m.role == "tool"]
    return agent, provider, approver, result, results


def test_mcp_server_time_answers_through_the_agent_loop_after_approval(agents, workspace):
    agent, provider, approver, _, results = run_one_call(
        agents, workspace, {"time": stdio(time_server_command())}, "mcp__time__get_current_time", {"timezone": "UTC"})
    sent = [spec.name for spec in provider.requests[0].tools]
    assert "mcp__time__get_current_time" in sent and "mcp__time__convert_time" in sent
    assert approver.asked == [("mcp__time__get_current_time",
                               'run the MCP tool get_current_time of the server time with the arguments '
                               '{"timezone": "UTC"}')]
    answer = json.loads(results[0].text)
    assert answer["timezone"] == "UTC" and answer["day_of_week"] and not results[0].is_error
    assert agent.mcp.rows()[0].status == "connected"


def test_a_refused_mcp_call_never_reaches_the_server(agents, workspace):
    _, _, approver, _, results = run_one_call(
        agents, workspace, {"time": stdio(time_server_command())}, "mcp__time__get_current_time",
        {"timezone": "UTC"}, approver=RecordingApprover(answer=False))
    assert len(approver.asked) == 1
    assert results[0].is_error and "declined" in results[0].text and "datetime" not in results[0].text


@pytest.mark.parametrize("rule", ["mcp__time__get_current_time", "mcp__time", "mcp__time__*"])
def test_an_allow_rule_for_the_tool_or_its_server_runs_it_without_asking(agents, workspace, rule):
    home = config.home()
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"permissions": {"allow": [rule]}}))
    agent, _, approver, _, results = run_one_call(
        agents, workspace, {"time": stdio(time_server_command())}, "mcp__time__get_current_time", {"timezone": "UTC"})
    assert approver.asked == [] and "datetime" in results[0].text
    # A whole server's rule covers its other tools too; a tool's own rule only that tool.
    assert agent.toolbox.permissions.allowed_by(tool_call("mcp__time__convert_time").tool_calls[0]) == (
        None if rule == "mcp__time__get_current_time" else rule)


def test_a_rule_for_another_server_does_not_allow_this_one(agents, workspace):
    home = config.home()
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"permissions": {"allow": ["mcp__tim", "mcp__timer"]}}))
    _, _, approver, _, _ = run_one_call(
        agents, workspace, {"time": stdio(time_server_command())}, "mcp__time__get_current_time", {"timezone": "UTC"})
    assert len(approver.asked) == 1


def test_node_server_everything_echoes_and_its_image_is_described_not_sent(agents, workspace):
    servers = {"everything": stdio(everything_command())}
    agent, _, approver, _, results = run_one_call(agents, workspace, servers, "mcp__everything__echo",
                                                  {"message": "hello from mini-letta"})
    assert approver.asked[0][0] == "mcp__everything__echo"
    assert results[0].text == "Echo: hello from mini-letta"
    agent.provider.enqueue(tool_call("mcp__everything__get-tiny-image"), "done")
    agent.run_turn("and the image")
    image = [m for m in agent.conversation.messages if m.role == "tool"][-1].text
    assert "[image: image/png," in image and "not shown to the model" in image and "iVBOR" not in image
    agent.provider.enqueue(tool_call("mcp__everything__get-resource-links", count=2), "done")
    agent.run_turn("and the links")
    links = [m for m in agent.conversation.messages if m.role == "tool"][-1].text
    assert links.count("[resource link: ") == 2 and "<demo://resource/" in links


def test_streamable_http_server_is_called_through_the_agent_loop(agents, workspace, tmp_path, monkeypatch):
    body = """
        from mcp.server.mcpserver import Context

        @server.tool(description="Add two integers.")
        def add(a: int, b: int, ctx: Context) -> str:
            return f"sum={a + b} for {ctx.headers.get('x-team')}"
    """
    monkeypatch.setenv("TEAM_NAME", "platform")
    with HttpServer(tmp_path, body) as http:
        _, provider, approver, _, results = run_one_call(
            agents, workspace, {"calc": {"type": "http", "url": http.url, "headers": {"X-Team": "${TEAM_NAME}"}}},
            "mcp__calc__add", {"a": 2, "b": 40})
    assert approver.asked[0][0] == "mcp__calc__add"
    assert results[0].text == "sum=42 for platform"  # the header, its variable expanded, reached the server
    assert provider.requests[0].tools[-1].name == "mcp__calc__add"


def _print_run(tmp_path, servers: dict[str, dict], *options: str, allow: tuple[str, ...] = ()):
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"permissions": {"allow": list(allow)}}))
    cfg = config_file(tmp_path, servers)
    env = {**os.environ, "MINI_LETTA_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "mini_letta", "-p", "call mcp__pid__hi {}", "--provider", "demo",
                           "--mcp-config", str(cfg), "--output-format", "json", *options],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def _pid_server(tmp_path, name: str):
    from mcp_support import python_server

    pid_file = tmp_path / f"{name}.pid"
    return stdio(python_server(tmp_path, name, f"""
        import os
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        @server.tool(description="Say hi.")
        def hi() -> str:
            return "hi from {name}"
    """)), pid_file


def test_print_mode_starts_the_servers_of_mcp_config_and_stops_them_at_exit(tmp_path):
    """``mini-letta -p --mcp-config FILE`` with the server allowed: it starts, its tool runs (print
    mode waits for it), and the process exits with no server left behind."""
    from mcp_support import process_gone

    server, pid_file = _pid_server(tmp_path, "pid")
    done = _print_run(tmp_path, {"pid": server}, allow=("mcp__pid",))
    assert done.returncode == 0, done.stderr
    assert "hi from pid" in json.loads(done.stdout)["result"]
    assert process_gone(int(pid_file.read_text()), seconds=0)
    assert "Traceback" not in done.stderr


def test_print_mode_starts_only_the_servers_whose_tools_may_run(tmp_path):
    """No one can approve a call in -p: a server no permissions.allow rule names (and no --yolo)
    is not started, and the run says so; --yolo starts them all."""
    (pid, pid_file), (other, other_file) = _pid_server(tmp_path, "pid"), _pid_server(tmp_path, "other")
    done = _print_run(tmp_path, {"pid": pid, "other": other}, allow=("mcp__pid__hi",))
    assert done.returncode == 0, done.stderr
    assert pid_file.exists() and not other_file.exists()
    assert "Not starting the MCP server other: in -p no one can approve their tools" in done.stderr
    pid_file.unlink()
    done = _print_run(tmp_path, {"pid": pid, "other": other}, "--yolo")
    assert done.returncode == 0, done.stderr
    assert pid_file.exists() and other_file.exists() and "Not starting" not in done.stderr


def test_a_tool_added_by_the_server_reaches_the_next_request(agents, workspace, tmp_path):
    """notifications/tools/list_changed: the tools are listed again and the new one is offered."""
    import time

    from mcp_support import python_server

    command = python_server(tmp_path, "dyn", """
        from mcp.server.mcpserver import Context

        def secret() -> str:
            return "the secret"

        @server.tool(description="Unlock one more tool.")
        async def unlock(ctx: Context) -> str:
            server.add_tool(secret, description="Tell the secret.")
            await ctx.session.send_tool_list_changed()
            return "unlocked"
    """)
    agent, provider, _, _, results = run_one_call(agents, workspace, {"dyn": stdio(command)}, "mcp__dyn__unlock", {})
    assert results[0].text == "unlocked"
    state = agent.mcp.manager.states["dyn"]
    deadline = time.monotonic() + 20
    while state.tools_version == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    provider.enqueue(tool_call("mcp__dyn__secret"), "told")
    agent.run_turn("and now?")
    request = provider.requests[2]
    assert [spec.name for spec in request.tools][-2:] == ["mcp__dyn__unlock", "mcp__dyn__secret"]
    assert [m.text for m in agent.conversation.messages if m.role == "tool"][-1] == "the secret"
    assert any("dyn changed its tools (1 added, 0 removed)" in n for n in said(agent))


NOTES_BODY = """
from pathlib import Path
from mcp.types import ToolAnnotations

@server.tool(description="Write a note into the project.")
def write_note(path: str, text: str) -> str:
    Path(path).write_text(text)
    return "written"

@server.tool(description="Read a note.", annotations=ToolAnnotations(read_only_hint=True))
def read_note(path: str) -> str:
    return Path(path).read_text()
"""


def test_what_an_mcp_tool_changes_is_checkpointed_and_undone_unless_it_is_read_only(agents, workspace, tmp_path):
    # A server writing files (the filesystem server does) is a command: the tree is snapshotted
    # around its approved calls, so /undo puts the file back. A read-only tool costs no snapshot.
    import os
    import subprocess

    from mini_letta.checkpoints import restore
    from mini_letta.checkpoints.recorder import Checkpoints
    from mini_letta.checkpoints.store import Store, folder_for
    from mini_letta.messages import Message
    from mcp_support import python_server

    env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x.invalid", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@x.invalid"}
    subprocess.run("git init -q && echo original > notes.txt && git add -A && git commit -qm one", shell=True,
                   cwd=workspace, env=env, check=True)
    note = str(workspace / "notes.txt")
    provider = script([tool_call("mcp__notes__read_note", path=note), tool_call("mcp__notes__write_note", path=note,
                                                                                text="changed by the server\n"),
                       "done"], window=64_000)
    agent, _ = agent_with_servers(agents, workspace, {"notes": stdio(python_server(tmp_path, "notes", NOTES_BODY))}, provider, approver=RecordingApprover())
    session = tmp_path / "s.jsonl"
    notices: list[str] = []
    checkpoints = Checkpoints(workspace, agent.toolbox.ws.resolve, lambda: session, notices.append)
    agent.toolbox.watch_changes = checkpoints.watch
    message = Message.user("change the note")
    checkpoints.begin(message)
    agent.run_turn("change the note")
    assert (workspace / "notes.txt").read_text() == "changed by the server\n"
    entries = Store(folder_for(session)).entries()
    assert [e["t"] for e in entries if e["t"] == "snapshot"] == ["snapshot"]  # the write only, not the read
    assert [(e["t"], e["path"], e["by"]) for e in entries if e["t"] in ("before", "after")] == [
        ("before", "notes.txt", "mcp__notes__write_note"), ("after", "notes.txt", "mcp__notes__write_note")]
    store = checkpoints.store()
    plan = restore.plan(store, workspace, message.id)
    assert restore.apply(store, workspace, plan.items) == []
    assert (workspace / "notes.txt").read_text() == "original\n" and notices == []


def test_a_tool_redefined_by_its_server_is_registered_as_it_now_is(agents, workspace, tmp_path):
    # tools/list_changed with the same name: a tool no longer marked read-only is snapshotted
    # around its calls from then on, and the model gets its new description.
    import time
    from contextlib import nullcontext

    from mcp_support import python_server

    command = python_server(tmp_path, "dyn", """
        from mcp.server.mcpserver import Context
        from mcp.types import ToolAnnotations

        def edit(path: str) -> str:
            return "edited " + path

        server.add_tool(edit, description="Look at a file.", annotations=ToolAnnotations(read_only_hint=True))

        @server.tool(description="Let edit change files.")
        async def unlock(ctx: Context) -> str:
            server.remove_tool("edit")
            server.add_tool(edit, description="Change a file.")
            await ctx.session.send_tool_list_changed()
            return "unlocked"
    """)
    provider = script([tool_call("mcp__dyn__edit", path="a"), tool_call("mcp__dyn__unlock"), "ok",
                       tool_call("mcp__dyn__edit", path="b"), "done"], window=64_000)
    agent, _ = agent_with_servers(agents, workspace, {"dyn": stdio(command)}, provider, approver=RecordingApprover())
    watched = []
    agent.toolbox.watch_changes = lambda name, args, changes_tree: (watched.append((name, changes_tree)),
                                                                    nullcontext())[1]
    agent.run_turn("look, then unlock")
    state = agent.mcp.manager.states["dyn"]
    deadline = time.monotonic() + 20
    while state.tools_version == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    agent.run_turn("now edit")
    assert [(name, tree) for name, tree in watched if name == "mcp__dyn__edit"] == [
        ("mcp__dyn__edit", False), ("mcp__dyn__edit", True)]
    sent = {spec.name: spec.description for spec in provider.requests[-1].tools}
    assert sent["mcp__dyn__edit"] == "Change a file."


SSE_BODY = """
    from mcp.server.mcpserver import Context

    @server.tool(description="Hangs.")
    async def hang() -> str:
        import anyio
        await anyio.sleep(3600)
        return "never"

    @server.tool(description="Multiply two integers.")
    def times(a: int, b: int, ctx: Context) -> str:
        return f"product={a * b} for {ctx.headers.get('x-api-key')}"
"""


def test_sse_server_is_called_through_the_agent_loop_with_its_headers(agents, workspace, tmp_path, monkeypatch):
    """Claude Code's {"type": "sse"}: the older HTTP transport, headers and their ${VAR}s included."""
    monkeypatch.setenv("WIKI_KEY", "k-123")
    with HttpServer(tmp_path, SSE_BODY, "sse") as sse:
        agent, provider, approver, _, results = run_one_call(
            agents, workspace, {"wiki": {"type": "sse", "url": sse.url, "headers": {"X-Api-Key": "${WIKI_KEY}"}}},
            "mcp__wiki__times", {"a": 6, "b": 7})
        row = agent.mcp.rows()[0]
    assert approver.asked[0][0] == "mcp__wiki__times"
    assert results[0].text == "product=42 for k-123" and not results[0].is_error
    assert [spec.name for spec in provider.requests[0].tools][-2:] == ["mcp__wiki__hang", "mcp__wiki__times"]
    assert (row.name, row.status, row.tools) == ("wiki", "connected", 2)


def test_an_sse_server_times_out_like_the_others_and_its_loss_fails_the_call_clearly(agents, workspace, tmp_path):
    with HttpServer(tmp_path, SSE_BODY, "sse") as sse:
        provider = script([tool_call("mcp__wiki__hang"), tool_call("mcp__wiki__times", a=1, b=2), "first",
                           tool_call("mcp__wiki__times", a=3, b=4), "second"], window=64_000)
        agent, _ = agent_with_servers(agents, workspace, {"wiki": {"type": "sse", "url": sse.url, "tool_timeout_sec": 2}}, provider, approver=RecordingApprover())
        agent.run_turn("one")
    assert agent.run_turn("two").text == "second"  # the server is gone now
    hung, first, second = [m for m in agent.conversation.messages if m.role == "tool"]
    assert hung.is_error and "'wiki' did not answer within 2 s (tool_timeout_sec" in hung.text
    assert first.text == "product=2 for None"  # the session outlived the timed-out call
    assert second.is_error and second.text.startswith("mcp__wiki__times failed: the MCP server 'wiki'")
    assert "the connection was lost; restart mini-letta (or /trust) to connect again." in second.text
    assert agent.mcp.rows()[0].status == "failed"


def test_an_sse_server_that_is_down_is_one_line_in_mcp_and_the_agent_works(agents, workspace):
    import io

    from rich.console import Console

    from mcp_support import free_port
    from mini_letta.repl.mcp_view import mcp_view

    url = f"http://127.0.0.1:{free_port()}/sse"  # nothing listens there
    agent, tools = agent_with_servers(agents, workspace, {"wiki": {"type": "sse", "url": url}}, script(["still here"], window=64_000))
    (notice,) = [n for n in said(agent) if "wiki" in n]
    log = config.home() / "mcp-logs" / "sdk.log"  # where the SDK logs a URL server's failures
    assert notice == f"The MCP server 'wiki' did not start: All connection attempts failed (at {url}). Its log: {log}."
    out = io.StringIO()
    Console(file=out, width=200).print(mcp_view(tools))
    lines = out.getvalue().splitlines()
    assert lines[1].split() == ["wiki", "failed", "0", "0"]
    assert lines[2].strip() == f"All connection attempts failed (at {url}); log: {log}"
    assert f"The MCP server 'wiki' ({url}) failed" in log.read_text()
    assert agent.run_turn("hello").text == "still here"
    assert [spec.name for spec in agent.provider.requests[0].tools if spec.name.startswith("mcp__")] == []
