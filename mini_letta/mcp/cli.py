"""``mini-letta mcp add|list|get|remove``, in the manner of ``claude mcp``.

    mini-letta mcp add time -- uvx mcp-server-time
    mini-letta mcp add -e TOKEN=… --scope project github -- npx -y @modelcontextprotocol/server-github
    mini-letta mcp add --transport http docs https://example.com/mcp -H "Authorization: Bearer ${TOKEN}"
    mini-letta mcp add --transport sse wiki https://example.com/sse -H "X-Api-Key: ${WIKI_KEY}"

``--scope user`` (the default) writes the data folder's ``settings.json``; ``--scope project`` the
current folder's ``.mcp.json`` (shared with the repository, started only once the folder is trusted).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from mini_letta import config
from mini_letta.guard import fail
from mini_letta.trust.terminal_text import visible
from mini_letta.wording import counted

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Configure MCP servers (Claude Code's .mcp.json shape).", no_args_is_help=True)

SCOPES = ("user", "project")


def _workspace() -> Path:
    return Path.cwd().resolve()


def _scope(scope: str) -> str:
    if scope not in SCOPES:
        fail(f"--scope must be user or project, not {scope!r}.")
    return scope


@app.command("add", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The server's name: tools appear as mcp__<name>__<tool>."),
    target: Optional[str] = typer.Argument(None, help="The URL of an http or sse server (a stdio command goes after --)."),
    transport: str = typer.Option("stdio", "--transport", "-t", help="stdio, http or sse."),
    scope: str = typer.Option("user", "--scope", "-s", help="user (data folder) or project (./.mcp.json)."),
    env: Optional[list[str]] = typer.Option(None, "--env", "-e", help="KEY=value for a stdio server."),
    header: Optional[list[str]] = typer.Option(None, "--header", "-H", help="'Name: value' for an http or sse server."),
) -> None:
    """Add a server: `mcp add NAME -- COMMAND [ARGS…]` or `mcp add --transport http|sse NAME URL`."""
    from mini_letta.mcp.config import HTTP_TRANSPORTS, config_path, parse_server, write_server

    path = config_path(config.home(), _workspace(), _scope(scope))
    if transport in HTTP_TRANSPORTS:
        if not target:
            fail(f"an {transport} server needs its URL: mini-letta mcp add --transport {transport} NAME URL")
        entry: dict = {"type": transport, "url": target}
        headers = {}
        for line in header or []:
            key, sep, value = line.partition(":")
            if not sep or not key.strip():
                fail(f"a header is 'Name: value', not {line!r}.")
            headers[key.strip()] = value.strip()
        if headers:
            entry["headers"] = headers
    elif transport == "stdio":
        command = ([target] if target else []) + list(ctx.args)
        if not command:
            fail("give the command after --: mini-letta mcp add NAME -- COMMAND [ARGS…]")
        entry = {"command": command[0], "args": command[1:]}
        pairs = {}
        for item in env or []:
            key, sep, value = item.partition("=")
            if not sep or not key:
                fail(f"an environment variable is KEY=value, not {item!r}.")
            pairs[key] = value
        if pairs:
            entry["env"] = pairs
    else:
        fail(f"--transport must be stdio, http or sse, not {transport!r}.")
    # Checked with the variables unexpanded left in place: ${TOKEN} may be set only where it runs.
    server, problem = parse_server(name, entry, path)
    if server is None and "environment variable" not in problem:
        fail(f"not added: {problem}.")
    try:
        write_server(path, name, entry)
    except ValueError as error:
        fail(str(error))
    print(f"Added the MCP server {visible(name)} to {path}.")
    if scope == "project":
        print("Servers in .mcp.json start once the folder is trusted: type /trust in the REPL.")


@app.command("remove")
def remove(name: str = typer.Argument(...),
           scope: Optional[str] = typer.Option(None, "--scope", "-s", help="user or project; default: wherever it is.")) -> None:
    """Remove a server from the user settings or this folder's .mcp.json."""
    from mini_letta.mcp.config import config_path, remove_server

    scopes = [_scope(scope)] if scope else list(SCOPES)
    for each in scopes:
        path = config_path(config.home(), _workspace(), each)
        try:
            if remove_server(path, name):
                print(f"Removed the MCP server {visible(name)} from {path}.")
                return
        except ValueError as error:
            fail(str(error))
    fail(f"there is no MCP server named {name!r} in {' or '.join(str(config_path(config.home(), _workspace(), s)) for s in scopes)}.")


@app.command("list")
def list_servers() -> None:
    """Start every configured server once and show whether it answers, with its tools."""
    from mini_letta.mcp.client import McpManager
    from mini_letta.mcp.config import load_servers

    loaded = load_servers(config.home(), _workspace())
    for reason in loaded.skipped:
        print(f"mini-letta: {visible(reason)}", file=sys.stderr)
    if not loaded.servers:
        print("No MCP servers configured. Add one with `mini-letta mcp add NAME -- COMMAND`.")
        return
    manager = McpManager(list(loaded.servers.values()), config.home())
    try:
        manager.start()
        manager.wait()
        for state in manager.states.values():
            if state.status == "connected":
                status = f"connected, {counted(len(state.tools), 'tool')}"
                if state.prompts:
                    status += f", {counted(len(state.prompts), 'prompt')} (/mcp__{state.name}__<prompt> in the REPL)"
            else:
                status = f"failed: {state.error} (log: {manager.log_path(state.name)})"
            print(visible(f"{state.name}: {state.config.describe()} - {status}"))
    finally:
        manager.close()


@app.command("get")
def get(name: str = typer.Argument(...)) -> None:
    """Show one server's configuration: where it is defined, what it runs, its timeouts."""
    from mini_letta.mcp.config import HTTP_TRANSPORTS, load_servers

    loaded = load_servers(config.home(), _workspace())
    server = loaded.servers.get(name)
    if server is None:
        said = [reason for reason in loaded.skipped if repr(name) in reason or name in reason.split()]
        fail(said[0] if said else f"there is no MCP server named {name!r}; `mini-letta mcp list` shows them.")
    lines = [f"{server.name}:", f"  defined in: {server.source}", f"  transport: {server.transport}"]
    if server.transport in HTTP_TRANSPORTS:
        lines.append(f"  url: {server.url}")
        lines += [f"  header: {key}: (set)" for key in server.headers]
    else:
        lines.append(f"  command: {' '.join([server.command, *server.args])}")
        lines += [f"  env: {key}=(set)" for key in server.env]
    lines.append(f"  start-up timeout: {server.startup_timeout:g} s, tool timeout: {server.tool_timeout:g} s")
    print(visible("\n".join(lines)))
