"""A subagent as an agent of its own: the same loop, budget, compaction and breaker as the parent's,
a fresh conversation, and the parent's tools, approvals and sandbox as its type allows.

This is the one module of ``subagents/`` that knows the loop (``run_turn``, its events and how a
turn ends); the rest talks to a child through :class:`runner.Child`.
"""

from __future__ import annotations

import datetime
import platform
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mini_letta import resources
from mini_letta.loop.agent import CACHE_BREAK, REPEATED_FAILURE_LIMIT, Agent, AgentEvents, TurnInterrupted
from mini_letta.conversation import Conversation
from mini_letta.cost import Spend
from mini_letta.errors import SessionError
from mini_letta.subagents.definitions import SUMMARIZER, AgentType
from mini_letta.subagents.runner import DONE, STEP_LIMIT, ChildEnd, SubagentRun, TaskRequest
from mini_letta.subagents.transcript import NestedWriter

SYSTEM_PROMPT = "subagent_system"
# Spend of children side by side is added to the parent's one at a time.
_SPEND_LOCK = threading.Lock()


class ChildAgent(Agent):
    """An agent whose system prompt is its type's, with the workspace and its instructions."""

    def __init__(self, *, agent_prompt: str, **options: Any):
        self.agent_prompt = agent_prompt
        super().__init__(**options)

    def system_parts(self, compact: bool | None = None) -> tuple[str, str]:
        values = {"agent_prompt": self.agent_prompt, "workspace": str(self.workspace),
                  "platform": platform.system(), "date": datetime.date.today().isoformat(),
                  "instructions": self.instructions}
        text = resources.prompt(SYSTEM_PROMPT)
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        stable, _, volatile = text.partition(CACHE_BREAK)
        return stable, volatile.rstrip() + "\n"


@dataclass
class Parent:
    """What a child is made from: the parent's parts, never the parent agent. ``provider()`` is the
    parent's provider now (it follows /model); ``build(provider, budget, **options)`` is the builder
    that made the parent; ``provider_for(model)`` a provider of another model (None when there is
    none); ``budget_for(provider)`` a fresh budget (the parent's window for the parent's model)."""

    workspace: Path
    provider: Callable[[], Any]
    toolbox: Any
    build: Callable[..., Agent]
    provider_for: Callable[[str], Any]
    budget_for: Callable[[Any], Any]
    session: Callable[[], Any]
    spend: Callable[[], Spend]
    notice: Callable[[str], None]
    instructions: str = ""
    summarizer_model: str | None = None

    def model_for(self, request: TaskRequest) -> str | None:
        """The model the child runs on, None for the parent's own."""
        model = request.model or request.agent.model
        if model == SUMMARIZER:
            model = self.summarizer_model or "inherit"
        return None if model in ("inherit", self.provider().model) else model


class AgentChild:
    """:class:`runner.Child` over a :class:`ChildAgent`."""

    def __init__(self, parent: Parent, request: TaskRequest, run: SubagentRun,
                 on_progress: Callable[[SubagentRun], None], lock: threading.Lock):
        self.parent = parent
        self.run = run
        self.on_progress = on_progress
        provider = parent.provider()
        model = parent.model_for(request)
        if model is not None:
            other = parent.provider_for(model)
            if other is None:
                parent.notice(f"The subagent {request.agent.name} runs on {provider.model}: "
                              f"{model} is not available on {provider.name}.")
            else:
                provider = other
        budget = parent.budget_for(provider)
        writer = parent.session()
        session = None if writer is None else NestedWriter(
            writer, run.id, {"agent": request.agent.name, "description": request.description,
                             "provider": provider.name, "model": provider.model}, lock)
        self.agent = parent.build(provider, budget, agent_class=ChildAgent, agent_prompt=request.agent.prompt,
                                  instructions=parent.instructions, session=session, conversation=Conversation(),
                                  max_steps=request.max_steps, summarizer_model=parent.summarizer_model)
        _fit_toolbox(self.agent.toolbox, parent.toolbox, request.agent)
        run.model, run.window = provider.model, budget.window

    def work(self, prompt: str, stop: threading.Event) -> ChildEnd:
        spend_before = self.agent.spend.snapshot()
        try:
            result = self.agent.run_turn(prompt, _Events(self, stop))
        except TurnInterrupted:
            raise KeyboardInterrupt from None
        finally:
            self._account(spend_before)
        if result.stopped == "max_turns":
            return ChildEnd(STEP_LIMIT, result.text)
        if result.stopped == "done":
            return ChildEnd(DONE, result.text)
        # Cut at its reply limit, refused, filtered, or repeating a failing call: the parent must
        # not take a fragment for the whole report.
        why = (f"it repeated the same failing tool call {REPEATED_FAILURE_LIMIT} times"
               if result.stopped == "repeated_failure" else result.stop_detail or result.stopped)
        return ChildEnd(DONE, "\n".join(filter(None, [f"[The subagent's work ended early: {why}]", result.text])))

    def update(self) -> None:
        spend = self.agent.spend
        self.run.tokens = spend.usage.prompt_tokens + spend.usage.output_tokens
        self.run.cost_usd = spend.usd
        self.run.compactions = len(self.agent.compactions)
        self.run.context_tokens = self.agent.context_tokens()
        self.on_progress(self.run)

    def _account(self, before: Spend) -> None:
        self.update()
        spent = self.agent.spend.since(before)
        with _SPEND_LOCK:
            self.parent.spend().merge(spent)

    def finished(self) -> None:
        session = self.agent.session
        if isinstance(session, NestedWriter):
            try:
                session.end(self.run.to_json())
            except SessionError:
                pass  # the child's loop said so when its own writes failed


def _fit_toolbox(toolbox, source, agent: AgentType) -> None:
    """The child's toolbox made the parent's as its type allows: the parent's permissions (so an
    "always" answer holds for both) and checkpoint recorder (so /rewind covers what the child
    changed), only the tools its type selects, and the parent's MCP tools it selects."""
    toolbox.permissions = source.permissions
    toolbox.watch_changes = source.watch_changes
    for spec in toolbox.specs():
        if not agent.selects(spec.name):
            toolbox.unregister(spec.name)
    for spec in source.specs():
        if spec.name.startswith("mcp__") and agent.selects(spec.name):
            source.share(spec.name, toolbox)


class _Events(AgentEvents):
    """The child's loop events: its progress, and the place where a stop is honoured."""

    def __init__(self, child: AgentChild, stop: threading.Event):
        self.child = child
        self.stop = stop
        self.at_limit = False

    def _check(self) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt

    def waiting_for_model(self) -> None:
        self._check()
        self.child.update()

    def text(self, delta: str) -> None:
        self._check()

    def tool_call(self, call, description: str) -> None:
        self._check()
        self.child.update()  # the reply's usage is counted by now

    def assistant_message(self, message) -> None:
        self.child.run.steps += 1

    def compaction_finished(self, record) -> None:
        self.child.update()

    def go_on(self, steps: int) -> bool:
        """No one is asked: a subagent stops at its limit, and its result says so."""
        self.at_limit = True
        return False

    def notice(self, text: str) -> None:
        if not self.at_limit:  # the loop's "send a message to go on" is not for the user here
            self.child.parent.notice(f"Subagent {self.child.run.agent}: {text}")
