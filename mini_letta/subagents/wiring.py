"""The ``task`` tool wired for an agent, through arguments at construction.

``app.assemble`` is given a :class:`Delegation` (``subagents=``). Once it has built the agent it
asks for the agent's :class:`Runner` (``runner(parent)``, with the agent itself as ``parent``,
seen only as :class:`child.Parent`), gives it to the agent (``Agent.subagents``) and offers the
``task`` tool in the agent's toolbox (``offer``). A child is built by the same ``assemble`` with
its parts as arguments (``child.AgentChild``), and a :class:`Delegation` of its own one level
down when its type may delegate and the depth allows it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from mini_letta.settings import SETTINGS
from mini_letta.subagents.catalog import Catalog, load_catalog
from mini_letta.subagents.child import AgentChild, Builders, Parent
from mini_letta.subagents.runner import Runner, SubagentRun, TaskRequest
from mini_letta.subagents.tool import TaskTool


class Delegation:
    """Subagents for one agent at ``depth`` (0: the user's agent). ``catalog`` None loads the
    types from ``home`` and ``workspace``, its notices said through ``builders.notice``;
    ``forward``: told of every change of a run too (a child's runs reach the REPL's line)."""

    def __init__(self, home: Path, workspace: Path, builders: Builders, catalog: Catalog | None = None,
                 depth: int = 0, forward: Callable[[SubagentRun], None] | None = None):
        self.home = home
        self.workspace = workspace
        self.builders = builders
        if catalog is None:
            catalog = load_catalog(home, workspace)
            for text in catalog.notices:
                builders.notice(text)
        self.catalog = catalog
        self.depth = depth
        self.forward = forward

    def runner(self, parent: Parent) -> Runner:
        """The runner of ``parent``'s children; what a child takes of ``parent`` (its provider,
        budget, session) is read when a task call runs, so it follows /model and /clear."""
        lock = threading.Lock()  # shared by the NestedWriters of this agent's children

        def start(request: TaskRequest, run: SubagentRun) -> AgentChild:
            return AgentChild(parent, self.builders, request, run, runner.on_progress, lock,
                              self.below(request, runner))

        runner = Runner(self.catalog, start, listeners=[self.forward] if self.forward else [])
        return runner

    def below(self, request: TaskRequest, runner: Runner) -> Delegation | None:
        """The child's own delegation: only for a type whose file names ``task``, above the limit."""
        if not request.agent.may_delegate or self.depth + 1 >= SETTINGS.subagents.max_depth:
            return None
        return Delegation(self.home, self.workspace, self.builders, self.catalog, self.depth + 1,
                          forward=runner.on_progress)

    def offer(self, parent: Parent, runner: Runner) -> None:
        """The ``task`` tool in the built agent's toolbox, its listing sized to the window it has now."""
        TaskTool(self.catalog, runner, lambda: parent.budget.window,
                 lambda text: parent.budget.counter.count_text(text)).register(parent.toolbox)
