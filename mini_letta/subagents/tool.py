"""The ``task`` tool in a toolbox: its spec sized to the window, its calls run by the :class:`Runner`.

The loop tells the toolbox of each reply's calls before it runs them (``Toolbox.begin_reply``);
when they are read-only task calls, all of them are started then, side by side, and each call's
handler waits for its own report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mini_letta.messages import ToolCall, ToolSpec
from mini_letta.settings import SETTINGS
from mini_letta.subagents.catalog import Catalog
from mini_letta.subagents.definitions import TASK_TOOL
from mini_letta.subagents.runner import Batch, Runner, parallel, read_task_request, result_text
from mini_letta.subagents.task_spec import listing_budget, task_spec
from mini_letta.toolbox.outcome import ToolError, ToolOutcome



class TaskTool:
    def __init__(self, catalog: Catalog, runner: Runner, window: Callable[[], int], count: Callable[[str], int]):
        self.catalog = catalog
        self.runner = runner
        self.window = window
        self.count = count
        self._batch: tuple[dict[str, int], Batch] | None = None
        self._spec_window = (0, 0)
        self._toolbox = None

    def spec(self) -> ToolSpec:
        window = self.window()
        self._spec_window = (window, self.catalog.version)
        return task_spec(self.catalog.types.values(), listing_budget(window), self.count)

    def register(self, toolbox) -> None:
        self._toolbox = toolbox
        toolbox.register(self.spec(), self.handle, takes_limit=True)
        toolbox.reply_listeners.append(self.begin_reply)
        toolbox.refreshers.append(lambda: self._refresh(toolbox))

    def _refresh(self, toolbox) -> None:
        """A learned or switched window, or agents loaded after /trust, list the agents again."""
        if (self.window(), self.catalog.version) != self._spec_window and TASK_TOOL in toolbox:
            toolbox.replace_spec(self.spec())

    def begin_reply(self, calls: list[ToolCall]) -> None:
        """Start the reply's task calls together when they may run side by side."""
        self._batch = None
        if self._toolbox is None or not self._toolbox.is_listed(TASK_TOOL):
            return  # a subagent whose type does not delegate
        keyed: dict[str, int] = {}
        requests = []
        for call in calls:
            if call.name != TASK_TOOL:
                continue
            try:
                arguments = call.parse_arguments()
                request = read_task_request(arguments, self.catalog)
            except (ValueError, KeyError, AttributeError, ToolError):
                return  # the call itself will say what is wrong with it
            keyed.setdefault(_key(arguments), len(requests))
            requests.append(request)
        if parallel(requests):
            self._batch = (keyed, self.runner.start_all(requests))

    def handle(self, arguments: dict[str, Any], limit: int) -> ToolOutcome:
        room = max(0, limit - SETTINGS.subagents.report_note_chars)
        if self._batch is not None and _key(arguments) in self._batch[0]:
            keyed, batch = self._batch
            run, report = batch.result(keyed[_key(arguments)])
        else:
            run, report = self.runner.run(read_task_request(arguments, self.catalog))
        return result_text(run, report, room, len)


def _key(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True)
