"""``/mcp``: each MCP server's status, tools, the tokens their definitions cost, deferred or loaded.

Server names, errors and paths come from configuration files and servers: shown through ``plain()``.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from mini_letta.mcp.prompts import prompt_commands
from mini_letta.repl.views import plain


def mcp_view(tools) -> Group | Text:
    """The table for ``tools`` (an agent's ``McpTools``, or None when no server is configured)."""
    if tools is None:
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
        status = plain(row.status, "green" if row.status == "connected" else "red")
        table.add_row(plain(row.name), status, str(row.tools), f"{row.tokens:,}", plain(sent))
        if row.detail:
            table.add_row("", plain(row.detail, "dim"), "", "", "")
    shown = [table, plain(tools.summary(), "dim")]
    prompts = prompt_commands(tools)
    if prompts:  # commands, not tools: the model never sees them
        shown.append(plain("Prompts, as commands: " + ", ".join(f"/{command.name}" for command in prompts), "dim"))
    return Group(*shown)
