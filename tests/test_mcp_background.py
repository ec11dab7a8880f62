"""MCP servers connect in the background: ``build_agent`` returns while a server is still starting,
the status bar says how many are connected, and a server's tools are offered from the first request
after it connected. The servers are real (``MCPServer`` over stdio); a "gated" one does not answer
until the test creates its gate file, so nothing depends on timing."""

from __future__ import annotations

import json

from agent_support import script, tool_call
from mcp_support import config_file, mcp_until, python_server, said, stdio

from mini_letta.app import Options, build_agent


def _server(tmp_path, name: str, gate=None, tools: int = 1) -> dict:
    wait = f"""
        import os
        while not os.path.exists({str(gate)!r}):
            time.sleep(0.05)
    """ if gate is not None else ""
    body = "".join(f"""
        @server.tool(description="Say hi ({n}).")
        def hi{n}() -> str:
            return "hi {n} from {name}"
    """ for n in range(tools))
    return {**stdio(python_server(tmp_path, name, wait + body)), "startup_timeout_sec": 300}


def _build(tmp_path, servers: dict, replies):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    options = Options(workspace=workspace, yolo=True, mcp_config=(config_file(tmp_path, servers),))
    return build_agent(options, lambda call, summary: True, provider=script(replies, window=64_000))


def test_build_agent_does_not_wait_for_a_server_and_its_tools_come_once_it_is_connected(tmp_path):
    from mini_letta.repl.views import status_fields

    gate = tmp_path / "gate"
    servers = {"quick": _server(tmp_path, "quick"), "slow": _server(tmp_path, "slow", gate)}
    agent = _build(tmp_path, servers, ["before", tool_call("mcp__slow__hi0"), "after"])
    try:
        agent.mcp.servers.wait(["quick"])
        assert ("mcp", "MCP 1/2 connecting", "") in status_fields(agent)
        names = [spec.name for spec in agent.tool_specs()]
        assert "mcp__quick__hi0" in names and "mcp__slow__hi0" not in names
        assert agent.run_turn("first").text == "before"  # a turn does not wait for it either
        assert [row.status for row in agent.mcp.rows()] == ["connected", "connecting"]

        gate.touch()
        agent.mcp.servers.wait()
        assert not any(name == "mcp" for name, _, _ in status_fields(agent))
        assert agent.run_turn("second").text == "after"
        (result,) = [m for m in agent.conversation.messages if m.role == "tool"]
        assert result.text == "hi 0 from slow"
    finally:
        agent.mcp.close()


def test_a_server_that_connects_late_is_deferred_with_the_others_when_together_they_pass_the_share(tmp_path):
    """The deferral decision is taken again when a server connects: one small server is sent up
    front; a large one arriving later puts them all behind tool_search, and the user is told."""
    gate = tmp_path / "gate"
    servers = {"small": _server(tmp_path, "small"), "large": _server(tmp_path, "large", gate, tools=150)}
    agent = _build(tmp_path, servers, ["ok"])
    try:
        agent.mcp.servers.wait(["small"])
        assert not agent.mcp.deferred and "mcp__small__hi0" in [s.name for s in agent.tool_specs()]
        said(agent)
        gate.touch()
        agent.mcp.servers.wait()
        names = [spec.name for spec in agent.tool_specs()]
        assert agent.mcp.deferred and "tool_search" in names and "mcp__small__hi0" not in names
        assert "MCP: large connected: MCP tool definitions are deferred behind tool_search." in said(agent)
    finally:
        agent.mcp.close()


def test_a_server_that_fails_in_the_background_is_said_once(tmp_path):
    servers = {"ghost": {"command": str(tmp_path / "no-such-program")}}
    agent = _build(tmp_path, servers, ["fine"])
    try:
        agent.mcp.servers.wait()
        notices = [n for n in said(agent) if "ghost" in n]
        assert len(notices) == 1 and "'ghost' did not start" in notices[0], notices
        assert agent.run_turn("hello").text == "fine"
        assert agent.mcp.servers.progress() == ""
    finally:
        agent.mcp.close()


def test_closing_while_a_server_connects_stops_it_and_says_nothing(tmp_path):
    gate = tmp_path / "gate"
    agent = _build(tmp_path, {"slow": _server(tmp_path, "slow", gate)}, ["fine"])
    said(agent)
    agent.mcp.close()
    assert [state.status for state in agent.mcp.servers.states] == ["stopped"]
    assert not [n for n in said(agent) if "slow" in n]


def test_the_repl_prompt_and_status_bar_come_while_the_servers_connect(spawn, tmp_path):
    """In the real terminal: the prompt is drawn and a message answered while one of two servers is
    still connecting ("MCP 1/2 connecting" on the status bar); once it is up, its tool can be called."""
    from pty_support import assert_exits_cleanly, screen_after

    gate = tmp_path / "gate"
    home = tmp_path / "home"
    home.mkdir()
    servers = {"quick": _server(tmp_path, "quick"), "slow": _server(tmp_path, "slow", gate)}
    (home / "settings.json").write_text(json.dumps({"mcpServers": servers,
                                                    "permissions": {"allow": ["mcp__slow"]}}))
    child = spawn()
    screen_after(child, r"MCP\s+[01]/2\s+connecting", timeout=120)
    mcp_until(child, r"quick\s+connected\s+1[\s\S]*slow\s+connecting")
    child.send("hello\r")
    # The bar after the reply, drawn whole (a redraw in place rewrites only what changed).
    screen_after(child, r"hello[\s\S]*MCP\s+1/2\s+connecting", timeout=60)
    gate.touch()
    mcp_until(child, r"slow\s+connected")
    child.send("call mcp__slow__hi0 {}\r")
    screen_after(child, r"hi 0 from slow[\s\S]*context left", timeout=60)
    child.sendcontrol("d")
    screen_after(child, r"Bye")
    assert_exits_cleanly(child)
