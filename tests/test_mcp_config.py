"""Where MCP servers come from: Claude Code's .mcp.json shape, ${VAR} expansion, trust gating, the
data folder's settings, and `mini-letta mcp add|list|get|remove`."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from mcp_support import config_file, stdio, time_server_command
from mini_letta.notices import Notices
from mini_letta import config
from mini_letta.cli_app import app
from mini_letta.hooks import trust
from mini_letta.mcp.config import expand, load_servers, parse_server


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_variables_expand_with_defaults_and_an_unset_one_skips_the_server(workspace, monkeypatch):
    monkeypatch.setenv("MCP_TOKEN", "s3cret")
    monkeypatch.delenv("MCP_MISSING", raising=False)
    assert expand("Bearer ${MCP_TOKEN}") == "Bearer s3cret"
    assert expand("${MCP_MISSING:-fallback}/x") == "fallback/x"
    home = config.home()
    write(home / "settings.json", {"mcpServers": {
        "ok": {"command": "srv", "args": ["--token", "${MCP_TOKEN}"], "env": {"HOME_DIR": "${MCP_MISSING:-/tmp}"}},
        "web": {"type": "http", "url": "https://${MCP_MISSING:-example.com}/mcp",
                "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}},
        "wiki": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X-Api-Key": "${MCP_TOKEN}"}},
        "broken": {"command": "srv", "args": ["${MCP_MISSING}"]}}})
    loaded = load_servers(home, workspace)
    assert loaded.servers["ok"].args == ["--token", "s3cret"] and loaded.servers["ok"].env == {"HOME_DIR": "/tmp"}
    assert loaded.servers["web"].transport == "http" and loaded.servers["web"].url == "https://example.com/mcp"
    assert loaded.servers["web"].headers == {"Authorization": "Bearer s3cret"}
    wiki = loaded.servers["wiki"]
    assert (wiki.transport, wiki.headers, wiki.describe()) == ("sse", {"X-Api-Key": "s3cret"},
                                                               "http://127.0.0.1:9/sse (SSE)")
    assert "broken" not in loaded.servers
    assert any("'broken'" in reason and "MCP_MISSING is not set" in reason for reason in loaded.skipped)


def test_workspace_servers_start_only_once_the_folder_is_trusted(workspace):
    write(workspace / ".mcp.json", {"mcpServers": {"repo-tool": {"command": "evil"}}})
    home = config.home()
    loaded = load_servers(home, workspace)
    assert loaded.servers == {}
    assert loaded.skipped == [f"MCP server repo-tool from {workspace / '.mcp.json'} not started: this folder is not "
                              f"trusted and the file starts programs. Type /trust if you want them."]
    trust(home, workspace)
    assert list(load_servers(home, workspace).servers) == ["repo-tool"]


@pytest.mark.parametrize("content, said", [
    ("{not json", "it is not valid JSON"),
    ("x" * (1024 * 1024 + 1), "larger than 1,048,576 bytes"),
])
def test_a_malformed_workspace_file_is_one_notice(workspace, content, said):
    write(workspace / ".mcp.json", content)
    channel = Notices()
    loaded = load_servers(config.home(), workspace, say=channel.say)
    notices = channel.take()
    assert len(notices) == 1 and said in notices[0] and loaded.servers == {} and loaded.skipped == []


def test_a_fifo_named_mcp_json_is_not_opened(workspace):
    os.mkfifo(workspace / ".mcp.json")  # opening it for reading would block start-up forever
    channel = Notices()
    load_servers(config.home(), workspace, say=channel.say)
    assert channel.take() == [f"Ignoring {workspace / '.mcp.json'}: it is a named pipe, not a regular file."]


@pytest.mark.parametrize("entry, problem", [
    ({"args": ["x"]}, 'a stdio server needs a "command"'),
    ({"type": "websocket", "url": "ws://x"}, "the transport 'websocket' is not supported (use stdio, http or sse)"),
    ({"type": "http", "url": "ftp://x"}, "an http server needs a url starting with http"),
    ({"type": "sse"}, "an sse server needs a url starting with http"),
    ({"command": "x", "args": "not a list"}, '"args" must be a list'),
])
def test_bad_entries_say_what_is_wrong(tmp_path, entry, problem):
    server, said = parse_server("name", entry, tmp_path)
    assert server is None and problem in said


def test_timeouts_come_from_the_entry_then_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MINI_LETTA_MCP_TOOL_TIMEOUT", "7")
    server, _ = parse_server("s", {"command": "x", "startup_timeout_sec": 3}, tmp_path)
    assert (server.startup_timeout, server.tool_timeout) == (3.0, 7.0)


@pytest.fixture
def cli(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    runner = CliRunner()

    def run(*args):
        result = runner.invoke(app, ["mcp", *args])
        return result.exit_code, result.output

    return run


def test_mcp_add_get_list_remove_like_claude_mcp(cli, workspace):
    code, out = cli("add", "time", "--", *time_server_command())
    assert code == 0 and "Added the MCP server time" in out
    code, out = cli("add", "--transport", "http", "-H", "Authorization: Bearer ${DOCS_TOKEN}", "docs",
                    "http://127.0.0.1:9/mcp")
    assert code == 0
    saved = json.loads((config.home() / "settings.json").read_text())["mcpServers"]
    assert saved["docs"] == {"type": "http", "url": "http://127.0.0.1:9/mcp",
                             "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
    assert saved["time"]["args"] == time_server_command()[1:]
    code, out = cli("add", "-t", "sse", "-H", "X-Api-Key: k", "wiki", "http://127.0.0.1:9/sse")
    assert code == 0 and "Added the MCP server wiki" in out
    saved = json.loads((config.home() / "settings.json").read_text())["mcpServers"]
    assert saved["wiki"] == {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X-Api-Key": "k"}}
    code, out = cli("get", "wiki")
    assert code == 0 and "transport: sse" in out and "url: http://127.0.0.1:9/sse" in out
    assert "header: X-Api-Key: (set)" in out and ": k" not in out
    code, out = cli("add", "-t", "sse", "nourl")
    assert code == 1 and "an sse server needs its URL" in out
    code, out = cli("add", "-t", "websocket", "w", "ws://x")
    assert code == 1 and "--transport must be stdio, http or sse" in out
    cli("remove", "wiki")
    code, out = cli("get", "time")
    assert code == 0 and "transport: stdio" in out and "mcp-server-time --local-timezone UTC" in out
    code, out = cli("list")
    assert code == 0 and "time: " in out and "connected, 2 tools" in out
    assert "DOCS_TOKEN is not set" in out  # the skipped server is named, with why
    code, out = cli("add", "-s", "project", "local", "--", "echo")
    assert code == 0 and (workspace / ".mcp.json").is_file() and "/trust" in out
    code, out = cli("remove", "docs")
    assert code == 0 and "docs" not in json.loads((config.home() / "settings.json").read_text())["mcpServers"]
    code, out = cli("remove", "nope")
    assert code == 1 and "no MCP server named 'nope'" in out


def test_a_server_that_cannot_start_is_named_with_its_log_and_the_agent_goes_on(workspace):
    from agent_support import make_agent, script
    from mcp_support import agent_with_servers, said

    agent, tools = agent_with_servers(None, workspace, {"ghost": {"command": str(workspace / "no-such-program")}}, script(["fine"]))
    try:
        notices = said(agent)
        assert any("'ghost' did not start" in n and "mcp-logs/ghost.log" in n for n in notices), notices
        assert tools.rows()[0].status == "failed"
        assert agent.run_turn("hello").text == "fine"
    finally:
        tools.close()


def test_config_file_helper_writes_claude_codes_shape(tmp_path):
    path = config_file(tmp_path, {"a": stdio(["x", "y"])})
    assert json.loads(path.read_text()) == {"mcpServers": {"a": {"command": "x", "args": ["y"]}}}


def test_a_missing_mcp_config_file_is_named(tmp_path, workspace):
    loaded = load_servers(config.home(), workspace, [tmp_path / "nope.json"])
    assert loaded.skipped == [f"--mcp-config {tmp_path / 'nope.json'} was ignored: there is no such file."]
