"""One user turn: steps of (preflight → model → tools) until the model stops. The only orchestrator.

Before every provider call, tool-loop rounds included, the preflight checks the floor, compaction
is asked for a result when the request is over the threshold (``loop/compacting.py`` installs it),
and a request that still cannot fit is refused. A provider's context overflow goes to the overflow
compaction and the step is retried (the guards bound the retries). Ctrl-C at any point leaves a
valid history: partial text is kept and every tool call gets a result. Everything the user should
know goes to the :class:`AgentEvents` given for the turn.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from mini_letta import endings
from mini_letta.compaction.record import CompactionRecord
from mini_letta.context.budget import StepSize
from mini_letta.cost import Spend
from mini_letta.errors import (ContextFullError, ContextOverflowError, FloorTooHighError, PromptBlocked, ProviderError,
                               StreamBrokenError)
from mini_letta.loop import preflight
from mini_letta.loop.compacting import OVERFLOW, PRESSURE, Compacting
from mini_letta.loop.cut_replies import CutReplies
from mini_letta.loop.journal import Journal
from mini_letta.loop.prompt import Prompt
from mini_letta.loop.sizing import RequestMeasure
from mini_letta.loop.state import Ledger, ModelInUse, SessionState
from mini_letta.messages import Message, ToolCall, Usage, new_id
from mini_letta.providers.base import Done, Request, Retrying, TextDelta, ToolCallStarted
from mini_letta.settings import SETTINGS
from mini_letta.toolbox import ToolOutcome
from mini_letta.toolbox.outcome import fit_tokens
from mini_letta.wording import counted

if TYPE_CHECKING:  # what the agent hands a turn; imported by the agent's assembly, not here
    from mini_letta.checkpoints import Checkpoints
    from mini_letta.skills.skillset import SkillSet
    from mini_letta.toolbox import Toolbox



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


class TurnParts(Protocol):
    """What a turn is made of (the Agent has them): state, assembly and the parts that act."""

    state: SessionState
    journal: Journal
    compacting: Compacting
    model: ModelInUse
    prompt: Prompt
    sizing: RequestMeasure
    ledger: Ledger
    toolbox: Toolbox
    skills: SkillSet | None
    checkpoints: Checkpoints | None
    max_steps: int


class Turn:
    """``run(text)`` once, over the agent's parts (its state and assembly); never calls the agent."""

    def __init__(self, agent: TurnParts, events: AgentEvents):
        self.state, self.journal, self.compacting = agent.state, agent.journal, agent.compacting
        self.model, self.prompt, self.toolbox = agent.model, agent.prompt, agent.toolbox
        self.ledger, self.skills, self.checkpoints = agent.ledger, agent.skills, agent.checkpoints
        self.max_steps, self.sizing = agent.max_steps, agent.sizing
        self.hooks = getattr(agent, "hooks", None)  # hooks.Hooks: UserPromptSubmit and Stop
        self.events = events
        # The size of the current model call: made once per call (``next_request``), grown by the
        # reply and the tool results (``StepSize``), read by the reply budget and the tool caps.
        self.step: StepSize | None = None

    def tool_output_limit(self, tokens: bool = False) -> int:
        """The room one tool output has, by the size of the step whose tools are running."""
        return self.sizing.tool_output_limit(self.conversation, tokens, step=self.step)

    def cache_key(self) -> str | None:
        return self.state.cache_key

    @property
    def conversation(self):
        return self.state.conversation

    def run(self, text: str) -> TurnResult:
        self.compacting.guards.start_turn()
        blocked, added = self.hooks.prompt_submitted(text) if self.hooks is not None else (None, [])
        if blocked is not None:
            raise PromptBlocked(f"A UserPromptSubmit hook blocked this message, so it was not sent: {blocked}")
        context = self._context_before([*added, self.toolbox.permissions.mode.reminder()])
        message = Message.user(text)
        self.journal.append(self.events, message)
        if self.checkpoints is not None:
            self.checkpoints.begin(message)
        budget = self.model.budget
        self.sizing.ask_server()  # the floor as the server counts it, for the checks below
        try:
            floor = preflight.check_floor(budget, self.prompt.system(), self.prompt.tools(), self.model.provider.name)
            preflight.refuse_if_too_big(budget, floor, message)
        except (ContextFullError, FloorTooHighError):
            for sent in (*context, message):
                self.journal.withdraw(self.events, sent)
            raise
        self._typed_skills(text)
        result = TurnResult(text="", steps=0, stopped="done")
        compactions_before = len(self.compacting.records)
        spend_before = self.ledger.spend.snapshot()
        try:
            self._steps(message, result)
        except KeyboardInterrupt:
            # Ctrl-C outside the model call and the tools (e.g. during compaction or approval).
            self._close_open_calls()
            raise TurnInterrupted() from None
        finally:
            result.compactions = self.compacting.records[compactions_before:]
            result.spend = self.ledger.spend.since(spend_before)
        return result

    def _context_before(self, texts: list[str | None], turn: int | None = None) -> list[Message]:
        """What the model is told with the typed message (plan mode's reminder), each a message just
        before it (or a Stop hook's, after the reply): the typed text stays as typed, and each is of the
        turn it belongs to (``meta["turn"]``; ``turn`` None: the one the typed message starts)."""
        added = []
        for text in filter(None, texts):
            number = self.conversation.turns + 1 if turn is None else turn
            added.append(Message.user(text, meta={"turn": number, "added_context": True}))
            self.journal.append(self.events, added[-1])
        return added

    def _sent_on(self, reply: Message, continued: int) -> bool:
        """A Stop hook's "go on" (exit 2, ``decision: block``): its reason goes to the model as a
        message, at most ``SETTINGS.hooks.stop_continuations`` times a turn."""
        if self.hooks is None or continued >= SETTINGS.hooks.stop_continuations:
            return False
        reason = self.hooks.stopping(reply.text, active=continued > 0)
        if reason is None:
            return False
        self.events.notice(f"A Stop hook sent the model on: {reason}")
        self._context_before([f"[A Stop hook asks you to go on before you finish] {reason}"], self.conversation.turns)
        return True

    def _steps(self, message: Message, result: TurnResult) -> None:
        failures: dict[tuple[str, str], int] = {}
        cuts = CutReplies()
        trigger, rejections, limit = PRESSURE, 0, self.max_steps
        continued = 0  # times a Stop hook sent the model on in this turn
        retry: StepSize | None = None  # after a rejection, the size the retry was judged by
        while True:
            if result.steps >= limit:
                if self.events.go_on(result.steps):
                    limit += self.max_steps
                    continue
                result.stopped = "max_turns"
                self.events.notice(f"Stopped after {counted(result.steps, 'model call')} in one turn "
                                   f"(--max-turns {self.max_steps}); send a message to go on.")
                return
            try:
                request = self.next_request(trigger, retry)
                step = self.step
                request.max_tokens = cuts.reply_budget(request.max_tokens, lambda: self.model.budget.window - step.total)
                trigger, retry = PRESSURE, None
            except ContextFullError:
                if result.steps == 0:
                    # Nothing was sent: the message must not block every later turn from the
                    # context (the user still has it in the input history).
                    self.journal.withdraw(self.events, message)
                raise
            try:
                reply = self._call_model(request)
            except ContextOverflowError as error:
                rejections += 1
                try:
                    retry = self._after_rejection(error, request, rejections)
                except ContextFullError:
                    if result.steps == 0:  # as above: nothing was answered, the message must not block later turns
                        self.journal.withdraw(self.events, message)
                    raise
                # With a newly learned (always smaller) window the preflight decides again: it
                # compacts if the context no longer fits, and sizes the reply to what is left.
                trigger = OVERFLOW
                continue
            result.steps += 1
            self._record_reply(reply, request)
            result.text = reply.text
            if reply.usage is not None:
                result.usage = result.usage + reply.usage
            verdict = cuts.review(reply, request.max_tokens)
            if verdict.notice:
                self.events.notice(verdict.notice)
            if verdict.stop:
                result.stopped, result.stop_detail = verdict.stop, verdict.notice or ""
            if not reply.tool_calls:
                if not verdict.stop and self._sent_on(reply, continued):
                    continued += 1
                    continue
                if not verdict.stop and not reply.text.strip():
                    self.events.notice("The model returned an empty reply.")
                return
            repeated = self._run_tools(reply, failures, verdict.not_run)
            halt = self.toolbox.take_halt()  # a tool or a hook ended the turn (plan mode in -p, continue: false)
            if halt is not None:
                result.stopped = halt.stopped
                if halt.notice:
                    self.events.notice(halt.notice)
                return
            if repeated:
                result.stopped = "repeated_failure"
                self.events.notice(
                    f"Stopped: the model repeated the same failing tool call {SETTINGS.loop.repeated_failure_limit} times.")
                return
            if verdict.stop:
                return

    # -- one step's request -----------------------------------------------------------------------
    def next_request(self, trigger: str = PRESSURE, step: StepSize | None = None) -> Request:
        """The floor checked, the context compacted first when over the threshold (the one place
        automatic compaction runs before a request), the reply sized to what is left; raises
        FloorTooHighError or ContextFullError (nothing sent). ``step``: the call's size when it is
        known already (a retry after a rejection), else it is made here, once."""
        budget, prompt = self.model.budget, self.prompt
        system, tools = prompt.system(), prompt.tools()
        floor = preflight.check_floor(budget, system, tools, self.model.provider.name)
        if prompt.compact_floor() and not prompt.floor_form.announced:
            prompt.floor_form.announced = True
            self.events.notice(prompt.floor_form.describe(budget.window, floor))
        self.step = step = step or self.sizing.step_size(self.conversation)  # the call's one size
        if budget.should_compact(step.total):
            room = self.compacting.make_room(self.events, step, trigger)
            if room.record is not None:
                system = prompt.system()
                step.known(budget, room.record.tokens_after)
            # Compaction could not help, but the request may still fit with a shorter reply.
            if room.stopped and step.reply < preflight.useful_reply(budget):
                raise room.error()
        return preflight.sized_request(budget, step.request, system=system, tools=tools,
                                       messages=self.conversation.messages, cache_key=self.cache_key(),
                                       stable_chars=prompt.stable_chars(system))

    def _after_rejection(self, error: ContextOverflowError, request: Request, rejections: int) -> StepSize:
        """What the rejection teaches (the server's count, its window), then compaction when that
        does not explain it (``SETTINGS.resizes_per_turn`` explained rejections at most). Returns
        the size the retry is judged by (its call's one size, so the retry does not size again)."""
        window = self.sizing.learn_from_rejection(error, request)
        if window is not None:
            self.events.notice(f"The server's context window is {window:,} tokens (learned from its rejection); "
                               f"mini-letta uses that from now on.")
            self.journal.remember_window(self.events, window)
        retry = self.sizing.step_size(self.conversation)
        if error.actual and self._resends(request):
            # The server counted this very request: that is the retry's size, whatever an anchor says.
            retry.known(self.model.budget, max(retry.total, error.actual))
        if not preflight.explains(self.model.budget, retry.total, request) or rejections > SETTINGS.resizes_per_turn:
            room = self.compacting.make_room(self.events, retry, OVERFLOW, error=error)
            if room.stopped:
                raise room.error()
            if room.record is not None:
                retry.known(self.model.budget, room.record.tokens_after)
        return retry

    def _resends(self, request: Request) -> bool:
        """Whether the next request would be ``request`` again: the same floor and messages."""
        prompt = self.prompt
        return (request.system == prompt.system() and len(request.messages) == len(self.conversation.messages)
                and [spec.name for spec in request.tools] == [spec.name for spec in prompt.tools()])

    # -- the model call ---------------------------------------------------------------------------
    def _call_model(self, request: Request) -> Message:
        parts: list[str] = []
        provider = self.model.provider
        try:
            ahead = self.compacting.ahead
            if ahead.running and not getattr(provider, "serves_concurrently", True):
                self.events.notice("Waiting for the summary being prepared: this server answers one request at a time.")
                ahead.wait()
            self.events.waiting_for_model()
            for event in provider.stream(request):
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                    self.events.text(event.text)
                elif isinstance(event, ToolCallStarted):
                    self.events.tool_call_started(event.id, event.name)
                elif isinstance(event, Retrying):
                    self.events.retrying(event.describe())
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
        raise ProviderError(f"{provider.name} ended its reply without finishing it; please try again.",
                            provider=provider.name, retryable=True)

    def _keep_partial(self, parts: list[str], cut: bool = False) -> None:
        partial = "".join(parts)
        if partial:
            meta = {"interrupted": True, **({"stop_reason": endings.CUT} if cut else {})}
            self.journal.append(self.events, Message.assistant(partial, meta=meta))

    def _record_reply(self, reply: Message, request: Request) -> None:
        seen: set[str] = set()
        for call in reply.tool_calls:
            # A call with no id (or a repeated one) could never be matched with its result.
            if not call.id or call.id in seen:
                call.id = new_id("call_")
            seen.add(call.id)
        budget = self.model.budget
        calibration = budget.calibration
        floor = calibration.floor(request.system, request.tools)
        served_floor = calibration.served_floor(request.system, request.tools)
        # The anchor's usage includes the floor of its request; a later memory edit moves the floor,
        # and the estimate corrects for it with these figures.
        reply.meta["floor_tokens"] = floor
        reply.meta["floor_digest"] = calibration.floor_digest(request.system, request.tools)
        if served_floor is not None:
            reply.meta["served_floor_tokens"] = served_floor
        local_messages = budget.count_conversation(request.messages)
        if reply.usage is not None:
            # Kept with the reply, so a resumed session starts with the ratio it had learned.
            reply.meta["local_prompt_tokens"] = floor + local_messages
        self.journal.append(self.events, reply)
        self.events.assistant_message(reply)
        self.ledger.add(request.model or self.model.provider.model, reply.usage)
        self.sizing.learn_from_reply(reply, request, local_messages)
        if self.step is not None:
            reported = reply.usage.context_tokens if reply.usage is not None and not reply.usage.is_empty else None
            self.step.replied(reported, calibration.count_message(reply))

    # -- tools ------------------------------------------------------------------------------------
    def _run_tools(self, reply: Message, failures: dict[tuple[str, str], int], not_run: dict[str, str]) -> bool:
        """Run every call of ``reply`` but those of ``not_run`` (they get its text as their result);
        True when the same failing call has now repeated too often."""
        repeated = False
        calls, most = reply.tool_calls, SETTINGS.loop.max_tool_calls_per_reply
        self.toolbox.begin_reply([call for call in calls[:most] if call.id not in not_run])
        for index, call in enumerate(calls):
            if index >= most:
                outcome = ToolOutcome(f"Not run: more than {most} tool calls in one reply. "
                                      "Make fewer calls at a time.", is_error=True)
            elif call.id in not_run:
                outcome = ToolOutcome(not_run[call.id], is_error=True)
            else:
                outcome = self._run_one(call, calls[index + 1:])
            outcome = self._cap_tokens(outcome, call)
            result = Message.tool_result(call, outcome.text, is_error=outcome.is_error)
            self.journal.append(self.events, result)
            if self.step is not None:
                self.step.add(self.model.budget.calibration.count_message(result))
            self.events.tool_result(call, outcome)
            if index >= most or call.id in not_run:
                continue  # not run, so not a failure of the call itself
            key = (call.name, call.arguments)
            if outcome.is_error:
                failures[key] = failures.get(key, 0) + 1
                repeated = repeated or failures[key] >= SETTINGS.loop.repeated_failure_limit
            else:
                failures.pop(key, None)
        return repeated

    def _run_one(self, call: ToolCall, rest: list[ToolCall]) -> ToolOutcome:
        try:
            self.events.tool_call(call, self.toolbox.describe(call))
            return self.toolbox.run(call, self.tool_output_limit())
        except KeyboardInterrupt as interrupt:
            # bash hands over what the command printed before it was stopped.
            partial = getattr(interrupt, "outcome", None)
            text = (partial.text + "\n" if partial is not None else "") + "Interrupted by the user."
            self.journal.append(self.events, Message.tool_result(call, text, is_error=True))
            for other in rest:
                self.journal.append(self.events, Message.tool_result(other, "Not run: the user interrupted.",
                                                                     is_error=True))
            raise TurnInterrupted() from None

    def _cap_tokens(self, outcome: ToolOutcome, call: ToolCall) -> ToolOutcome:
        """The output as it may enter the context: at most the room left before the threshold less
        a reply (``ContextBudget.tool_output_token_limit``), counted as the provider counts."""
        limit = self.tool_output_limit(tokens=True)
        text = fit_tokens(outcome.text, limit, self.model.budget.calibration.count_text,
                          reader="read_file" if call.name == "read_file" else None)
        return outcome if text is outcome.text else dataclasses.replace(outcome, text=text)

    def _close_open_calls(self) -> None:
        """Give every tool call still waiting for its result one, so the history stays sendable."""
        messages = self.conversation.messages
        answered = {m.tool_call_id for m in messages if m.role == "tool"}
        for message in reversed(messages):
            if message.role == "assistant":
                for call in message.tool_calls:
                    if call.id not in answered:
                        self.journal.append(self.events, Message.tool_result(call, "Not run: the user interrupted.",
                                                                             is_error=True))
                break

    # -- skills the user typed --------------------------------------------------------------------
    def _typed_skills(self, text: str) -> None:
        """``/name args`` or ``$name`` in what the user typed: each skill's call and result, after it."""
        if self.skills is None:
            return
        for message in self.skills.typed(text, self._skill_fits):
            self.journal.append(self.events, message)
            if message.role == "assistant":  # shown as a call the model made
                call = message.tool_calls[0]
                self.events.tool_call(call, self.toolbox.describe(call))
            else:
                self.events.tool_result(call, ToolOutcome(message.text))

    def _skill_fits(self, text: str) -> bool:
        """Whether a skill's text fits the room one tool output has now."""
        return (len(text) <= self.tool_output_limit()
                and self.model.budget.counter.count_text(text) <= self.tool_output_limit(tokens=True))

