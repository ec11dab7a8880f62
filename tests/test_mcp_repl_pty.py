"""MCP in the real REPL (pseudo-terminal): a workspace's .mcp.json waits for /trust and says so,
/mcp shows each server, and leaving stops every server it started."""

from __future__ import annotations

import json

from mcp_support import mcp_until, process_gone, python_server, stdio
from pty_support import assert_exits_cleanly, screen_after


def _server(tmp_path, name):
    pid_file = tmp_path / f"{name}.pid"
    command = python_server(tmp_path, name, f"""
        import os
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        @server.tool(description="Say hi.")
        def hi(greeting: str = "") -> str:
            return "hi"
    """)
    return command, pid_file


def test_repl_trust_starts_workspace_servers_mcp_shows_them_and_exit_stops_them(spawn, tmp_path):
    own, own_pid = _server(tmp_path, "own")
    shared, shared_pid = _server(tmp_path, "shared")
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"mcpServers": {"own": stdio(own)}}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"shared": stdio(shared)}}))

    child = spawn()
    said = screen_after(child, r"Type\s+/trust\s+if\s+you\s+want\s+them", timeout=60)
    assert "MCP server shared from" in said
    screen_after(child, r"context left", timeout=60)
    table = mcp_until(child, r"own\s+connected[\s\S]*MCP\s+tools?,\s+[\d,]+\s+tokens")
    assert "shared" not in table.split("server")[-1]
    assert not shared_pid.exists()

    # Each call asks, with its arguments shown; "a" allows that tool for the rest of the session.
    child.send('call mcp__own__hi {"greeting": "\\u001b[31mred"}\r')
    asked = screen_after(child, r"\[a\] always for mcp__own__hi calls", timeout=30)
    # The arguments as JSON text: the escape character is shown as \u001b, never sent to the terminal.
    assert "run the MCP tool hi of the server own with the arguments" in asked
    assert '{"greeting": "\\u001b[31mred"}?' in asked
    child.send("a")  # one key, no Enter
    screen_after(child, r"hi[\s\S]*context left", timeout=30)
    child.send('call mcp__own__hi {"greeting": "again"}\r')
    again = screen_after(child, r"again[\s\S]*context left", timeout=30)
    assert "always for" not in again

    child.send("/trust\r")
    table = screen_after(child, r"Trusted[\s\S]*2\s+MCP\s+tools[\s\S]*context left", timeout=60)
    assert "shared" in table and table.count("connected") >= 2
    pids = [int(own_pid.read_text()), int(shared_pid.read_text())]

    child.sendcontrol("d")
    screen_after(child, r"Bye")
    assert_exits_cleanly(child)
    assert all(process_gone(pid) for pid in pids)



def test_repl_completes_an_mcp_prompt_and_sends_its_text(spawn, tmp_path):
    """A server's prompt is a command in the real terminal: Tab completes it, Enter sends its text
    (the demo model echoes what it received)."""
    command = python_server(tmp_path, "notes", """
        @server.prompt(description="Review a file.")
        def review(path: str, focus: str = "bugs") -> str:
            return f"Review {path} and look for {focus}."
    """)
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"mcpServers": {"notes": stdio(command)}}))
    child = spawn()
    screen_after(child, r"context left", timeout=60)
    mcp_until(child, r"Prompts, as commands: /mcp__notes__review")  # connected: the prompt is known before Tab
    child.send("/mcp__no")
    screen_after(child, r"/mcp__no[\s\S]*/mcp__notes__review\s+Review a file\. \(MCP prompt of notes\)", timeout=30)
    child.send("\t")  # take it: the line is now "/mcp__notes__review"
    screen_after(child, r"tes__review")
    child.send(" app.py\r")
    said = screen_after(child, r"Review\s+app\.py\s+and\s+look\s+for\s+bugs\.[\s\S]*Review\s+app\.py[\s\S]*context left",
                        timeout=30)
    assert "is sent as your message" in said
    child.sendcontrol("d")
    screen_after(child, r"Bye")
    assert_exits_cleanly(child)
