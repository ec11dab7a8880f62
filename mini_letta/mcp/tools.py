"""MCP tools as first-class toolbox tools: ``mcp__<server>__<tool>``, same approval, caps and budget.

Each tool is registered in the agent's ``Toolbox``: its call is checked against the server's schema,
asks for approval (the arguments shown whole, as plain text; ``a`` allows that tool for the session;
``permissions.allow`` in the data folder's settings skips the question), and its result is cut to the
same output cap as every tool. Whether the schemas are sent up front or deferred behind
``tool_search`` is decided here from their token count (``deferral.py``).
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mini_letta import config
from mini_letta.mcp import deferral
from mini_letta.mcp.client import McpCallError, McpManager
from mini_letta.messages import ToolSpec
from mini_letta.toolbox.outcome import ToolOutcome, human_size
from mini_letta.wording import counted

if TYPE_CHECKING:
    from mini_letta.loop.agent import Agent

# OpenAI's limit on a function name; Anthropic's is the same.
MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{_UNSAFE.sub('_', tool)}"[:MAX_NAME]


def unique_name(name: str, taken: set[str]) -> str:
    """``name``, or, when another tool has it already (``get.x`` and ``get_x`` both become
    ``get_x``; two long names meet at the 64-character cut), it with the first free ``_2``, ``_3``...
    suffix, cut to fit."""
    number = 1
    candidate = name
    while candidate in taken:
        number += 1
        suffix = f"_{number}"
        candidate = name[:MAX_NAME - len(suffix)] + suffix
    return candidate


def to_spec(server: str, tool: Any) -> ToolSpec:
    schema = tool.input_schema if isinstance(getattr(tool, "input_schema", None), dict) else {}
    schema = {**schema, "type": "object"}
    schema.setdefault("properties", {})
    return ToolSpec(tool_name(server, tool.name), tool.description or tool.title or tool.name, schema)


def read_only(tool: Any) -> bool:
    """Whether the server says the tool changes nothing (``readOnlyHint``; unsaid means it may)."""
    return bool(getattr(getattr(tool, "annotations", None), "read_only_hint", False))


def outcome_from(result: Any) -> ToolOutcome:
    """The text the model reads: text blocks as they are; images, audio, links and embedded binary
    resources as one line each that says what and how big (the model cannot see them here)."""
    parts = [block_text(block) for block in getattr(result, "content", None) or []]
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, indent=2))
    text = "\n".join(parts) if parts else "(the tool returned nothing)"
    return ToolOutcome(text, is_error=bool(getattr(result, "is_error", False)))


def block_text(block: Any) -> str:
    """One content block (of a tool result or a prompt's message) as the model reads it."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        size = len(block.data or "") * 3 // 4
        return f"[{kind}: {block.mime_type}, {human_size(size)}; not shown to the model]"
    if kind == "resource_link":
        return (f"[resource link: {block.name} <{block.uri}>"
                + (f" ({block.mime_type})" if getattr(block, "mime_type", None) else "") + "]")
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource {resource.uri}]\n{text}"
        size = len(getattr(resource, "blob", "") or "") * 3 // 4
        return (f"[resource {resource.uri}: {getattr(resource, 'mime_type', None) or 'binary'}, "
                f"{human_size(size)}; not shown to the model]")
    return f"[{kind or 'unknown'} content; not shown to the model]"


@dataclass
class ServerRow:
    """One line of ``/mcp`` and ``mini-letta mcp list``."""

    name: str
    status: str
    tools: int
    tokens: int
    loaded: int
    deferred: bool
    detail: str


class McpTools:
    """The MCP servers of one agent: their tools in its toolbox, deferral, and what ``/mcp`` shows."""

    def __init__(self, manager: McpManager, agent: Agent, policy: deferral.Policy):
        self.manager = manager
        self.agent = agent
        self.policy = policy
        self.deferred = False
        self.names_only_servers = False
        self.disabled_reason = ""
        # tool name → (server, the server's own tool name)
        self.routes: dict[str, tuple[str, str]] = {}
        # Tools their server marks read-only (readOnlyHint): no checkpoint snapshot around them.
        self.read_only: set[str] = set()
        self._window = 0
        self._changed: set[str] = set()
        self._renamed_told: set[tuple[str, str]] = set()
        self.extra_files: list = []  # --mcp-config files, read again when /trust restarts the servers
        self._lock = threading.Lock()
        manager.on_tools_changed = self._tools_changed
        agent.toolbox.refreshers.append(self.sync)
        agent.toolbox.permissions.run_unasked.append(self.server_rule)

    # -- installing ----------------------------------------------------------------------------
    def specs_by_server(self) -> dict[str, list[ToolSpec]]:
        """Every connected server's tools, each under a name of its own: two whose names meet after
        sanitising or the cut (in one server or across two: ``a`` with ``b__x``, ``a__b`` with
        ``x``) are both kept, the later with a numbered suffix, and the user is told once."""
        found: dict[str, list[ToolSpec]] = {}
        owners: dict[str, tuple[str, str]] = {}
        for state in self.manager.states.values():
            if state.status == "connected":
                specs = []
                for tool in state.tools:
                    spec = to_spec(state.name, tool)
                    name = unique_name(spec.name, set(owners))
                    if name != spec.name:
                        self._say_renamed(owners[spec.name], (state.name, tool.name), spec.name, name)
                        spec = dataclasses.replace(spec, name=name)
                    owners[name] = (state.name, tool.name)
                    specs.append(spec)
                    self.routes[name] = (state.name, tool.name)
                    (self.read_only.add if read_only(tool) else self.read_only.discard)(name)
                found[state.name] = specs
        return found

    def _say_renamed(self, first: tuple[str, str], second: tuple[str, str], name: str, given: str) -> None:
        if second in self._renamed_told:
            return
        self._renamed_told.add(second)
        config.notice(f"MCP: the tool {second[1]!r} of {second[0]} and the tool {first[1]!r} of {first[0]} are both "
                      f"{name} once made a valid tool name; the second is offered as {given}.")

    def install(self) -> None:
        """Register every tool of the connected servers, deferred or not, and say what was decided."""
        budget = self.agent.budget
        # Decided for this window: another one (/model, a window learned from a rejection) decides again.
        self._window = budget.window
        by_server = self.specs_by_server()
        every = [spec for specs in by_server.values() for spec in specs]
        if not every:
            return
        tokens = budget.counter.count_tools(every)
        self.deferred = self.policy.defers(tokens, budget.window)
        if self.deferred:
            names = {server: [spec.name for spec in specs] for server, specs in by_server.items()}
            search = deferral.search_spec(names)
            if budget.counter.count_tools([search]) > budget.window * self.policy.share / 100:
                self.names_only_servers = True
                search = deferral.search_spec(names, full_names=False)
                config.notice(f"The names of the {len(every)} deferred MCP tools do not fit "
                              f"{self.policy.share:g}% of the {budget.window:,}-token window, so tool_search lists "
                              f"only the servers; {self._advice(by_server)}")
            floor = budget.calibration.floor_calibrated(self.agent.system_prompt(), self.agent.tool_specs() + [search])
            if budget.floor_problem(floor, self.agent.provider.name) is not None:
                self.disabled_reason = (f"even tool_search and the servers' names do not fit the "
                                        f"{budget.window:,}-token window")
                config.notice(f"No MCP tools are offered: {self.disabled_reason}; {self._advice(by_server)}")
                return
            self.agent.toolbox.register(search, self._search)
        for specs in by_server.values():
            for spec in specs:
                self._register(spec)

    def _register(self, spec: ToolSpec) -> None:
        server, tool = self.routes[spec.name]
        self.agent.toolbox.register(
            spec, lambda args, name=spec.name: self._call(name, args),
            needs_approval=True, listed=not self.deferred, changes_tree=spec.name not in self.read_only,
            summary=lambda args, server=server, tool=tool: (
                f"run the MCP tool {tool} of the server {server} with the arguments "
                f"{json.dumps(args, ensure_ascii=False)}"))

    def _advice(self, by_server: dict[str, list[ToolSpec]]) -> str:
        largest = sorted(by_server, key=lambda server: -len(by_server[server]))[:3]
        named = ", ".join(f"{server} ({counted(len(by_server[server]), 'tool')})" for server in largest)
        return (f"turn off servers you do not need here, largest first: {named} "
                f"(`mini-letta mcp remove <name>`, or remove them from .mcp.json).")

    def server_rule(self, call, arguments: dict[str, Any]) -> str | None:
        """A ``permissions.allow`` rule naming a whole server (``mcp__docs``, as in Claude Code)
        lets each of its tools run without asking; a tool's own name is the permissions' rule."""
        route = self.routes.get(call.name)
        if route is None:
            return None
        wanted = f"mcp__{route[0]}"
        return next((rule.text for rule in self.agent.toolbox.permissions.rules
                     if rule.tool == wanted and rule.pattern is None), None)

    # -- calls ---------------------------------------------------------------------------------
    def _call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        # Called by its name without a search first: from now on its schema is sent too.
        self.agent.toolbox.list_tool(name)
        return self.call(name, arguments)

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run the tool ``name`` without listing it here: a subagent's copy lists it in its own toolbox."""
        server, tool = self.routes[name]
        try:
            result = self.manager.call(server, tool, arguments)
        except McpCallError as error:
            config.notice(f"MCP: {error}")
            return ToolOutcome(f"{name} failed: {error}", is_error=True)
        return outcome_from(result)

    def _search(self, arguments: dict[str, Any]) -> ToolOutcome:
        candidates = [self.agent.toolbox.spec(name) for name in self.routes if name in self.agent.toolbox]
        limit = arguments.get("max_results") or deferral.MAX_RESULTS
        found = deferral.search(arguments["query"], [spec for spec in candidates if spec is not None], limit)
        if not found:
            return ToolOutcome(f"No MCP tool matches {arguments['query']!r}; try other words, or "
                               f"select:<name> with a name from the list.")
        lines = []
        for spec in found:
            already = self.agent.toolbox.is_listed(spec.name)
            self.agent.toolbox.list_tool(spec.name)
            first = spec.description.strip().splitlines()[0] if spec.description.strip() else ""
            lines.append(f"- {spec.name}{' (already loaded)' if already else ''}: {first[:200]}")
        return ToolOutcome("These tools are loaded; their schemas come with your next step, call them by name:\n"
                           + "\n".join(lines))

    # -- tools/list_changed ----------------------------------------------------------------------
    def _tools_changed(self, server: str) -> None:
        with self._lock:  # the loop thread records; the agent's thread applies in sync()
            self._changed.add(server)

    def sync(self) -> None:
        if self.agent.budget.window != self._window:
            self._reinstall()
        with self._lock:
            changed, self._changed = self._changed, set()
        if not changed or self.disabled_reason:
            return
        toolbox = self.agent.toolbox
        old = {name for name, (server, _) in self.routes.items() if server in changed}
        was_read_only = set(self.read_only)
        fresh = {server: specs for server, specs in self.specs_by_server().items() if server in changed}
        new_names = {spec.name for specs in fresh.values() for spec in specs}
        for name in old - new_names:
            toolbox.unregister(name)
            self.routes.pop(name, None)
        for specs in fresh.values():
            for spec in specs:
                if spec.name not in toolbox:
                    self._register(spec)
                elif toolbox.spec(spec.name) != spec or (spec.name in was_read_only) != (spec.name in self.read_only):
                    # Redefined under the same name: its schema, and whether checkpoints snapshot it.
                    listed = toolbox.is_listed(spec.name)
                    toolbox.unregister(spec.name)
                    self._register(spec)
                    if listed:
                        toolbox.list_tool(spec.name)
        config.notice(f"MCP: {', '.join(sorted(changed))} changed {'its' if len(changed) == 1 else 'their'} tools "
                      f"({len(new_names - old)} added, {len(old - new_names)} removed).")

    def detach(self) -> None:
        """Stop the servers and remove their tools (and tool_search) from the toolbox."""
        self.manager.close()
        self._remove_tools()
        toolbox = self.agent.toolbox
        if self.sync in toolbox.refreshers:
            toolbox.refreshers.remove(self.sync)
        if self.server_rule in toolbox.permissions.run_unasked:
            toolbox.permissions.run_unasked.remove(self.server_rule)

    def _remove_tools(self) -> None:
        for name in [*self.routes, *([deferral.SEARCH_TOOL] if self.deferred else [])]:
            self.agent.toolbox.unregister(name)
        self.routes.clear()

    def _reinstall(self) -> None:
        was_deferred = self.deferred
        self._remove_tools()
        self.deferred = self.names_only_servers = False
        self.disabled_reason = ""
        self.install()
        if self.deferred != was_deferred:
            config.notice(f"The context window is now {self._window:,} tokens: MCP tool definitions are "
                          + ("deferred behind tool_search." if self.deferred else "sent with every request again."))

    # -- /mcp ----------------------------------------------------------------------------------
    def rows(self) -> list[ServerRow]:
        counter = self.agent.budget.counter
        toolbox = self.agent.toolbox
        rows = []
        for state in self.manager.states.values():
            names = [name for name, (server, _) in self.routes.items() if server == state.name and name in toolbox]
            specs = [toolbox.spec(name) for name in names]
            tokens = counter.count_tools([spec for spec in specs if spec is not None])
            loaded = sum(1 for name in names if toolbox.is_listed(name))
            detail = state.error if state.status != "connected" else ""
            if state.status != "connected":
                detail = f"{detail}; log: {self.manager.log_path(state.name)}" if detail else ""
            rows.append(ServerRow(state.name, state.status, len(names), tokens, loaded, self.deferred, detail))
        return rows

    def summary(self) -> str:
        """One line under the table: the deferral decision and why."""
        if self.disabled_reason:
            return f"MCP tools are off: {self.disabled_reason}."
        every = [self.agent.toolbox.spec(name) for name in self.routes if name in self.agent.toolbox]
        tokens = self.agent.budget.counter.count_tools([spec for spec in every if spec is not None])
        share = 100 * tokens / max(1, self.agent.budget.window)
        state = "all sent with every request"
        if self.deferred:
            search = self.agent.toolbox.spec(deferral.SEARCH_TOOL)
            cost = self.agent.budget.counter.count_tools([search]) if search is not None else 0
            state = f"deferred behind tool_search (it and the names cost {cost:,} tokens)"
        return (f"{counted(len(every), 'MCP tool')}, {counted(tokens, 'token')} of definitions ({share:.1f}% of the window): "
                f"{state}; MINI_LETTA_TOOL_SEARCH is {self.policy.describe()}.")
