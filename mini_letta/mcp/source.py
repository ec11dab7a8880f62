"""The MCP servers' tools as first-class toolbox tools: same approval, caps and budget.

``McpTools(servers, policy)`` is built before the agent and handed to ``assemble``, which offers it the
agent's toolbox (``offer(host)``). From then on it is a tool source the toolbox asks before it lists
its tools (``sync``, one of the toolbox's refreshers): the tools of a server that has connected since
are registered then, so a server still connecting never delays anything. Each call is checked
against the server's schema and asks for approval (the arguments shown whole, as plain text; ``a``
allows that tool for the session; ``permissions.allow`` skips the question); its result is cut to
the same output cap as every tool. Whether the schemas are sent up front or deferred behind
``tool_search`` is decided here from their token count (``deferral.py``), again whenever a server
connects or the window changes.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mini_letta.notices import Say, quiet
from mini_letta.mcp import deferral
from mini_letta.mcp.servers import McpServers
from mini_letta.mcp.tools import outcome_from, read_only, to_spec, unique_name
from mini_letta.messages import ToolSpec
from mini_letta.settings import SETTINGS
from mini_letta.toolbox.outcome import ToolOutcome
from mini_letta.wording import counted

if TYPE_CHECKING:
    from mini_letta.toolbox import Toolbox


class Host(Protocol):
    """What the tools are offered to (the agent): its toolbox, and what decides whether they fit."""

    toolbox: Toolbox
    budget: Any
    provider: Any

    def system_prompt(self) -> str: ...

    def tool_specs(self) -> list[ToolSpec]: ...


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

    def __init__(self, servers: McpServers, policy: deferral.Policy, say: Say = quiet):
        self.servers = servers
        self.policy = policy
        self.say = say
        self.host: Host | None = None
        self.deferred = False
        self.names_only_servers = False
        self.disabled_reason = ""
        # tool name → (server, the server's own tool name)
        self.routes: dict[str, tuple[str, str]] = {}
        # Tools their server marks read-only (readOnlyHint): no checkpoint snapshot around them.
        self.read_only: set[str] = set()
        self._window = 0
        self._generation = 0
        self._installed: set[str] = set()  # the servers whose tools the last install() saw
        self._renamed_told: set[tuple[str, str]] = set()
        # The toolbar's thread and the agent's both list the tools; install() lists them itself.
        self._lock = threading.RLock()
        self._busy = False

    manager = property(lambda self: self.servers.manager)
    configured = property(lambda self: self.servers.manager is not None)

    def offer(self, host: Host) -> None:
        """Offer the tools to ``host``'s toolbox, now and as the servers connect."""
        self.host = host
        host.toolbox.refreshers.append(self.sync)
        host.toolbox.permissions.run_unasked.append(self.server_rule)
        self.sync()

    # -- installing ----------------------------------------------------------------------------
    def specs_by_server(self) -> dict[str, list[ToolSpec]]:
        """Every connected server's tools, each under a name of its own: two whose names meet after
        sanitising or the cut (in one server or across two: ``a`` with ``b__x``, ``a__b`` with
        ``x``) are both kept, the later with a numbered suffix, and the user is told once."""
        found: dict[str, list[ToolSpec]] = {}
        owners: dict[str, tuple[str, str]] = {}
        for state in self.servers.states:
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
        self.say(f"MCP: the tool {second[1]!r} of {second[0]} and the tool {first[1]!r} of {first[0]} are both "
                 f"{name} once made a valid tool name; the second is offered as {given}.")

    def install(self) -> None:
        """Register every tool of the connected servers, deferred or not, and say what was decided."""
        budget = self.host.budget
        # Decided for this window: another one (/model, a window learned from a rejection) decides again.
        self._window = budget.window
        by_server = self.specs_by_server()
        self._installed = set(by_server)
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
                self.say(f"The names of the {len(every)} deferred MCP tools do not fit "
                         f"{self.policy.share:g}% of the {budget.window:,}-token window, so tool_search lists "
                         f"only the servers; {self._advice(by_server)}")
            floor = budget.calibration.floor_calibrated(self.host.system_prompt(), self.host.tool_specs() + [search])
            if budget.floor_problem(floor, self.host.provider.name) is not None:
                self.disabled_reason = (f"even tool_search and the servers' names do not fit the "
                                        f"{budget.window:,}-token window")
                self.say(f"No MCP tools are offered: {self.disabled_reason}; {self._advice(by_server)}")
                return
            self.host.toolbox.register(search, self._search)
        for specs in by_server.values():
            for spec in specs:
                self._register(spec)

    def _register(self, spec: ToolSpec) -> None:
        server, tool = self.routes[spec.name]
        self.host.toolbox.register(
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
        return next((rule.text for rule in self.host.toolbox.permissions.rules
                     if rule.tool == wanted and rule.pattern is None), None)

    # -- calls ---------------------------------------------------------------------------------
    def _call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        # Called by its name without a search first: from now on its schema is sent too.
        self.host.toolbox.list_tool(name)
        return self.call(name, arguments)

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run the tool ``name`` without listing it here: a subagent's copy lists it in its own toolbox."""
        from mini_letta.mcp.client import McpCallError

        server, tool = self.routes[name]
        try:
            result = self.manager.call(server, tool, arguments)
        except McpCallError as error:
            self.say(f"MCP: {error}")
            return ToolOutcome(f"{name} failed: {error}", is_error=True)
        return outcome_from(result)

    def _search(self, arguments: dict[str, Any]) -> ToolOutcome:
        toolbox = self.host.toolbox
        candidates = [toolbox.spec(name) for name in self.routes if name in toolbox]
        limit = arguments.get("max_results") or SETTINGS.mcp.search_results
        found = deferral.search(arguments["query"], [spec for spec in candidates if spec is not None], limit)
        if not found:
            return ToolOutcome(f"No MCP tool matches {arguments['query']!r}; try other words, or "
                               f"select:<name> with a name from the list.")
        lines = []
        for spec in found:
            already = toolbox.is_listed(spec.name)
            toolbox.list_tool(spec.name)
            first = spec.description.strip().splitlines()[0] if spec.description.strip() else ""
            lines.append(f"- {spec.name}{' (already loaded)' if already else ''}: {first[:200]}")
        return ToolOutcome("These tools are loaded; their schemas come with your next step, call them by name:\n"
                           + "\n".join(lines))

    # -- servers connecting, restarting, changing their tools -------------------------------------
    def sync(self) -> None:
        """Bring the toolbox up to date: a restart, another window, servers connected since, new tool lists."""
        if self.host is None:
            return
        with self._lock:
            if self._busy:  # install() lists the tools itself
                return
            self._busy = True
            try:
                self._sync()
            finally:
                self._busy = False

    def _sync(self) -> None:
        if self._generation != self.servers.generation:
            self._generation = self.servers.generation
            self.servers.take_changed()
            self._reinstall("")
            return
        settled, changed = self.servers.take_changed()
        connected = {state.name for state in self.servers.states if state.status == "connected"}
        arrived = (settled & connected) - self._installed
        if self.host.budget.window != self._window:
            self._reinstall(f"The context window is now {self.host.budget.window:,} tokens")
        elif arrived:
            self._reinstall(f"MCP: {', '.join(sorted(arrived))} connected")
        changed -= arrived
        if not changed or self.disabled_reason:
            return
        toolbox = self.host.toolbox
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
        self.say(f"MCP: {', '.join(sorted(changed))} changed {'its' if len(changed) == 1 else 'their'} tools "
                 f"({len(new_names - old)} added, {len(old - new_names)} removed).")

    def restart(self, wait: bool = False) -> bool:
        """Stop the servers and start what the configuration now says (``/trust``); whether there
        are any. ``wait``: until they are connected, their tools in the toolbox."""
        running = self.servers.restart()
        if wait:
            self.servers.wait()
        self.sync()
        return running

    def close(self) -> None:
        """Stop the servers and remove their tools (and tool_search) from the toolbox."""
        self.servers.close()
        if self.host is None:
            return
        self._remove_tools()
        toolbox = self.host.toolbox
        if self.sync in toolbox.refreshers:
            toolbox.refreshers.remove(self.sync)
        if self.server_rule in toolbox.permissions.run_unasked:
            toolbox.permissions.run_unasked.remove(self.server_rule)

    def _remove_tools(self) -> None:
        for name in [*self.routes, *([deferral.SEARCH_TOOL] if self.deferred else [])]:
            self.host.toolbox.unregister(name)
        self.routes.clear()

    def _reinstall(self, reason: str) -> None:
        """Everything installed afresh; deferred tools already loaded stay loaded."""
        toolbox = self.host.toolbox
        was_deferred = self.deferred
        loaded = [name for name in self.routes if was_deferred and toolbox.is_listed(name)]
        self._remove_tools()
        self.deferred = self.names_only_servers = False
        self.disabled_reason = ""
        self.install()
        for name in loaded:
            if self.deferred and name in toolbox:
                toolbox.list_tool(name)
        if reason and self.deferred != was_deferred:
            self.say(f"{reason}: MCP tool definitions are "
                     + ("deferred behind tool_search." if self.deferred else "sent with every request again."))

    # -- /mcp ----------------------------------------------------------------------------------
    def rows(self) -> list[ServerRow]:
        self.sync()
        counter = self.host.budget.counter
        toolbox = self.host.toolbox
        rows = []
        for state in self.servers.states:
            names = [name for name, (server, _) in self.routes.items() if server == state.name and name in toolbox]
            specs = [toolbox.spec(name) for name in names]
            tokens = counter.count_tools([spec for spec in specs if spec is not None])
            loaded = sum(1 for name in names if toolbox.is_listed(name))
            status = "connecting" if state.status == "starting" else state.status
            detail = state.error if status not in ("connected", "connecting") else ""
            if detail:
                detail = f"{detail}; log: {self.servers.log_path(state.name)}"
            rows.append(ServerRow(state.name, status, len(names), tokens, loaded, self.deferred, detail))
        return rows

    def summary(self) -> str:
        """One line under the table: the deferral decision and why."""
        if self.disabled_reason:
            return f"MCP tools are off: {self.disabled_reason}."
        toolbox, budget = self.host.toolbox, self.host.budget
        every = [toolbox.spec(name) for name in self.routes if name in toolbox]
        tokens = budget.counter.count_tools([spec for spec in every if spec is not None])
        share = 100 * tokens / max(1, budget.window)
        state = "all sent with every request"
        if self.deferred:
            search = toolbox.spec(deferral.SEARCH_TOOL)
            cost = budget.counter.count_tools([search]) if search is not None else 0
            state = f"deferred behind tool_search (it and the names cost {cost:,} tokens)"
        return (f"{counted(len(every), 'MCP tool')}, {counted(tokens, 'token')} of definitions ({share:.1f}% of the window): "
                f"{state}; MINI_LETTA_TOOL_SEARCH is {self.policy.describe()}.")
