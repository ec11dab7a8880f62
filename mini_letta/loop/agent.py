"""The agent loop: a user turn is a series of steps (preflight → model → tools) until the model stops.

Before every provider call, tool-loop rounds included, the preflight checks the floor (system
prompt, core memory and tool schemas alone must fit), asks the compactor to act when the request
is over the threshold, and refuses to send a request that still cannot fit. A provider's context
overflow goes to the compactor's overflow path and the step is retried (the compactor bounds the
retries). Ctrl-C (KeyboardInterrupt) at any point leaves a valid history: partial text is kept and
every tool call gets a result.

The loop knows nothing about terminals; it reports through an :class:`AgentEvents` object.
"""

from __future__ import annotations

import dataclasses
import datetime
import platform
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mini_letta import endings, resources
from mini_letta.wording import counted
from mini_letta.compaction import CompactionController, CompactionRecord, SummaryUnavailable
from mini_letta.compaction.acceptance import check_ending
from mini_letta.compaction.ahead import AheadOfTime
from mini_letta.compaction.controller import CompactionPlan
from mini_letta.compaction.layers import head_summary
from mini_letta.compaction.summarizer import QuotedFormNeeded
from mini_letta.context import ContextBudget, ContextState
from mini_letta.context.floor import COMPACT_PROMPT, FULL_PROMPT, FloorForm, compact_specs
from mini_letta.loop import preflight
from mini_letta.loop.state import SessionState
from mini_letta.cost import PriceTable, Spend, builtin_prices
from mini_letta.loop.cut_replies import CutReplies
from mini_letta.conversation import Conversation
from mini_letta.errors import (ContextFullError, ContextOverflowError, FloorTooHighError, ProviderError,
                               SessionError, StreamBrokenError)
from mini_letta.hooks import Hooks, describe_failure
from mini_letta.messages import Message, ToolCall, ToolSpec, Usage, new_id
from mini_letta.providers.base import Done, Provider, Request, Retrying, TextDelta, ToolCallStarted, complete
from mini_letta.toolbox import Toolbox, ToolOutcome
from mini_letta.toolbox.outcome import fit_tokens
from mini_letta.toolbox.registry import MIN_OUTPUT_CHARS
from mini_letta.settings import SETTINGS

MAX_TOOL_CALLS_PER_REPLY = 32
REPEATED_FAILURE_LIMIT = 3
# Where the system prompt template stops being the same for the whole session.
CACHE_BREAK = "{{cache_break}}"


class AgentEvents:
    """What the loop reports. The REPL and the headless runner override what they show."""

    def waiting_for_model(self) -> None: ...
    def retrying(self, text: str) -> None: ...
    def text(self, delta: str) -> None: ...
    def tool_call_started(self, call_id: str, name: str) -> None: ...
    def tool_call(self, call: ToolCall, description: str) -> None: ...
    def tool_result(self, call: ToolCall, outcome: ToolOutcome) -> None: ...
    def assistant_message(self, message: Message) -> None: ...
    def compaction_started(self, trigger: str) -> None: ...
    def compaction_finished(self, record: CompactionRecord) -> None: ...
    def notice(self, text: str) -> None: ...
    def go_on(self, steps: int) -> bool:
        """The turn made ``steps`` model calls, its limit: True to allow as many again (the REPL asks)."""
        return False


class TurnInterrupted(Exception):
    """The user pressed Ctrl-C; the history was left valid and nothing said so far was lost."""


@dataclass
class TurnResult:
    text: str
    steps: int
    # "done", "max_turns", "repeated_failure", or how an incomplete reply ended ("max_tokens",
    # "refusal", "content_filter", "cut": mini_letta/endings.py)
    stopped: str
    usage: Usage = field(default_factory=Usage)
    stop_detail: str = ""  # the incomplete ending in plain words, as the notice said it
    compactions: list[CompactionRecord] = field(default_factory=list)
    # Every model call of the turn, the summarizer's included.
    spend: Spend | None = None


@dataclass
class ContextPoint:
    """One row of the per-turn usage history shown by /context."""

    turn: int
    tokens: int
    window: int
    compacted: bool
    manual: bool = False  # a /compact between turns, after turn ``turn``


class Agent:
    def __init__(self, *, provider: Provider, toolbox: Toolbox, budget: ContextBudget,
                 compactor_factory: Callable[[Agent], CompactionController], workspace: Path,
                 memory: Any = None, instructions: str = "", state: SessionState | None = None,
                 max_steps: int = 100, summarizer_model: str | None = None, hooks: Hooks | None = None,
                 prices: PriceTable | None = None, checkpoints: Any = None, skills: Any = None,
                 subagents: Any = None):
        self.provider = provider
        self.toolbox = toolbox
        self.budget = budget
        self.workspace = workspace
        self.memory = memory
        self.instructions = instructions
        self.state = state or SessionState()
        self.max_steps = max_steps
        self.summarizer_model = summarizer_model
        self.hooks = hooks or Hooks(workspace=workspace)
        self.usage_total = Usage()
        self.spend = Spend(prices or builtin_prices())
        self.history: list[ContextPoint] = []
        self._session_failed = False
        self._events: AgentEvents = AgentEvents()
        self.checkpoints = checkpoints  # checkpoints.Checkpoints, or None: nothing recorded
        # skills.SkillSet, or None: it answers with values (the list, typed and re-attached
        # skills) and never calls back here.
        self.skills = skills
        self.subagents = subagents  # subagents.runner.Runner (the task tool's), or None
        self._compactor_factory = compactor_factory
        self.compactor = compactor_factory(self)
        # One summarizer call at a time: a summary prepared in the background and a foreground one
        # never overlap (a server of one slot would queue them anyway, and the user pays twice).
        self._summary_lock = threading.Lock()
        self.floor_form = FloorForm()
        self.ahead = AheadOfTime(lambda messages: self.compactor.prepare(messages),
                                 key=lambda: (self.provider.model, self.summarizer_model, self.budget.window,
                                              self.budget.threshold))

    def reset(self, session: Any, conversation: Conversation | None = None) -> None:
        """Start afresh (``/clear``), or go on with another session's ``conversation`` (``/resume``):
        new session record, same provider and memory."""
        self.state.session = session
        self.state.conversation = conversation or Conversation()
        self.usage_total = Usage()
        self.spend = Spend(self.spend.table)
        self.history = []
        self._session_failed = False
        self.ahead.cancel()
        self.compactor = self._compactor_factory(self)

    @property
    def session(self) -> Any:
        return self.state.session

    @session.setter
    def session(self, session: Any) -> None:
        self.state.session = session

    @property
    def conversation(self) -> Conversation:
        return self.state.conversation

    @conversation.setter
    def conversation(self, conversation: Conversation) -> None:
        self.state.conversation = conversation

    @property
    def turns(self) -> int:
        return self.state.turns

    @property
    def compactions(self) -> list[CompactionRecord]:
        """The compactions of this session that changed something (the compactor keeps them)."""
        return self.compactor.records

    # -- the request -----------------------------------------------------------------------------
    def system_prompt(self) -> str:
        return "".join(self.system_parts())

    def system_parts(self, compact: bool | None = None) -> tuple[str, str]:
        """The system prompt as (stable, volatile): the fixed instructions, the same for the whole
        session, then what changes (the date, core memory, project instructions). A provider with
        explicit cache breakpoints caches the stable part on its own, so a memory edit does not
        rewrite it. ``compact``: the floor's compact form (``context/floor.py``), by default when
        the window calls for it."""
        compact = self.compact_floor() if compact is None else compact
        values = {
            "workspace": str(self.workspace),
            "date": datetime.date.today().isoformat(),
            "platform": platform.system(),
            "core_memory": self.core_memory_text(compact),
            "instructions": self.instructions,
            "skills": self.skills_list(compact),
        }
        text = resources.prompt(COMPACT_PROMPT if compact else FULL_PROMPT)
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        stable, _, volatile = text.partition(CACHE_BREAK)
        return stable, volatile.rstrip() + "\n"

    def skills_list(self, compact: bool | None = None) -> str:
        """The skills' names and descriptions for the system prompt, within their share of the
        window (names only in the compact floor); empty without skills."""
        if self.skills is None:
            return ""
        compact = self.compact_floor() if compact is None else compact
        text = self.skills.listing(self.budget.window, self.budget.counter.count_text, compact=compact).text
        return text + "\n" if text else ""

    def cache_key(self) -> str | None:
        """The session's id: every request of a session shares it (a prompt-cache routing key)."""
        return getattr(self.session, "id", None)

    def core_memory_text(self, compact: bool | None = None) -> str:
        if self.memory is None:
            return ""
        return self.memory.render(compact=self.compact_floor() if compact is None else compact)

    def tool_specs(self) -> list[ToolSpec]:
        specs = self.toolbox.specs()
        return compact_specs(specs, self.budget.window) if self.compact_floor() else specs

    def compact_floor(self) -> bool:
        """Whether the usual floor would crowd this window, so its compact form is sent."""
        return self.floor_form.compact(self.budget.window, lambda: self.budget.calibration.floor_calibrated(
            "".join(self.system_parts(compact=False)), self.toolbox.specs()))

    def measure(self, messages: list[Message]) -> int:
        """Whole-request tokens for a candidate message list (floor included), as the provider would
        count them (``ContextBudget.measure``: our counts calibrated)."""
        return self.budget.measure(self.system_prompt(), self.tool_specs(), messages)

    def context_tokens(self) -> int:
        """The current request size: provider usage first, local counts for what came after."""
        return preflight.size(self.budget, self.system_prompt(), self.tool_specs(), self.conversation)

    def context_state(self) -> ContextState:
        return self.budget.state(self.context_tokens())

    def tool_output_limit(self, tokens: bool = False) -> int:
        """What one tool output may keep now, in characters (or ``tokens``): sized to the room left
        (``ContextBudget.tool_output_token_limit``), read again before every call."""
        room = self.budget.tool_output_room(self.system_prompt(), self.tool_specs(), self.conversation)
        return self.budget.tool_output_token_limit(**room) if tokens else self.budget.tool_output_limit(**room)

    def tool_output_chars(self) -> int:
        """What one output may keep now, in characters, as the toolbox applies it (its floor included):
        for what the user adds without a tool call (``!command``, ``@path``)."""
        return max(MIN_OUTPUT_CHARS, self.tool_output_limit())

    def summarize(self, system: str, prompt: str, max_tokens: int) -> str:
        """The compactor's model call: one user message in, text out, no tools."""
        request = Request(system=system, messages=[Message.user(prompt)], tools=[], max_tokens=max_tokens,
                          model=self.summarizer_model, purpose="summary", cache_key=self.cache_key())
        with self._summary_lock:
            reply = complete(self.provider, request)
        self._account(request, reply.usage)
        check_ending(reply, max_tokens)
        return reply.text

    def _account(self, request: Request, usage: Usage | None) -> None:
        """What a model call cost, chat and summarizer calls alike: the session's spend and usage."""
        self.spend.add(request.model or self.provider.model, usage)
        if usage is not None:
            self.usage_total = self.usage_total + usage

    def summarize_in_conversation(self, messages: list[Message], instructions: str, max_tokens: int) -> str:
        """The compactor's model call when the summarizer is this model: the conversation as sent
        (same system prompt, tools and messages, so the provider reads it from its cache) and the
        instructions as a last user message. A reply with a tool call raises QuotedFormNeeded, an
        empty one SummaryUnavailable."""
        system = self.system_prompt()
        request = Request(system=system, messages=list(messages) + [Message.user(instructions)],
                          tools=self.tool_specs(), max_tokens=max_tokens, purpose="summary",
                          cache_key=self.cache_key(),
                          system_stable_chars=preflight.stable_chars(self.system_parts()[0], system))
        with self._summary_lock:
            reply = complete(self.provider, request)
        self._account(request, reply.usage)
        check_ending(reply, max_tokens)
        if reply.tool_calls:
            raise QuotedFormNeeded("the model called a tool instead of writing the summary")
        if not reply.text.strip():
            raise SummaryUnavailable("the summarizer returned an empty summary")
        return reply.text

    # -- one step's request -----------------------------------------------------------------------
    def next_request(self, trigger: str = "context_pressure") -> Request:
        """The request of the next step: the floor checked, the context compacted first when it is
        over the threshold (the one place automatic compaction runs before a request), the reply
        sized to what is left; raises FloorTooHighError or ContextFullError (nothing sent)."""
        budget = self.budget
        system, tools = self.system_prompt(), self.tool_specs()
        floor = preflight.check_floor(budget, system, tools, self.provider.name)
        if self.compact_floor() and not self.floor_form.announced:
            self.floor_form.announced = True
            self._events.notice(self.floor_form.describe(budget.window, floor))
        tokens = preflight.size(budget, system, tools, self.conversation)
        if budget.should_compact(tokens):
            plan = self.ahead.take(self.conversation.messages)
            if plan is not None and self.run_compaction(
                    lambda focus: self.compactor.apply_prepared(self.conversation, plan, trigger), trigger):
                system = self.system_prompt()
                tokens = preflight.size(budget, system, tools, self.conversation)
        if budget.should_compact(tokens):
            try:
                self.run_compaction(lambda focus: self.compactor.before_request(
                    self.conversation, tokens=tokens, focus=focus, trigger=trigger), trigger)
            except ContextFullError:
                # Compaction could not help, but the request may still fit with a shorter reply.
                if budget.reply_budget(tokens) < preflight.useful_reply(budget):
                    raise
            system = self.system_prompt()
            tokens = preflight.size(budget, system, tools, self.conversation)
        return preflight.sized_request(budget, tokens, system=system, tools=tools,
                                       messages=self.conversation.messages, cache_key=self.cache_key(),
                                       stable_chars=preflight.stable_chars(self.system_parts()[0], system))

    # -- one user turn ---------------------------------------------------------------------------
    def run_turn(self, text: str, events: AgentEvents | None = None) -> TurnResult:
        self._events = events or AgentEvents()
        self.compactor.guards.start_turn()
        message = Message.user(text)
        self._append(message)
        if self.checkpoints is not None:
            self.checkpoints.begin(message)
        try:
            floor = preflight.check_floor(self.budget, self.system_prompt(), self.tool_specs(), self.provider.name)
            preflight.refuse_if_too_big(self.budget, floor, message)
        except (ContextFullError, FloorTooHighError):
            self._withdraw(message)
            raise
        self._typed_skills(text)
        result = TurnResult(text="", steps=0, stopped="done")
        compactions_before = len(self.compactions)
        spend_before = self.spend.snapshot()
        failures: dict[tuple[str, str], int] = {}
        cuts = CutReplies()
        trigger = "context_pressure"
        rejections = 0
        limit = self.max_steps
        try:
            while True:
                if result.steps >= limit:
                    if self._events.go_on(result.steps):
                        limit += self.max_steps
                        continue
                    result.stopped = "max_turns"
                    self._events.notice(f"Stopped after {counted(result.steps, 'model call')} in one turn "
                                        f"(--max-turns {self.max_steps}); send a message to go on.")
                    break
                try:
                    request = self.next_request(trigger)
                    request.max_tokens = cuts.reply_budget(request.max_tokens,
                                                           lambda: self.budget.window - self.context_tokens())
                    trigger = "context_pressure"
                except ContextFullError:
                    if result.steps == 0:
                        # Nothing was sent: the message must not block every later turn from the
                        # context (the user still has it in the input history).
                        self._withdraw(message)
                    raise
                try:
                    reply = self._call_model(request)
                except ContextOverflowError as error:
                    rejections += 1
                    # learn_from_rejection says whether the next request is sized differently; the
                    # count is only a breaker (compact, at most MAX_OVERFLOW_RETRIES times).
                    window = preflight.learn_from_rejection(self.budget, error, request)
                    if window is not None:
                        self._events.notice(f"The server's context window is {window:,} tokens (learned from its "
                                            f"rejection); mini-letta uses that from now on.")
                        self.remember_window(window)
                    resized = preflight.explains(self.budget, self.context_tokens(), request)
                    if not resized or rejections > SETTINGS.resizes_per_turn:
                        self._compact_after_overflow(error)
                    # With a newly learned (always smaller) window the preflight decides again: it
                    # compacts if the context no longer fits (a compaction the rejection caused), and
                    # sizes the reply to what is left.
                    trigger = "context_overflow"
                    continue
                result.steps += 1
                self._record_reply(reply, request)
                result.text = reply.text
                if reply.usage is not None:
                    result.usage = result.usage + reply.usage
                verdict = cuts.review(reply, request.max_tokens)
                if verdict.notice:
                    self._events.notice(verdict.notice)
                if verdict.stop:
                    result.stopped, result.stop_detail = verdict.stop, verdict.notice or ""
                if not reply.tool_calls:
                    if not verdict.stop and not reply.text.strip():
                        self._events.notice("The model returned an empty reply.")
                    break
                if self._run_tools(reply, failures, verdict.not_run):
                    result.stopped = "repeated_failure"
                    self._events.notice(
                        f"Stopped: the model repeated the same failing tool call {REPEATED_FAILURE_LIMIT} times.")
                    break
                if verdict.stop:
                    break
        except KeyboardInterrupt:
            # Ctrl-C outside the model call and the tools (e.g. during compaction or approval).
            self._close_open_calls()
            raise TurnInterrupted() from None
        finally:
            result.compactions = self.compactions[compactions_before:]
            result.spend = self.spend.since(spend_before)
            self.history.append(ContextPoint(self.turns, self.context_tokens(), self.budget.window,
                                             bool(result.compactions)))
        return result

    def _close_open_calls(self) -> None:
        """Give every tool call still waiting for its result one, so the history stays sendable."""
        messages = self.conversation.messages
        answered = {m.tool_call_id for m in messages if m.role == "tool"}
        for message in reversed(messages):
            if message.role == "assistant":
                for call in message.tool_calls:
                    if call.id not in answered:
                        self._append(Message.tool_result(call, "Not run: the user interrupted.", is_error=True))
                break

    def _withdraw(self, message: Message) -> None:
        self.conversation.messages = [m for m in self.conversation.messages if m.id != message.id]
        self._persist(lambda: self.session.append_withdrawn(message.id))

    def _call_model(self, request: Request) -> Message:
        parts: list[str] = []
        try:
            if self.ahead.running and not getattr(self.provider, "serves_concurrently", True):
                self._events.notice("Waiting for the summary being prepared: this server answers one request at a time.")
                self.ahead.wait()
            self._events.waiting_for_model()
            for event in self.provider.stream(request):
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                    self._events.text(event.text)
                elif isinstance(event, ToolCallStarted):
                    self._events.tool_call_started(event.id, event.name)
                elif isinstance(event, Retrying):
                    self._events.retrying(event.describe())
                elif isinstance(event, Done):
                    return event.message
        except KeyboardInterrupt:
            self._keep_partial(parts)
            raise TurnInterrupted() from None
        except ProviderError as error:
            # A stream that broke off mid-reply: what the model already said stays in the history.
            self._keep_partial(parts, cut=isinstance(error, StreamBrokenError))
            raise
        self._keep_partial(parts)
        raise ProviderError(f"{self.provider.name} ended its reply without finishing it; please try again.",
                            provider=self.provider.name, retryable=True)

    def _keep_partial(self, parts: list[str], cut: bool = False) -> None:
        partial = "".join(parts)
        if partial:
            meta = {"interrupted": True, **({"stop_reason": endings.CUT} if cut else {})}
            self._append(Message.assistant(partial, meta=meta))

    def _record_reply(self, reply: Message, request: Request) -> None:
        seen: set[str] = set()
        for call in reply.tool_calls:
            # A call with no id (or a repeated one) could never be matched with its result.
            if not call.id or call.id in seen:
                call.id = new_id("call_")
            seen.add(call.id)
        floor = self.budget.calibration.floor(request.system, request.tools)
        served_floor = self.budget.calibration.served_floor(request.system, request.tools)
        # The anchor's usage includes the floor of its request; a later memory edit moves the floor,
        # and the estimate corrects for it with these figures.
        reply.meta["floor_tokens"] = floor
        reply.meta["floor_digest"] = self.budget.calibration.floor_digest(request.system, request.tools)
        if served_floor is not None:
            reply.meta["served_floor_tokens"] = served_floor
        local_messages = self.budget.count_conversation(request.messages)
        if reply.usage is not None:
            # Kept with the reply, so a resumed session starts with the ratio it had learned.
            reply.meta["local_prompt_tokens"] = floor + local_messages
        self._append(reply)
        self._events.assistant_message(reply)
        self._account(request, reply.usage)
        if reply.usage is not None:
            self.budget.calibration.observe_request(reply.usage.prompt_tokens, request.system, request.tools, local_messages)

    def _run_tools(self, reply: Message, failures: dict[tuple[str, str], int], not_run: dict[str, str]) -> bool:
        """Run every call of ``reply`` but those of ``not_run`` (they get its text as their result);
        True when the same failing call has now repeated too often."""
        repeated = False
        calls = reply.tool_calls
        self.toolbox.begin_reply([call for call in calls[:MAX_TOOL_CALLS_PER_REPLY] if call.id not in not_run])
        for index, call in enumerate(calls):
            if index >= MAX_TOOL_CALLS_PER_REPLY:
                outcome = ToolOutcome(f"Not run: more than {MAX_TOOL_CALLS_PER_REPLY} tool calls in one reply. "
                                      "Make fewer calls at a time.", is_error=True)
            elif call.id in not_run:
                outcome = ToolOutcome(not_run[call.id], is_error=True)
            else:
                try:
                    self._events.tool_call(call, self.toolbox.describe(call))
                    outcome = self.toolbox.run(call, self.tool_output_limit())
                except KeyboardInterrupt as interrupt:
                    # bash hands over what the command printed before it was stopped.
                    partial = getattr(interrupt, "outcome", None)
                    text = (partial.text + "\n" if partial is not None else "") + "Interrupted by the user."
                    self._append(Message.tool_result(call, text, is_error=True))
                    for rest in calls[index + 1:]:
                        self._append(Message.tool_result(rest, "Not run: the user interrupted.", is_error=True))
                    raise TurnInterrupted() from None
            outcome = self._cap_tokens(outcome, call)
            self._append(Message.tool_result(call, outcome.text, is_error=outcome.is_error))
            self._events.tool_result(call, outcome)
            if index >= MAX_TOOL_CALLS_PER_REPLY or call.id in not_run:
                continue  # not run, so not a failure of the call itself
            key = (call.name, call.arguments)
            if outcome.is_error:
                failures[key] = failures.get(key, 0) + 1
                repeated = repeated or failures[key] >= REPEATED_FAILURE_LIMIT
            else:
                failures.pop(key, None)
        return repeated

    def _cap_tokens(self, outcome: ToolOutcome, call: ToolCall) -> ToolOutcome:
        """The output as it may enter the context: at most the room left before the threshold less
        a reply (``ContextBudget.tool_output_token_limit``), counted as the provider counts."""
        limit = self.tool_output_limit(tokens=True)
        text = fit_tokens(outcome.text, limit, self.budget.count_text_calibrated,
                          reader="read_file" if call.name == "read_file" else None)
        return outcome if text is outcome.text else dataclasses.replace(outcome, text=text)

    # -- compaction ------------------------------------------------------------------------------
    def compact_now(self, focus: str | None = None, events: AgentEvents | None = None) -> CompactionRecord:
        """``/compact [focus]``: always allowed, whatever the automatic setting."""
        if events is not None:
            self._events = events
        record = self.run_compaction(lambda combined: self.compactor.manual(self.conversation, combined), "manual", focus)
        assert record is not None
        if record.layers:  # /context marks every compaction, this one too
            self.history.append(ContextPoint(self.turns, self.context_tokens(), self.budget.window, True, manual=True))
        return record

    def prepare_compaction(self) -> bool:
        """While the user types: start preparing the automatic compaction's summary in the background
        once the context passes ``SETTINGS.ahead_early_ratio`` of the threshold. Not when automatic compaction is off
        or paused, nor with automatic PreCompact hooks (their instructions belong to the moment of
        compaction). True when a preparation started."""
        if (not self.budget.auto_compact or self.compactor.guards.breaker_open
                or self.hooks.for_event("PreCompact", "auto")):
            return False
        if self.context_tokens() < self.budget.threshold * SETTINGS.ahead_early_ratio:
            return False
        return self.ahead.start(self.conversation.messages)

    def preview_compaction(self, focus: str | None = None,
                           events: AgentEvents | None = None) -> CompactionPlan | CompactionRecord:
        """``/compact --preview``: the manual compaction computed (PreCompact hooks included) but not
        applied; a record instead when there is nothing to do or a hook blocked it."""
        if events is not None:
            self._events = events
        self._events.compaction_started("manual")
        combined, blocked = self._pre_compact("manual", focus, self.context_tokens())
        if blocked is not None:
            return blocked
        return self.compactor.preview(self.conversation, combined)

    def apply_compaction(self, plan: CompactionPlan, summary: str | None = None,
                         events: AgentEvents | None = None) -> CompactionRecord:
        """Install a previewed compaction, with the user's edited ``summary`` when given; raises
        ValueError (nothing changed) when the conversation moved on since the preview."""
        if events is not None:
            self._events = events
        before = list(self.conversation.messages)
        record = self.compactor.apply(self.conversation, plan, summary)
        self._reattach_skills(before, record)
        self._save_compaction(record)
        self._post_compact("manual", plan.focus, record.tokens_before, record)
        self._events.compaction_finished(record)
        return record

    def _compact_after_overflow(self, error: ContextOverflowError) -> None:
        self._events.notice(f"The provider said the request is too long ({error}); compacting.")
        self.run_compaction(lambda focus: self.compactor.after_overflow(self.conversation, error, focus), "context_overflow")

    def run_compaction(self, run: Callable[[str | None], CompactionRecord | None], trigger: str,
                 focus: str | None = None) -> CompactionRecord | None:
        """Run one compaction between the PreCompact and PostCompact hooks; ``run`` gets the focus
        (the user's, plus what PreCompact hooks printed)."""
        self._events.compaction_started(trigger)
        kind = "manual" if trigger == "manual" else "auto"
        tokens_before = self.context_tokens()
        combined, blocked = self._pre_compact(kind, focus, tokens_before)
        before = list(self.conversation.messages)
        record = blocked if blocked is not None else run(combined)
        if record is None:
            return None
        if record.layers:
            self._reattach_skills(before, record)
            self._save_compaction(record)
            self._post_compact(kind, focus, tokens_before, record)
        # A record without layers ("nothing to compact") still reaches the user, with its note.
        self._events.compaction_finished(record)
        return record

    def notice(self, text: str) -> None:
        self._events.notice(text)

    # -- skills ----------------------------------------------------------------------------------
    def _skill_fits(self, text: str) -> bool:
        """Whether a skill's text fits the room one tool output has now."""
        return (len(text) <= self.tool_output_chars()
                and self.budget.counter.count_text(text) <= self.tool_output_limit(tokens=True))

    def _typed_skills(self, text: str) -> None:
        """``/name args`` or ``$name`` in what the user typed: each skill's call and result, after it."""
        if self.skills is None:
            return
        for message in self.skills.typed(text, self._skill_fits):
            self._append(message)
            if message.role == "assistant":  # shown as a call the model made
                call = message.tool_calls[0]
                self._events.tool_call(call, self.toolbox.describe(call))
            else:
                self._events.tool_result(call, ToolOutcome(message.text))

    def _reattach_skills(self, before: list[Message], record: CompactionRecord) -> None:
        """After a compaction, the invoked skills whose bodies it did not keep, after the summary
        (or at the end of a compaction without one); the summary names them all."""
        if self.skills is None:
            return
        after = list(self.conversation.messages)
        extra = self.skills.after_compaction(before, after, self.budget.window, self.budget.counter.count_text)
        if after and after[0].kind == "summary" and extra.carryover_line:
            summary = after[0]
            after[0] = dataclasses.replace(summary, text=summary.text.rstrip() + "\n\n" + extra.carryover_line,
                                           meta={**summary.meta, **extra.summary_meta})
        if not extra.messages and after == self.conversation.messages:
            return
        at = 1 if after and after[0].kind == "summary" else len(after)
        if at == len(after) and after and after[-1].role == "assistant":
            at -= 1  # between turns: two assistant messages may not touch
        installed = after[:at] + extra.messages + after[at:]
        self.conversation.replace(installed)
        self.compactor.guards.compacted(before, installed)
        record.tokens_after = self.context_tokens()

    def remember_window(self, limit: int) -> None:
        """A window learned from a rejection, saved so a resumed session starts with it."""
        self._persist(lambda: self.session.append_window(limit, "learned"))

    def _hook_payload(self, focus: str | None, tokens_before: int) -> dict[str, Any]:
        session_path = getattr(self.session, "path", None)
        return {"focus": focus or "", "tokens_before": tokens_before,
                "session_id": getattr(self.session, "id", "") or "",
                "transcript_path": str(session_path) if session_path else "", "cwd": str(self.workspace)}

    def _pre_compact(self, kind: str, focus: str | None,
                     tokens_before: int) -> tuple[str | None, CompactionRecord | None]:
        """PreCompact hooks: their stdout joins the focus; exit 2 blocks a manual compaction (an
        automatic one must still make room, so there it is only reported)."""
        if not self.hooks.for_event("PreCompact", kind):
            return focus, None
        parts = [focus] if focus else []
        for result in self.hooks.run("PreCompact", kind, self._hook_payload(focus, tokens_before)):
            if result.blocks and kind == "manual":
                reason = " ".join(result.stderr.split())[:300] or "no reason given"
                count = len(self.conversation.messages)
                return focus, CompactionRecord(
                    trigger="manual", messages_before=count, messages_after=count, tokens_before=tokens_before,
                    tokens_after=tokens_before, duration_ms=0, layers=[], focus=focus,
                    note=f"Nothing was compacted: the PreCompact hook `{result.command}` blocked it ({reason}).")
            if result.ok:
                if result.stdout.strip():
                    parts.append(result.stdout.strip())
            else:
                self._events.notice(describe_failure("PreCompact", result))
        return "\n".join(parts) or None, None

    def _post_compact(self, kind: str, focus: str | None, tokens_before: int, record: CompactionRecord) -> None:
        if not self.hooks.for_event("PostCompact", kind):
            return
        summary = head_summary(self.conversation.messages)
        payload = {**self._hook_payload(focus, tokens_before), "summary": summary,
                   "tokens_after": self.context_tokens(), "layers": list(record.layers)}
        for result in self.hooks.run("PostCompact", kind, payload):
            if not result.ok:
                self._events.notice(describe_failure("PostCompact", result))

    # -- persistence -----------------------------------------------------------------------------
    def add_user_context(self, text: str) -> None:
        """Put what the user supplied without asking the model (``!command`` and its output) into
        the conversation and the session: counted now, read by the model with the next message."""
        self._append(Message.user(text))

    def _append(self, message: Message) -> None:
        self.conversation.append(message)
        self._persist(lambda: self.session.append_message(message))

    def record_memory_edit(self, label: str, action: str, chars: int) -> None:
        self._persist(lambda: self.session.append_memory_edit(label, action, chars))

    def _save_compaction(self, record: CompactionRecord) -> None:
        self._persist(lambda: self.session.append_compaction(
            record.to_dict(), self.conversation.boundary_seq, list(self.conversation.messages)))

    def _persist(self, write: Callable[[], Any]) -> None:
        if self.session is None:
            return
        try:
            write()
        except SessionError as error:
            # The conversation goes on in memory; say so once rather than on every message.
            if not self._session_failed:
                self._session_failed = True
                self._events.notice(f"{error} The session continues in memory but is no longer being saved.")
