"""The optional tools a window may have no room for (``conversation_search``, ``todo_write``): their
schemas are paid in every request's floor, so each is sent only where the floor still fits with it
and the window is at least its minimum. One rule, run at assembly and again whenever the window
changes: a window learned from a rejection, a provider switch (``/model``) that replaces the budget.

A tool left out stays registered (unlisted): it can be listed again when a larger window comes
back, in the same place at the end of the list (``Toolbox.list_tool``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from mini_letta.context import ContextBudget
from mini_letta.context.floor import compact_specs
from mini_letta.loop.prompt import Prompt
from mini_letta.messages import ToolSpec


class Host(Protocol):
    """What the rule reads: the budget in use, the floor as it would be sent, the toolbox."""

    budget: ContextBudget
    toolbox: Any
    provider: Any
    prompt: Prompt


@dataclass(frozen=True)
class _Optional:
    spec: ToolSpec
    min_window: int


class WindowTools:
    def __init__(self, host: Host):
        self.host = host
        self._tools: list[_Optional] = []
        self._window: int | None = None  # the window the listing was last decided for
        self._deciding = False  # the floor is read while deciding; it asks the toolbox, which asks us

    def offer(self, spec: ToolSpec, handler, *, min_window: int = 0, **options) -> None:
        """Register ``spec`` as optional (``options`` as ``Toolbox.register`` takes them) and decide
        the listing again, this tool included."""
        toolbox = self.host.toolbox
        if not self._tools:
            toolbox.refreshers.append(self.refresh)
        toolbox.register(spec, handler, **options)
        toolbox.unlist_tool(spec.name)
        self._tools.append(_Optional(spec, min_window))
        self._window = None
        self.refresh()

    def refresh(self) -> None:
        """List or unlist each optional tool by the rule, when the window changed since the last time
        (the toolbox calls this before its list is read)."""
        budget = self.host.budget
        if self._deciding or budget.window == self._window:
            return
        self._deciding = True
        try:
            self._window = budget.window
            wanted = self.decide()
            toolbox = self.host.toolbox
            for tool in self._tools:
                name = tool.spec.name
                if wanted[name] != toolbox.is_listed(name):
                    (toolbox.list_tool if wanted[name] else toolbox.unlist_tool)(name)
        finally:
            self._deciding = False

    def decide(self) -> dict[str, bool]:
        """Whether each optional tool is sent in the window now: in the order they were offered,
        each where the window is at least its minimum and the floor with it (the required tools,
        those before it that are sent, and it) has no problem."""
        host, budget = self.host, self.host.budget
        optional = {tool.spec.name for tool in self._tools}
        # The floor as it would be sent without any optional tool, in the window's form.
        system, compact = host.prompt.system(), host.prompt.compact_floor()
        base = [spec for spec in host.prompt.tools() if spec.name not in optional]
        kept: list[ToolSpec] = []
        wanted: dict[str, bool] = {}
        for tool in self._tools:
            sent = compact_specs([tool.spec], budget.window) if compact else [tool.spec]
            fits = budget.window >= tool.min_window and budget.floor_problem(
                budget.calibration.floor_calibrated(system, base + kept + sent), host.provider.name) is None
            wanted[tool.spec.name] = fits
            if fits:
                kept.extend(sent)
        return wanted
