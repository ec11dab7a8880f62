"""MCP servers for mini-letta: configuration (``config.py``), the background client manager
(``client.py``), tools in the toolbox (``tools.py``) and deferral behind ``tool_search``
(``deferral.py``). ``attach(agent, …)`` is the one call the rest of mini-letta makes.

The SDK is imported only when a server is configured: start-up without MCP servers pays nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from mini_letta.config import notice

if TYPE_CHECKING:
    from mini_letta.loop.agent import Agent
    from mini_letta.mcp.tools import McpTools


def attach(agent: Agent, home: Path, workspace: Path, extra_files: Iterable[Path] = ()) -> McpTools | None:
    """Start the configured MCP servers and offer their tools to ``agent``; called again (``/trust``),
    it stops the servers it started before and starts what the configuration now says.

    Servers that are skipped or fail are named in notices; the agent works without them.
    """
    from mini_letta.mcp.config import load_servers

    previous = getattr(agent, "mcp", None)
    extra_files = list(extra_files) or (previous.extra_files if previous is not None else [])
    close(agent)
    loaded = load_servers(home, workspace, extra_files)
    for reason in loaded.skipped:
        notice(reason)
    if not loaded.servers:
        return None
    from mini_letta.mcp.client import McpManager
    from mini_letta.mcp.deferral import policy_from_env
    from mini_letta.mcp.tools import McpTools

    manager = McpManager(list(loaded.servers.values()), home)
    manager.start()
    for state in manager.states.values():
        if state.status != "connected":
            notice(f"The MCP server {state.name!r} did not start: {state.error}. "
                          f"Its log: {manager.log_path(state.name)}.")
    agent.mcp = McpTools(manager, agent, policy_from_env())
    agent.mcp.extra_files = extra_files
    agent.mcp.install()
    return agent.mcp


def close(agent: Agent) -> None:
    """Stop the servers started for ``agent`` and take their tools away (also done at exit)."""
    tools = getattr(agent, "mcp", None)
    if tools is not None:
        tools.detach()
        agent.mcp = None
