"""MCP servers for mini-letta: configuration (``config.py``), the servers of a session connecting in
the background (``servers.py``, ``client.py``, ``connection.py``, ``processes.py``), their tools as a
source the toolbox asks (``source.py``, ``tools.py``) and deferral behind ``tool_search``
(``deferral.py``). ``open_tools(…)`` builds the one object the rest of mini-letta holds (``agent.mcp``).

The SDK is imported only when a server is configured: start-up without MCP servers pays nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from mini_letta.notices import Say, quiet

if TYPE_CHECKING:
    from mini_letta.mcp.source import McpTools


def open_tools(home: Path, workspace: Path, extra_files: Iterable[Path] = (), *,
               wanted: Callable[[str], bool] | None = None, not_wanted: str = "", say: Say = quiet) -> McpTools:
    """The configured servers (those ``wanted`` accepts), connecting from now on in the background,
    as a tool source to hand to ``assemble``; servers that are skipped or fail are named through ``say``."""
    from mini_letta.mcp.deferral import policy_from_env
    from mini_letta.mcp.servers import McpServers
    from mini_letta.mcp.source import McpTools

    servers = McpServers(home, workspace, extra_files, wanted=wanted, not_wanted=not_wanted, say=say)
    return McpTools(servers, policy_from_env(say), say=say)


def close(agent) -> None:
    """Stop the servers started for ``agent`` and take their tools away (also done at exit)."""
    tools = getattr(agent, "mcp", None)
    if tools is not None:
        tools.close()
