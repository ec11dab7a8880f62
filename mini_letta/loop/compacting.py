"""The one place a compaction is asked for, installed, saved and announced: ``make_room``.

``compaction.plan`` computes; ``Compacting.make_room(events, step, trigger)`` is the loop's one
entry, for every trigger (``context_pressure`` before a request over the threshold,
``context_overflow`` after a rejection, ``manual`` for ``/compact [focus]``). It takes the plan
prepared ahead of time when it still applies, asks the guards (a refusal is returned, not raised),
runs the PreCompact hooks, installs the result in the conversation, re-attaches the invoked
skills, saves the record, runs the PostCompact hooks and tells the events; it answers with a
:class:`RoomMade` (gemini-cli's ``compress()`` status, as a value) and the turn decides what a stop
means for the request. Ahead-of-time planning runs the same ``plan`` on a snapshot, on the
background thread, and touches nothing here until ``make_room`` installs it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mini_letta.compaction import plan as planner
from mini_letta.compaction.ahead import AheadOfTime
from mini_letta.compaction.guards import CHOICES, Guards, Refusal
from mini_letta.compaction.layers import head_summary
from mini_letta.compaction.plan import COMPACTED, NOT_SMALLER, NOTHING_TO_COMPACT, CompactionRequest, CompactionResult
from mini_letta.compaction.record import CompactionRecord
from mini_letta.context.budget import StepSize
from mini_letta.errors import ContextFullError, ContextOverflowError
from mini_letta.hooks import Hooks, describe_failure
from mini_letta.loop.journal import Journal
from mini_letta.loop.state import SessionState
from mini_letta.messages import Message
from mini_letta.settings import SETTINGS

PRESSURE, OVERFLOW, MANUAL = "context_pressure", "context_overflow", "manual"


@dataclass(frozen=True)
class RoomMade:
    """What ``make_room`` did: ``record``, the last compaction it installed (None: none), and, when
    it stopped without making enough room, ``reason`` (a ``ContextFullError.reason``) and the
    ``message`` the user reads. Neither: nothing was needed (under the threshold, or automatic
    compaction off)."""

    record: CompactionRecord | None = None
    reason: str = ""
    message: str = ""

    @property
    def stopped(self) -> bool:
        return bool(self.reason)

    def error(self) -> ContextFullError:
        return ContextFullError(self.message, reason=self.reason)


def _refused(refusal: Refusal, record: CompactionRecord | None = None) -> RoomMade:
    return RoomMade(record, refusal.reason, refusal.message)


class Reattacher(Protocol):
    """What a compaction asks after installing: the messages to add back after the summary, a
    sentence for the summary and its meta (``skills.skillset.SkillSet``, ``todos.reattach``)."""

    def after_compaction(self, before: list[Message], after: list[Message], window: int | None,
                         count: Callable[[str], int]) -> Any: ...


class Compacting:
    """Owns the guards, the records of the session and the plan prepared ahead of time."""

    def __init__(self, *, state: SessionState, measure: planner.Measure, summarizer: planner.SummaryModel,
                 hooks: Hooks, journal: Journal, auto_enabled: Callable[[], bool], workspace: Any,
                 reattachers: Sequence[Reattacher] = (), context: Callable[[], dict] = dict,
                 ahead_key: Callable[[], object] = lambda: None,
                 clock: Callable[[], float] = time.monotonic):
        self.state = state
        self.measure = measure
        self.summarizer = summarizer
        self.hooks = hooks
        self.journal = journal
        # Read from the budget, its one owner (``/model`` and ``/provider`` replace the budget).
        self._auto_enabled = auto_enabled
        self.reattachers = list(reattachers)  # the skills, the task list: asked after each compaction
        self.workspace = workspace
        # What the summarizer may use besides the history: files read and modified, recall.
        self.context = context
        self.clock = clock
        self._ahead_key = ahead_key
        self.guards = Guards()
        self.records: list[CompactionRecord] = []
        self.ahead = AheadOfTime(self.plan_ahead, key=ahead_key)

    def start_afresh(self) -> None:
        """Another conversation (``/clear``, ``/resume``): no records, no plan prepared for the old
        one (a preparation still under way ends into the dropped ``ahead``), the guards and the
        breaker as at the start. The hooks, the measure and the summarizer stay: they follow the
        session state, not one conversation."""
        self.ahead.cancel()
        self.ahead = AheadOfTime(self.plan_ahead, key=self._ahead_key)
        self.guards = Guards()
        self.records = []

    @property
    def auto_enabled(self) -> bool:
        return self._auto_enabled()

    # --- the one entry ------------------------------------------------------------------------------
    def make_room(self, events, step: StepSize, trigger: str = PRESSURE, *,
                  error: ContextOverflowError | None = None, focus: str | None = None) -> RoomMade:
        """Make room for a request of ``step``'s size: ``manual`` (``/compact [focus]``, always
        runs, whatever the automatic setting and the guards), after ``error`` (the provider
        rejected the request as too long), else over the threshold before a request."""
        if trigger == MANUAL:
            return self._manual(events, step.total, focus)
        if error is not None:
            return self._after_overflow(events, error)
        return self._over_threshold(events, step.total, trigger)

    def _over_threshold(self, events, tokens: int, trigger: str) -> RoomMade:
        """The plan prepared while the user typed, when it still applies; then, while still over the
        threshold, the usual compaction (after the guards)."""
        if not self.auto_enabled:
            return RoomMade()
        prepared = self.install_prepared(events, trigger)
        if prepared is not None:
            if prepared.tokens_after <= self.measure.threshold:
                return RoomMade(prepared)
            tokens = prepared.tokens_after
        messages = self.state.conversation.messages
        request = planner.pressure_request(self.measure, tokens, trigger, messages=messages, **self.context())
        if request is None:
            return RoomMade(prepared)
        refusal = self.guards.check_pressure(messages, tokens, self.measure.window)
        if refusal is not None:
            return _refused(refusal, prepared)
        return self._run(events, trigger, None, lambda focus: planner.plan(
            messages, dataclasses.replace(request, focus=focus), self.measure, self.summarizer,
            self.clock), tokens, earlier=prepared)

    def _after_overflow(self, events, error: ContextOverflowError) -> RoomMade:
        """The provider rejected the request as too long: make room (``context_overflow``)."""
        messages = self.state.conversation.messages
        request = planner.overflow_request(self.measure, messages, error, **self.context())
        if not self.auto_enabled:
            return RoomMade(reason="context_full", message=(
                f"Context is full ({request.tokens:,} of {self.measure.window:,} tokens by local count; the "
                f"provider rejected the request) and automatic compaction is off (CODEAGENT_DISABLE_COMPACT is "
                f"set). {CHOICES}"))
        refusal = self.guards.check_overflow(messages, request.tokens, self.measure.window)
        if refusal is not None:
            return _refused(refusal)
        events.notice(f"The provider said the request is too long ({error}); compacting.")
        return self._run(events, OVERFLOW, None, lambda focus: planner.plan(
            messages, dataclasses.replace(request, focus=focus), self.measure, self.summarizer, self.clock),
            request.tokens)

    def _manual(self, events, tokens: int, focus: str | None) -> RoomMade:
        messages = self.state.conversation.messages
        return self._run(events, MANUAL, focus, lambda combined: planner.plan(
            messages, planner.manual_request(self.measure, messages, combined, **self.context()), self.measure,
            self.summarizer, self.clock), tokens)

    def install_prepared(self, events, trigger: str = PRESSURE,
                         prepared: CompactionResult | None = None) -> CompactionRecord | None:
        """The plan prepared ahead of time (``prepared``, by default the one ``ahead`` holds), when it
        still applies to the conversation (None: nothing changed). While that plan is still being
        written, the wait is the compaction's and is shown as one."""
        if prepared is None and self.ahead.running:
            events.compaction_started(trigger)
        prepared = prepared or self.ahead.take(self.state.conversation.messages)
        if prepared is None:
            return None
        result = planner.onto(prepared, self.state.conversation.messages, self.measure, trigger, self.clock)
        if result is None:
            return None
        return self._run(events, trigger, None, lambda focus: result, result.tokens_before, prepared=prepared).record

    def preview(self, events, tokens: int, focus: str | None = None) -> CompactionResult | CompactionRecord:
        """``/compact --preview``: the manual plan (PreCompact hooks included), not installed; a
        record instead when there is nothing to do or a hook blocked it."""
        events.compaction_started("manual")
        messages = self.state.conversation.messages
        combined, blocked = self._pre_compact(events, "manual", focus, tokens)
        if blocked is not None:
            return blocked
        result = planner.plan(messages, planner.manual_request(self.measure, messages, combined, **self.context()),
                              self.measure, self.summarizer, self.clock)
        return result if result.status == COMPACTED else result.record

    def apply(self, events, result: CompactionResult, summary: str | None = None) -> CompactionRecord:
        """Install a previewed ``result``, with the user's edited ``summary`` when given; ValueError
        (nothing changed) when the conversation moved on since the preview."""
        current = self.state.conversation.messages
        if len(current) != len(result.before) or not planner.is_prefix(result.before, current):
            raise ValueError("The conversation changed since the preview; run /compact --preview again.")
        if summary is not None:
            result = planner.with_summary(result, summary, self.measure)
        record = self._install(events, "manual", result.focus, result.tokens_before, result)
        events.compaction_finished(record)
        return record

    def prepare_ahead(self, tokens: int) -> bool:
        """While the user types: start the automatic compaction's plan in the background once the
        context passes ``SETTINGS.ahead_early_ratio`` of the threshold. Not when automatic
        compaction is off or paused, nor with automatic PreCompact hooks (their instructions belong
        to the moment of compaction). True when a preparation started."""
        if not self.auto_enabled or self.guards.breaker_open or self.hooks.for_event("PreCompact", "auto"):
            return False
        if tokens < self.measure.threshold * SETTINGS.ahead_early_ratio:
            return False
        return self.ahead.start(self.state.conversation.messages)

    def plan_ahead(self, snapshot: list[Message]) -> CompactionResult | None:
        """The automatic compaction of ``snapshot``, summarised now (background thread)."""
        request = CompactionRequest("context_pressure", self.measure.measure(snapshot),
                                    int(self.measure.threshold * SETTINGS.comfort_ratio), force_summary=True,
                                    between_turns=True, **self.context())
        result = planner.plan(snapshot, request, self.measure, self.summarizer, self.clock)
        return result if result.status == COMPACTED else None

    # --- one compaction, between its hooks ----------------------------------------------------------
    def _run(self, events, trigger: str, focus: str | None, compute: Callable[[str | None], CompactionResult],
             tokens_before: int, prepared: CompactionResult | None = None,
             earlier: CompactionRecord | None = None) -> RoomMade:
        events.compaction_started(trigger)
        kind = "manual" if trigger == MANUAL else "auto"
        combined, blocked = self._pre_compact(events, kind, focus, tokens_before)
        if blocked is not None:
            events.compaction_finished(blocked)
            return RoomMade(blocked)
        result = compute(combined)
        if result.status != COMPACTED:
            if kind == "manual":
                events.compaction_finished(result.record)  # "nothing to compact", with its note
                return RoomMade(result.record)
            if result.status == NOT_SMALLER:  # it ran and could not make room: a failure
                self.guards.failed()
            return RoomMade(earlier, result.status, self._failure(result))
        record = self._install(events, kind, focus, tokens_before, result, prepared)
        events.compaction_finished(record)
        return RoomMade(record)

    def _install(self, events, kind: str, focus: str | None, tokens_before: int, result: CompactionResult,
                 prepared: CompactionResult | None = None) -> CompactionRecord:
        conversation = self.state.conversation
        before = list(conversation.messages)
        if prepared is not None:
            # What came after the prepared part is new to this compaction: the usual one may follow.
            self.guards.compacted(prepared.before, prepared.messages)
        elif kind == "auto":
            self.guards.compacted(result.before, result.messages)
        conversation.mark_boundary()
        conversation.replace(result.messages)
        if result.fits:
            self.guards.succeeded()
        elif kind == "auto" and prepared is None:
            self.guards.failed()
        record = dataclasses.replace(result.record)
        self._reattach(before, record)
        self.records.append(record)
        self.journal.save_compaction(events, record, conversation)
        self._post_compact(events, kind, focus, tokens_before, record)
        return record

    def _failure(self, result: CompactionResult) -> str:
        tokens = result.tokens_before
        if result.status == NOTHING_TO_COMPACT:
            return (f"Context is full ({tokens:,} of {self.measure.window:,} tokens) and there is nothing left to "
                    f"compact: the newest request, system prompt and tools alone fill it. Use /clear to start "
                    f"fresh or choose a model with a larger context window.")
        return (f"Compaction could not make the context clearly smaller ({tokens:,} → {result.would_be:,} tokens), "
                f"so it was not applied. {CHOICES}")

    def _reattach(self, before: list[Message], record: CompactionRecord) -> None:
        """What each re-attacher brings back (the invoked skills whose bodies the compaction did not
        keep, the task list), after the summary (or at the end of a compaction without one); the
        summary names them."""
        conversation = self.state.conversation
        after = list(conversation.messages)
        messages: list[Message] = []
        for reattacher in self.reattachers:
            extra = reattacher.after_compaction(before, after, self.measure.window, self.measure.count_text)
            messages += extra.messages
            if after and after[0].kind == "summary" and extra.carryover_line:
                summary = after[0]
                after[0] = dataclasses.replace(summary, text=summary.text.rstrip() + "\n\n" + extra.carryover_line,
                                               meta={**summary.meta, **extra.summary_meta})
        if not messages and after == conversation.messages:
            return
        at = 1 if after and after[0].kind == "summary" else len(after)
        if at == len(after) and after and after[-1].role == "assistant":
            at -= 1  # between turns: two assistant messages may not touch
        installed = after[:at] + messages + after[at:]
        conversation.replace(installed)
        self.guards.compacted(before, installed)
        record.tokens_after = self.measure.measure(installed)

    # --- hooks ------------------------------------------------------------------------------------
    def _payload(self, focus: str | None, tokens_before: int) -> dict[str, Any]:
        session = self.state.session
        path = getattr(session, "path", None)
        return {"focus": focus or "", "tokens_before": tokens_before, "session_id": getattr(session, "id", "") or "",
                "transcript_path": str(path) if path else "", "cwd": str(self.workspace)}

    def _pre_compact(self, events, kind: str, focus: str | None,
                     tokens_before: int) -> tuple[str | None, CompactionRecord | None]:
        """PreCompact hooks: their stdout joins the focus; exit 2 blocks a manual compaction (an
        automatic one must still make room, so there it is only reported)."""
        if not self.hooks.for_event("PreCompact", kind):
            return focus, None
        parts = [focus] if focus else []
        for result in self.hooks.run("PreCompact", kind, self._payload(focus, tokens_before)):
            if result.blocks and kind == "manual":
                reason = " ".join(result.stderr.split())[:300] or "no reason given"
                count = len(self.state.conversation.messages)
                return focus, CompactionRecord(
                    trigger="manual", messages_before=count, messages_after=count, tokens_before=tokens_before,
                    tokens_after=tokens_before, duration_ms=0, layers=[], focus=focus,
                    note=f"Nothing was compacted: the PreCompact hook `{result.command}` blocked it ({reason}).")
            if result.ok:
                if result.stdout.strip():
                    parts.append(result.stdout.strip())
            else:
                events.notice(describe_failure("PreCompact", result))
        return "\n".join(parts) or None, None

    def _post_compact(self, events, kind: str, focus: str | None, tokens_before: int, record: CompactionRecord) -> None:
        if not self.hooks.for_event("PostCompact", kind):
            return
        payload = {**self._payload(focus, tokens_before), "summary": head_summary(self.state.conversation.messages),
                   "tokens_after": record.tokens_after, "layers": list(record.layers)}
        for result in self.hooks.run("PostCompact", kind, payload):
            if not result.ok:
                events.notice(describe_failure("PostCompact", result))
