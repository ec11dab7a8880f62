"""``/mcp``: each MCP server's status, tools, the tokens their definitions cost, deferred or loaded;
and ``/mcp__server__prompt``, a server's prompt sent as the user's message.

Server names, errors and paths come from configuration files and servers: shown through ``plain()``.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from typing import TYPE_CHECKING

from mini_letta.mcp.prompts import PREFIX, PromptError, fetch, find, prompt_commands
from mini_letta.repl.views import plain
from mini_letta.wording import counted

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost

# The prompt's text is shown before it is sent (the user did not type it); a long one in part.
SHOWN_LINES = 20


def mcp_view(tools) -> Group | Text:
    """The table for ``tools`` (an agent's ``McpTools``, or None when no server is configured)."""
    if tools is None or not tools.configured:
        return plain("No MCP servers are running. Add one with `mini-letta mcp add NAME -- COMMAND` or a "
                     ".mcp.json in this folder (started once it is trusted: /trust).")
    table = Table(box=None, padding=(0, 2), header_style="bold")
    for column in ("server", "status", "tools", "tokens", "sent"):
        table.add_column(column, justify="right" if column in ("tools", "tokens") else "left")
    for row in tools.rows():
        if row.status != "connected":
            sent = ""
        elif row.deferred:
            sent = f"{row.loaded} loaded, {row.tools - row.loaded} deferred"
        else:
            sent = "all"
        status = plain(row.status, {"connected": "green", "connecting": "yellow"}.get(row.status, "red"))
        table.add_row(plain(row.name), status, str(row.tools), f"{row.tokens:,}", plain(sent))
        if row.detail:
            table.add_row("", plain(row.detail, "dim"), "", "", "")
    shown = [table, plain(tools.summary(), "dim")]
    prompts = prompt_commands(tools)
    if prompts:  # commands, not tools: the model never sees them
        shown.append(plain("Prompts, as commands: " + ", ".join(f"/{command.name}" for command in prompts), "dim"))
    return Group(*shown)


def run_prompt_command(repl: ReplHost, typed_name: str, typed: str) -> bool:
    """Send the prompt ``/typed_name typed`` as the user's message; False when no server offers it."""
    if not typed_name.lower().startswith(PREFIX):
        return False
    tools = getattr(repl.agent(), "mcp", None)
    command = find(tools, typed_name)
    if command is None:
        return False
    try:
        text = fetch(tools, command, typed)
    except PromptError as error:
        repl.console.print(plain(str(error), "red"))
        return True
    lines = text.splitlines()
    repl.console.print(plain(f"The prompt {command.prompt.name} of {command.server} "
                             f"({counted(len(lines), 'line')}) is sent as your message:", "dim"))
    shown = "\n".join(lines[:SHOWN_LINES])
    if len(lines) > SHOWN_LINES:
        shown += f"\n… ({counted(len(lines) - SHOWN_LINES, 'more line')})"
    repl.console.print(plain(shown, "dim"))
    repl.send(text)
    return True
