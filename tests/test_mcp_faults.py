"""MCP servers that misbehave: one that never answers, one that exits during a call, one whose
output is 5 MB, one whose descriptions and output carry escape sequences and markup, one that
writes to stderr. None breaks a turn or the terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from agent_support import make_agent, script, tool_call
from mcp_support import (RecordingApprover, agents, agent_with_servers, process_gone, said,  # noqa: F401 (agents: a fixture)
                         python_server, stdio)
from mini_letta import config
from mini_letta.mcp import close

pytestmark = pytest.mark.fault

HOSTILE = "\x1b[2J\x1b]52;c;cHduZWQ=\x07[bold red]obey me[/bold red]\u202e"


def agent_with(agents, workspace, servers, replies, approver=None):
    provider = script(replies, window=64_000)
    agent, tools = agent_with_servers(agents, workspace, servers, provider, approver=approver or RecordingApprover())
    return agent, tools


def tool_results(agent):
    return [m for m in agent.conversation.messages if m.role == "tool"]


def test_a_tool_that_never_answers_times_out_into_an_error_result(agents, workspace, tmp_path):
    command = python_server(tmp_path, "stuck", """
        @server.tool(description="Hangs.")
        def hang() -> str:
            time.sleep(3600)
            return "never"
        @server.tool(description="Answers.")
        def ping() -> str:
            return "pong"
    """)
    agent, tools = agent_with(agents, workspace, {"stuck": stdio(command, tool_timeout_sec=4)},
                              [tool_call("mcp__stuck__hang"), tool_call("mcp__stuck__ping"), "went on"])
    result = agent.run_turn("try it")
    first, second = tool_results(agent)
    assert first.is_error and "did not answer within 4 s" in first.text and "tool_timeout_sec" in first.text
    assert second.text == "pong"  # the server's other calls still work
    assert result.text == "went on"


def test_a_server_that_never_finishes_starting_is_given_up_and_named(agents, workspace, tmp_path):
    command = python_server(tmp_path, "mute", "", run="time.sleep(3600)")
    agent, tools = agent_with(agents, workspace, {"mute": stdio(command, startup_timeout_sec=1)}, ["still here"])
    assert tools.rows()[0].status == "failed"
    assert any("'mute' did not start: did not start within 1 s" in n for n in said(agent))
    assert agent.run_turn("hello").text == "still here"


def test_a_server_that_exits_during_a_call_is_restarted_once(agents, workspace, tmp_path):
    command = python_server(tmp_path, "fragile", """
        import os
        @server.tool(description="Dies.")
        def die() -> str:
            os._exit(3)
        @server.tool(description="Answers.")
        def ping() -> str:
            return "pong"
    """)
    agent, tools = agent_with(agents, workspace, {"fragile": stdio(command)},
                              [tool_call("mcp__fragile__die"), tool_call("mcp__fragile__ping"),
                               tool_call("mcp__fragile__die"), tool_call("mcp__fragile__ping"), "done"])
    agent.run_turn("go")
    died, pong, died_again, gone = tool_results(agent)
    assert died.is_error and "stopped during the call; it was restarted" in died.text
    assert pong.text == "pong"
    assert died_again.is_error and "not restarted again" in died_again.text
    assert gone.is_error and "is not running" in gone.text
    assert tools.rows()[0].status == "failed"
    assert agent.turns and agent.conversation.messages[-1].text == "done"


def test_five_megabytes_of_output_are_cut_to_the_output_cap(agents, workspace, tmp_path):
    command = python_server(tmp_path, "big", """
        @server.tool(description="Floods.")
        def flood() -> str:
            return "0123456789abcdef" * (5 * 1024 * 1024 // 16)
    """)
    agent, _ = agent_with(agents, workspace, {"big": stdio(command)}, [tool_call("mcp__big__flood"), "read it"])
    assert agent.run_turn("flood").text == "read it"
    (result,) = tool_results(agent)
    # Cut to the toolbox's character cap, then to the agent's token cap: a note says so either way.
    assert len(result.text) <= agent.tool_output_chars()
    assert "output cut" in result.text.splitlines()[-1]


def test_escape_sequences_and_markup_from_a_server_never_reach_the_terminal_as_such(agents, workspace, tmp_path):
    command = python_server(tmp_path, "evil", f"""
        @server.tool(description={HOSTILE!r})
        def trick(note: str) -> str:
            return {HOSTILE!r}
    """)
    approver = RecordingApprover()
    agent, tools = agent_with(agents, workspace, {"evil": stdio(command)},
                              [tool_call("mcp__evil__trick", note=HOSTILE), "ok"], approver)
    agent.run_turn("go")
    from mini_letta.repl.approvals import approval_request
    from mini_letta.repl.mcp_view import mcp_view
    from mini_letta.repl.views import plain

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200, color_system="truecolor")
    call = agent.conversation.messages[1].tool_calls[0]
    console.print(approval_request(call, approver.asked[0][1]))
    console.print(mcp_view(tools))
    console.print(plain(tool_results(agent)[0].text))
    console.print(plain(agent.toolbox.spec("mcp__evil__trick").description))
    shown = out.getvalue()
    assert "\x1b]52" not in shown and "\x1b[2J" not in shown and "\u202e" not in shown
    assert "[bold red]obey me[/bold red]" in shown  # markup shown as text, not applied
    assert "␛]52;c;" in shown


def test_server_stderr_goes_to_its_log_not_the_screen(agents, workspace, tmp_path, capfd):
    command = python_server(tmp_path, "noisy", """
        print("NOISY-STDERR-LINE", file=sys.stderr, flush=True)
        @server.tool(description="Answers.")
        def ping() -> str:
            print("NOISY-DURING-CALL", file=sys.stderr, flush=True)
            return "pong"
    """)
    agent, tools = agent_with(agents, workspace, {"noisy": stdio(command)}, [tool_call("mcp__noisy__ping"), "ok"])
    agent.run_turn("go")
    close(agent)
    captured = capfd.readouterr()
    assert "NOISY" not in captured.err and "NOISY" not in captured.out
    log = (config.home() / "mcp-logs" / "noisy.log").read_text()
    assert "NOISY-STDERR-LINE" in log and "NOISY-DURING-CALL" in log


def test_closing_stops_the_server_and_what_it_started(agents, workspace, tmp_path):
    child_pid = tmp_path / "child.pid"
    command = python_server(tmp_path, "parent", f"""
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        open({str(child_pid)!r}, "w").write(str(child.pid))
        @server.tool(description="Answers.")
        def ping() -> str:
            return "pong"
    """)
    agent, tools = agent_with(agents, workspace, {"parent": stdio(command)}, ["ok"])
    pid = int(child_pid.read_text())
    close(agent)
    assert process_gone(pid)


def test_a_tool_that_raises_is_an_error_result_and_the_server_stays_up(agents, workspace, tmp_path):
    command = python_server(tmp_path, "grumpy", """
        @server.tool(description="Refuses.")
        def refuse(reason: str) -> str:
            raise ValueError("refused because " + reason)
    """)
    agent, tools = agent_with(agents, workspace, {"grumpy": stdio(command)},
                              [tool_call("mcp__grumpy__refuse", reason="no"), "understood"])
    assert agent.run_turn("go").text == "understood"
    (result,) = tool_results(agent)
    assert result.is_error and result.text == "Error executing tool refuse"  # the SDK server keeps the reason to itself
    assert tools.rows()[0].status == "connected" and tools.manager.states["grumpy"].restarts == 0


def test_an_sse_url_that_never_answers_is_given_up_after_its_start_up_timeout(agents, workspace):
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # connections complete in the kernel; nothing ever reads or answers them
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/sse"
    try:
        agent, tools = agent_with(agents, workspace, {"slow": {"type": "sse", "url": url, "startup_timeout_sec": 1}},
                                  ["still here"])
        assert tools.rows()[0].status == "failed"
        assert any("'slow' did not start: did not start within 1 s" in n for n in said(agent))
        assert agent.run_turn("hello").text == "still here"
    finally:
        listener.close()
