"""The parent's MCP tools in a subagent's toolbox, without starting their servers again.

A child gets every MCP tool its type selects, the ones its parent deferred behind ``tool_search``
included. Whether they are deferred is decided again for the child's own window, by the same
policy (``MINI_LETTA_TOOL_SEARCH``, ``mcp/deferral.py``): when their definitions take more than
its share, the child gets a ``tool_search`` of its own, which loads tools into the child's
toolbox only. A tool called by its name is listed in the child's toolbox too, never the parent's:
what a subagent loads stays out of the parent's requests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mini_letta.mcp.deferral import SEARCH_TOOL, policy_from_env, search, search_spec
from mini_letta.messages import ToolSpec
from mini_letta.settings import SETTINGS
from mini_letta.toolbox.outcome import ToolOutcome

MCP_PREFIX = "mcp__"


def share_mcp_tools(mcp: Any, source, target, select: Callable[[str], bool], window: int,
                    count_tools: Callable[[list[ToolSpec]], int]) -> bool:
    """Offer ``source``'s MCP tools that ``select`` picks in ``target``, run by ``mcp.call``
    (``mcp.tools.McpTools``); True when they are deferred behind the child's own tool_search."""
    names = [name for name in source.names() if name.startswith(MCP_PREFIX) and select(name)]
    if mcp is None or not names:
        return False
    specs = [source.spec(name) for name in names]
    policy = policy_from_env()
    deferred = policy.defers(count_tools(specs), window)
    for name in names:
        source.share(name, target, handler=_called_by_name(mcp, target, name), listed=not deferred)
    if deferred:
        by_server: dict[str, list[str]] = {}
        for name in names:
            by_server.setdefault(name.split("__")[1], []).append(name)
        spec = search_spec(by_server)
        if count_tools([spec]) > window * policy.share / 100:
            spec = search_spec(by_server, full_names=False)
        target.register(spec, lambda arguments: _load(target, names, arguments))
    return deferred


def _called_by_name(mcp: Any, target, name: str) -> Callable[[dict[str, Any]], ToolOutcome]:
    def run(arguments: dict[str, Any]) -> ToolOutcome:
        target.list_tool(name)  # called without a search first: its schema comes with the child's next step
        return mcp.call(name, arguments)
    return run


def _load(target, names: list[str], arguments: dict[str, Any]) -> ToolOutcome:
    """The child's tool_search: the words as ``mcp/deferral.search`` reads them, loaded into
    ``target`` (worded as the parent's tool_search answers)."""
    specs = [target.spec(name) for name in names if name in target]
    found = search(arguments["query"], [spec for spec in specs if spec is not None],
                   arguments.get("max_results") or SETTINGS.mcp.search_results)
    if not found:
        return ToolOutcome(f"No MCP tool matches {arguments['query']!r}; try other words, or "
                           f"select:<name> with a name from the list.")
    lines = []
    for spec in found:
        already = target.is_listed(spec.name)
        target.list_tool(spec.name)
        first = spec.description.strip().splitlines()[0] if spec.description.strip() else ""
        lines.append(f"- {spec.name}{' (already loaded)' if already else ''}: {first[:200]}")
    return ToolOutcome("These tools are loaded; their schemas come with your next step, call them by name:\n"
                       + "\n".join(lines))


__all__ = ["SEARCH_TOOL", "share_mcp_tools"]
