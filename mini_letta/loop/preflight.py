"""Before every provider call: does the request fit, and how big may the reply be?

The agent loop asks :class:`Preflight` for each request; this module decides, from the context
budget, whether the floor fits, whether to compact first, how many tokens the reply may take, and
when a request is refused instead of sent. It also turns what a server's rejection states (its
count of the request, its window) into what the next request is sized with.

The host is the agent, seen through :class:`PreflightHost` (this module never imports the agent).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from mini_letta.compaction.ahead import AheadOfTime
from mini_letta.compaction.controller import CompactionController, CompactionRecord
from mini_letta.context.budget import ContextBudget, ContextState
from mini_letta.context.floor import FloorForm
from mini_letta.context.threshold import output_reserve
from mini_letta.conversation import Conversation
from mini_letta.errors import ContextFullError, ContextOverflowError, FloorTooHighError
from mini_letta.messages import Message, ToolSpec
from mini_letta.providers.base import Provider, Request
from mini_letta.settings import SETTINGS


class PreflightHost(Protocol):
    """What the preflight needs from the agent."""

    budget: ContextBudget
    provider: Provider
    conversation: Conversation
    ahead: AheadOfTime
    compactor: CompactionController

    floor_form: FloorForm

    def system_prompt(self) -> str: ...
    def compact_floor(self) -> bool: ...
    def system_parts(self) -> tuple[str, str]: ...
    def tool_specs(self) -> list[ToolSpec]: ...
    def cache_key(self) -> str | None: ...
    def notice(self, text: str) -> None: ...
    def remember_window(self, limit: int) -> None: ...
    def run_compaction(self, run: Callable[[str | None], CompactionRecord | None], trigger: str,
                       focus: str | None = None) -> CompactionRecord | None: ...


class Preflight:

    def __init__(self, host: PreflightHost):
        self.host = host

    def request(self, trigger: str = "context_pressure") -> Request:
        """The next request, after compacting when it is over the threshold; raises
        FloorTooHighError or ContextFullError (nothing sent) when it cannot be made to fit."""
        host, budget = self.host, self.host.budget
        system, tools = host.system_prompt(), host.tool_specs()
        floor = self._check_floor(system, tools)
        if host.compact_floor() and not host.floor_form.announced:
            host.floor_form.announced = True
            host.notice(host.floor_form.describe(budget.window, floor))
        tokens = self.size(system, tools)
        if budget.should_compact(tokens):
            plan = host.ahead.take(host.conversation.messages)
            if plan is not None and host.run_compaction(
                    lambda focus: host.compactor.apply_prepared(host.conversation, plan, trigger), trigger):
                system = host.system_prompt()
                tokens = self.size(system, tools)
        if budget.should_compact(tokens):
            try:
                host.run_compaction(lambda focus: host.compactor.before_request(
                    host.conversation, tokens=tokens, focus=focus, trigger=trigger), trigger)
            except ContextFullError:
                # Compaction could not help, but the request may still fit with a shorter reply.
                if budget.reply_budget(tokens) < self.useful_reply():
                    raise
            system = host.system_prompt()
            tokens = self.size(system, tools)
        state = budget.state(tokens)
        max_tokens = budget.reply_budget(tokens)
        # Over the threshold, the reply budget shrinks to what the window has left, down to a
        # useful answer's worth, before the turn is refused (with automatic compaction off, the
        # blocked level is where the user chooses, so it refuses there).
        blocked = state.level == "blocked" and (not budget.auto_compact or max_tokens < self.useful_reply())
        if blocked or max_tokens < SETTINGS.min_reply_tokens:
            raise ContextFullError(self._blocked_message(state, max_tokens))
        return Request(system=system, messages=list(host.conversation.messages), tools=tools,
                       max_tokens=max_tokens, cache_key=host.cache_key(),
                       system_stable_chars=self.stable_chars(system))

    def size(self, system: str, tools: list[ToolSpec]) -> int:
        """The next request's size without its reply, the usage-anchored estimate: what ``request``
        sizes it with and what ``learn_from_rejection`` judges by, so that a rejection called
        explained is explained by the figure the next request is sized with."""
        return self.host.budget.estimate(system, tools, self.host.conversation).total

    def stable_chars(self, system: str) -> int:
        """How much of ``system`` is its stable part (0 when the host builds the prompt otherwise)."""
        stable = self.host.system_parts()[0]
        return len(stable) if stable and system.startswith(stable) and stable != system else 0

    def refuse_if_too_big(self, message: Message) -> None:
        """Refuse, before anything is sent or compacted, a message that could not fit even with the
        whole history compacted away (the caller withdraws it: kept in the session record, out of
        the context)."""
        budget = self.host.budget
        floor = self._check_floor(self.host.system_prompt(), self.host.tool_specs())
        size = budget.count_message_calibrated(message)
        room = budget.limit - floor
        if size > room:
            raise ContextFullError(
                f"Your message is about {size:,} tokens, more than the {max(0, room):,} that this model's "
                f"{budget.window:,}-token window leaves for messages after the system prompt and tools; "
                f"it was not sent and is not part of the conversation. Send a shorter message, or a part of it.")

    def learn_from_rejection(self, error: ContextOverflowError, request: Request) -> bool:
        """What a rejection says is better than what we assumed: the server's own count of the
        request teaches the tokenizer ratio, and the limit it names becomes the window (saved with
        the session, so a resumed session starts with it). True when what was learned explains the
        rejection: the next ``request()``, sized with the same ``size``, compacts or gives the reply
        less room than the rejected request had, so the same request is never sent again. False when
        the caller should compact."""
        host, budget = self.host, self.host.budget
        if error.actual:
            budget.observe_request(error.actual, request.system, request.tools,
                                   budget.count_messages(request.messages), weight=1.0)
        limit = error.limit
        if limit and budget.learn_window(limit):
            host.notice(f"The server's context window is {limit:,} tokens (learned from its rejection); "
                        f"mini-letta uses that from now on.")
            host.remember_window(limit)
        # Judged with the estimate the next request is sized with (usage-anchored), not a count of
        # the whole request: where the two disagreed, a rejection was "explained" while the next
        # request was sized as fitting, and the same request was sent again. A smaller reply budget
        # also means a compaction first when the request is over the threshold.
        size = self.size(host.system_prompt(), host.tool_specs())
        return budget.reply_budget(size) < request.max_tokens

    def useful_reply(self) -> int:
        """The smallest reply budget still worth sending a request for."""
        return min(SETTINGS.useful_reply_tokens, output_reserve(self.host.budget.window))

    def _check_floor(self, system: str, tools: list[ToolSpec]) -> int:
        # As the server counts it: a template that leaves out the tool schemas (SmolLM2 under
        # llama.cpp) makes the floor far smaller than our tokenizer's count of it.
        floor = self.host.budget.floor_calibrated(system, tools)
        problem = self.host.budget.floor_problem(floor, self.host.provider.name)
        if problem:
            raise FloorTooHighError(problem)
        return floor

    def _blocked_message(self, state: ContextState, max_tokens: int) -> str:
        how = ("automatic compaction is off (CODEAGENT_DISABLE_COMPACT is set)"
               if not self.host.budget.auto_compact else
               f"compaction could not free enough room (a reply would have {max_tokens:,} tokens)")
        # /compact is the way out that automatic compaction being off leaves open: say that it works.
        works = " (it works with automatic compaction off)" if not self.host.budget.auto_compact else ""
        return (f"Context is full ({state.tokens:,} of {state.window:,} tokens) and {how}; the request was not "
                f"sent and your message is not kept in the conversation. Use /compact to summarise the "
                f"conversation{works}, /clear to start a new session, or a model with a larger window.")
