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
from typing import Any, Protocol

from mini_letta import resources
from mini_letta.context import ContextBudget
from mini_letta.conversation import Conversation
from mini_letta.cost import Spend
from mini_letta.errors import SessionError
from mini_letta.loop.agent import Agent, AgentEvents, TurnInterrupted
from mini_letta.loop.prompt import CACHE_BREAK, Prompt
from mini_letta.loop.state import SessionState
from mini_letta.notices import prefixed
from mini_letta.settings import SETTINGS
from mini_letta.subagents.definitions import SUMMARIZER
from mini_letta.subagents.runner import DONE, STEP_LIMIT, ChildEnd, SubagentRun, TaskRequest
from mini_letta.subagents.shared_tools import SEARCH_TOOL, share_mcp_tools
from mini_letta.subagents.transcript import NestedWriter
from mini_letta.wording import counted

SYSTEM_PROMPT = "subagent_system"
# Spend of children side by side is added to the parent's one at a time.
_SPEND_LOCK = threading.Lock()


class ChildPrompt(Prompt):
    """A system prompt that is the subagent type's, with the workspace and its instructions (and
    the core memory, for a type whose file names a memory tool)."""

    agent_prompt = ""

    def parts(self, compact: bool | None = None) -> tuple[str, str]:
        values = {"agent_prompt": self.agent_prompt, "workspace": str(self.workspace),
                  "platform": platform.system(), "date": datetime.date.today().isoformat(),
                  "instructions": self.instructions, "core_memory": self.core_memory(compact)}
        text = resources.prompt(SYSTEM_PROMPT)
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        stable, _, volatile = text.partition(CACHE_BREAK)
        return stable, volatile.rstrip() + "\n"


def typed_prompt(agent_prompt: str) -> type[ChildPrompt]:
    """The prompt class of a subagent type whose own prompt is ``agent_prompt`` (``assemble``'s
    ``prompt_class``)."""
    return type("TypedChildPrompt", (ChildPrompt,), {"agent_prompt": agent_prompt})


class Parent(Protocol):
    """What the subagents room sees of the agent that starts children: these attributes, read when
    a task call runs (the provider follows /model, the session /clear), never the loop itself.
    ``Agent`` has them; ``mcp`` is the MCP room's ``McpTools`` or None."""

    workspace: Path
    provider: Any
    budget: Any
    toolbox: Any
    session: Any
    spend: Spend
    instructions: str
    summarizer_model: str | None
    hooks: Any
    memory: Any


@dataclass(frozen=True)
class Builders:
    """What ``app`` gives the room to build children with. ``assemble`` is ``app.assemble``;
    ``make_budget(provider, auto_compact)`` a budget for another model; ``provider_for(current,
    model)`` a provider of ``model`` beside ``current`` (None when there is none)."""

    assemble: Callable[..., Agent]
    make_budget: Callable[[Any, bool], Any]
    provider_for: Callable[[Any, str], Any]
    notice: Callable[[str], None]


def model_for(parent: Parent, request: TaskRequest) -> str | None:
    """The model the child runs on, None for the parent's own."""
    model = request.model or request.agent.model
    if model == SUMMARIZER:
        model = parent.summarizer_model or "inherit"
    return None if model in ("inherit", parent.provider.model) else model


def budget_for(parent: Parent, provider, builders: Builders):
    """A fresh budget: the parent's window as it stands (one learned from a rejection included)
    for the parent's model; calibration and the floor's form the child learns for itself."""
    if provider is not parent.provider:
        return builders.make_budget(provider, parent.budget.auto_compact)
    return ContextBudget(parent.budget.counter, parent.budget.window_info, auto_compact=parent.budget.auto_compact,
                         floor_counter=getattr(provider, "served_floor", None))


class AgentChild:
    """:class:`runner.Child` over an agent with its type's :class:`ChildPrompt`, built by
    ``builders.assemble`` with every part given at construction: the parent's approver, sandbox,
    permissions (an "always" answer holds for both), checkpoint recorder (/rewind covers what the
    child changed) and added folders, and only the tools its type selects; then the parent's MCP
    tools it selects."""

    def __init__(self, parent: Parent, builders: Builders, request: TaskRequest, run: SubagentRun,
                 on_progress: Callable[[SubagentRun], None], lock: threading.Lock, delegation: Any = None):
        self.parent = parent
        self.builders = builders
        self.run = run
        self.on_progress = on_progress
        provider = parent.provider
        model = model_for(parent, request)
        if model is not None:
            other = builders.provider_for(provider, model)
            if other is None:
                builders.notice(f"The subagent {request.agent.name} runs on {provider.model}: "
                                f"{model} is not available on {provider.name}.")
            else:
                provider = other
        budget = budget_for(parent, provider, builders)
        writer = parent.session
        session = None if writer is None else NestedWriter(
            writer, run.id, {"agent": request.agent.name, "description": request.description,
                             "provider": provider.name, "model": provider.model}, lock)
        agent, source = request.agent, parent.toolbox
        self.agent = builders.assemble(
            provider, budget, parent.workspace, approver=source.approver, sandbox=source.sandbox,
            permissions=source.permissions, watch_changes=source.watch_changes, add_dirs=source.ws.added,
            tools=lambda name: agent.selects(name) or name == SEARCH_TOOL,
            memory=parent.memory if agent.edits_memory else None, subagents=delegation,
            state=SessionState(session, Conversation()), hooks=parent.hooks.for_subagent(), prices=parent.spend.table,
            prompt_class=typed_prompt(agent.prompt), instructions=parent.instructions,
            max_steps=request.max_steps, summarizer_model=parent.summarizer_model,
            say=prefixed(builders.notice, f"Subagent {run.agent}"))
        share_mcp_tools(getattr(parent, "mcp", None), source, self.agent.toolbox, agent.selects, budget.window,
                        budget.counter.count_tools)
        run.model, run.window = provider.model, budget.window

    def work(self, prompt: str, stop: threading.Event) -> ChildEnd:
        spend_before = self.agent.spend.snapshot()
        try:
            result = self.agent.run_turn(prompt, _Events(self, stop))
        except TurnInterrupted:
            raise KeyboardInterrupt from None
        finally:
            self._account(spend_before)
        text = "\n".join(filter(None, [result.text, self._end_background()]))
        if result.stopped == "max_turns":
            return ChildEnd(STEP_LIMIT, text)
        if result.stopped == "done":
            return ChildEnd(DONE, text)
        # Cut at its reply limit, refused, filtered, or repeating a failing call: the parent must
        # not take a fragment for the whole report.
        why = (f"it repeated the same failing tool call {SETTINGS.loop.repeated_failure_limit} times"
               if result.stopped == "repeated_failure" else result.stop_detail or result.stopped)
        return ChildEnd(DONE, "\n".join(filter(None, [f"[The subagent's work ended early: {why}]", text])))

    def _end_background(self) -> str:
        """Stop the background commands the child started: no one could read or stop them once it
        has ended (the parent's ``bash_output`` knows only its own). A line for its report, or ""."""
        stopped = self.agent.toolbox.background.close()
        if not stopped:
            return ""
        return (f"[{counted(stopped, 'background command')} the subagent started "
                f"{'was' if stopped == 1 else 'were'} stopped when it ended]")

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
            self.parent.spend.merge(spent)

    def finished(self) -> None:
        self.agent.toolbox.background.close()  # interrupted or failed, work() did not get to it
        self.agent.toolbox.background.forget()
        session = self.agent.session
        if isinstance(session, NestedWriter):
            try:
                session.end(self.run.to_json())
            except SessionError:
                pass  # the child's loop said so when its own writes failed


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
            self.child.agent.say(text)
