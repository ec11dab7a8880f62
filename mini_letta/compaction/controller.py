"""When to compact, which layers to run, and the guards that stop compaction from looping.

The controller is handed callables (summarize, measure, count, threshold, window) and never imports
a provider or the token counter, so it runs the same under the agent loop and in tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from mini_letta.conversation import Conversation
from mini_letta.errors import ContextFullError, ContextOverflowError
from mini_letta.messages import Message
from mini_letta.compaction.layers import (
    clear_tool_results, collapse_tool_results, drop_oldest_turns, extractive_summary, files_touched, head_summary,
    rebuild,
)
from mini_letta.compaction import acceptance
from mini_letta.compaction.guards import CHOICES, Guards
from mini_letta.compaction.audit import audit, kept_share, must_keep
from mini_letta.compaction.carryover import carry_over, render
from mini_letta.compaction.keep import Room, Sizes, recall_note, sizes_for
from mini_letta.compaction.summarizer import (QuotedFormNeeded, Summarize, SummaryUnavailable, cap_tokens,
                                              shared_instructions, shared_prefix, summarise, summary_input,
                                              with_room)
from mini_letta.compaction.turns import Cut, choose_cut, whole_history_cut
from mini_letta.settings import SETTINGS


def is_prefix(prefix: list[Message], messages: list[Message]) -> bool:
    """Whether ``messages`` still starts with exactly these message objects (nothing replaced)."""
    return len(prefix) <= len(messages) and all(a is b for a, b in zip(prefix, messages))

@dataclass
class CompactionRecord:
    trigger: str  # "context_pressure" | "context_overflow" | "manual"
    messages_before: int
    messages_after: int
    tokens_before: int  # the whole request, floor included
    tokens_after: int
    duration_ms: int
    layers: list[str]  # empty when there was nothing to compact
    focus: str | None = None
    summary_chars: int = 0
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    # One line for the user when something worth knowing happened (a fallback, nothing to do).
    note: str = ""
    # The audit (compaction/audit.py): items that had to survive, how many the summary itself kept,
    # and how many the audit put back because neither the summary nor the carry-over had them.
    must_keep: int = 0
    kept_by_model: int = 0
    restored_by_audit: int = 0
    # The user rewrote the summary before it was applied (``/compact --preview``, then ``e``).
    edited: bool = False
    # The summary was prepared ahead of time, while the user typed (``compaction/ahead.py``).
    prepared: bool = False
    # Why the model's summary was not used, when it was not: "failed", or how a written one was
    # rejected ("max_tokens", "refusal", "content_filter", "cut", "degenerate"; compaction/acceptance.py).
    summary_rejected: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Outcome:
    messages: list[Message]
    layers: list[str] = field(default_factory=list)
    summary_chars: int = 0
    files: tuple[list[str], list[str]] = ([], [])
    notes: list[str] = field(default_factory=list)
    summarised_by_model: bool = False
    audit: tuple[int, int, int] = (0, 0, 0)
    summary_rejected: str = ""
    # What this plan's summarizer may use, given when it starts (a plan prepared on the background
    # thread must not inherit what the last foreground call left): whether the summary may be asked
    # inside the conversation itself, and how far ``measure`` fell short of the caller's size.
    shared_allowed: bool = True
    undercount: int = 0


@dataclass
class CompactionPlan:
    """A compaction computed but not yet installed: ``/compact --preview`` shows it and applies it
    (or drops it) later. ``before`` is the history it was computed from; it applies only while the
    conversation still holds exactly that."""

    trigger: str
    focus: str | None
    before: list[Message]
    messages: list[Message]
    tokens_before: int
    tokens_after: int
    fits: bool
    started: float
    outcome: _Outcome = field(repr=False)
    planned_at: float = 0.0

    @property
    def summary(self) -> str:
        return head_summary(self.messages)

    def summarised(self) -> list[Message]:
        """The messages of ``before`` that the summary would stand for (not kept, even shortened)."""
        kept = {m.id for m in self.messages if m.kind != "summary"}
        return [m for m in self.before if m.id not in kept]

    def kept(self) -> list[Message]:
        return [m for m in self.messages if m.kind != "summary"]


class CompactionController:
    """Runs the layers cheapest first, asking its :class:`Guards` (``compaction/guards.py``: the
    breaker, the progress guard, overflow retries) before each automatic compaction and telling
    them how it ended; thrash (a compaction must free ``SETTINGS.thrash_min_freed``) is judged here.

    A compaction fails when it cannot bring the request under the threshold. ``records`` keeps every
    compaction of the session, oldest first.
    """

    def __init__(self, *, summarize: Summarize, measure: Callable[[list[Message]], int],
                 count_message: Callable[[Message], int], threshold: Callable[[], int],
                 window: Callable[[], int], auto_enabled: bool,
                 files: Callable[[], tuple[list[str], list[str]]] = lambda: ([], []),
                 recall: Callable[[], bool] = lambda: False,
                 summary_count: Callable[[Message], int] | None = None,
                 summary_window: Callable[[], int] | None = None,
                 summarize_shared: Callable[[list[Message], str, int], str] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.summarize = summarize
        # When the summarizer is the session's own model: (conversation, instructions, max tokens)
        # -> summary, sent as the conversation itself so the provider reads it from its cache.
        self.summarize_shared = summarize_shared
        self.measure = measure
        self.count_message = count_message
        self.threshold = threshold
        self.window = window
        self.auto_enabled = auto_enabled
        self.files = files
        # Whether the model can call conversation_search, so the summary may point to it.
        self.recall = recall
        # The summarizer request is counted like any other: calibrated to the provider's tokenizer,
        # against the summarizer model's own window.
        self.summary_count = summary_count or count_message
        self.summary_window = summary_window or window
        self.clock = clock
        self.guards = Guards()
        self.records: list[CompactionRecord] = []

    # --- entry points ---------------------------------------------------------------------------
    def before_request(self, conversation: Conversation, tokens: int | None = None,
                       focus: str | None = None, trigger: str = "context_pressure") -> CompactionRecord | None:
        """Compact when the request is over the threshold (trigger ``context_pressure``, or
        ``context_overflow`` when a rejection just taught a smaller window).

        Layers: clear old tool results, collapse a result that dwarfs the rest, summarise (or extract
        without a model), and drop the oldest turns if the request would still not fit the window.
        ``tokens`` is the caller's size of the current request when it has a better one than
        ``measure`` (usage-anchored); it only decides whether to act; ``focus`` goes to the summarizer
        (a PreCompact hook's instructions). Returns None when nothing was
        needed or automatic compaction is off; raises ContextFullError when the breaker is open,
        when nothing new came since the turn's previous compaction, or when no room can be made.
        """
        if not self.auto_enabled:
            return None
        measured = self.measure(conversation.messages)
        tokens = max(measured, tokens or 0)
        threshold = self.threshold()
        if tokens <= threshold:
            return None
        self.guards.check_pressure(conversation.messages, tokens, self.window())
        # When only the caller's count is over, the local measure is low and cannot tell when to stop.
        return self._compact(conversation, trigger, measured, target=int(threshold * SETTINGS.comfort_ratio),
                             undercount=tokens - measured,
                             drop_limit=self.window(), force_summary=measured <= threshold, focus=focus)

    def after_overflow(self, conversation: Conversation, error: ContextOverflowError,
                       focus: str | None = None) -> CompactionRecord:
        """Make room after the provider rejected the request as too long (``context_overflow``).

        Runs clearing, summarising and, when still over 90% of the limit the provider named (or
        when the summary failed and no limit was named), dropping the oldest turns.
        """
        tokens = self.measure(conversation.messages)
        if not self.auto_enabled:
            raise ContextFullError(
                f"Context is full ({tokens:,} of {self.window():,} tokens by local count; the provider "
                f"rejected the request) and automatic compaction is off (CODEAGENT_DISABLE_COMPACT is set). "
                f"{CHOICES}")
        self.guards.check_overflow(tokens, self.window())
        limit = self._local_limit(error, tokens)
        target = int(self.threshold() * SETTINGS.comfort_ratio)
        if limit is not None:
            target = min(target, int(limit * SETTINGS.drop_ratio))
        # With no limit named, or one our count already claims to be under, our measure has just been
        # proven low: summarise (and drop, if the summary fails) rather than trust it to say "fits".
        unreliable = limit is None or tokens < limit * SETTINGS.drop_ratio
        return self._compact(conversation, "context_overflow", tokens, target=target, drop_limit=limit,
                             drop_without_limit=unreliable, force_summary=unreliable, focus=focus)

    def manual(self, conversation: Conversation, focus: str | None = None) -> CompactionRecord:
        """``/compact [focus]``: always summarises (with the focus), whatever the guards say.

        With nothing to summarise it changes nothing and returns a record with no layers and a note.
        A manual compaction that ends under the threshold closes the breaker.
        """
        tokens = self.measure(conversation.messages)
        return self._compact(conversation, "manual", tokens, target=int(self.threshold() * SETTINGS.comfort_ratio),
                             focus=focus or None)

    def preview(self, conversation: Conversation, focus: str | None = None) -> CompactionPlan | CompactionRecord:
        """What ``manual`` would do, computed without changing ``conversation``: a plan to pass to
        ``apply``, or the record of a compaction with nothing to do (its note says why)."""
        tokens = self.measure(conversation.messages)
        plan = self._plan(list(conversation.messages), "manual", tokens,
                          target=int(self.threshold() * SETTINGS.comfort_ratio), focus=focus or None)
        if isinstance(plan, CompactionPlan):
            plan.planned_at = self.clock()
        return plan

    def apply(self, conversation: Conversation, plan: CompactionPlan, summary: str | None = None) -> CompactionRecord:
        """Install a previewed ``plan``, with the user's ``summary`` in place of the drafted one when
        given (recorded as edited). Raises ValueError when the conversation changed since the preview."""
        current = conversation.messages
        if len(current) != len(plan.before) or not is_prefix(plan.before, current):
            raise ValueError("The conversation changed since the preview; run /compact --preview again.")
        edited = summary is not None and summary.strip() != plan.summary.strip()
        if edited:
            messages = [_with_summary(plan.messages[0], summary)] + plan.messages[1:]
            tokens_after = self.measure(messages)
            if plan.tokens_before - tokens_after < plan.tokens_before * SETTINGS.thrash_min_freed:
                raise ValueError(f"With the edited summary the conversation would not be clearly smaller "
                                 f"({plan.tokens_before:,} → {tokens_after:,} tokens), so nothing was changed.")
            plan.messages, plan.tokens_after = messages, tokens_after
            plan.fits = tokens_after <= self.threshold()
        # The record's duration is the compaction's own, not the time the user spent reading it.
        plan.started += self.clock() - plan.planned_at
        record = self._install(conversation, plan)
        record.edited = edited
        return record

    def prepare(self, messages: list[Message]) -> CompactionPlan | None:
        """The automatic compaction of ``messages`` worked out in advance (``compaction/ahead.py``):
        summarised now, installed later by ``apply_prepared``. Leaves the guards alone; None when it
        would not be clearly smaller."""
        started = self.clock()
        tokens = self.measure(messages)
        outcome = self._shrink(messages, target=int(self.threshold() * SETTINGS.comfort_ratio), focus=None, manual=False,
                               force_summary=True, drop_limit=None, drop_without_limit=False,
                               shared_allowed=True, undercount=0)
        tokens_after = self.measure(outcome.messages)
        if not outcome.layers or tokens - tokens_after < tokens * SETTINGS.thrash_min_freed:
            return None
        return CompactionPlan("context_pressure", None, list(messages), outcome.messages, tokens, tokens_after,
                              tokens_after <= self.threshold(), started, outcome)

    def apply_prepared(self, conversation: Conversation, plan: CompactionPlan,
                       trigger: str = "context_pressure") -> CompactionRecord | None:
        """Install a prepared plan whose history is still a prefix of the conversation: its summary
        and kept tail, then every message that came after it. None (nothing changed) when the plan no
        longer matches or would not make the context clearly smaller. A result still over the
        threshold is not a failure: the caller compacts the rest the usual way."""
        current = conversation.messages
        size = len(plan.before)
        if not is_prefix(plan.before, current):
            return None
        started = self.clock()
        messages = plan.messages + current[size:]
        tokens, tokens_after = self.measure(current), self.measure(messages)
        if tokens - tokens_after < tokens * SETTINGS.thrash_min_freed:
            return None
        # What came after the prepared part is new to this compaction: the usual one may follow.
        self.guards.compacted(plan.before, plan.messages)
        conversation.mark_boundary()
        conversation.replace(messages)
        if tokens_after <= self.threshold():
            self.guards.succeeded()
        record = self._record(trigger, current, conversation.messages, tokens, tokens_after, started,
                              plan.outcome, None)
        record.prepared = True
        record.note = " ".join(filter(None, [record.note, "The summary was prepared ahead of time, while you typed."]))
        return record

    # --- the layers, in order -------------------------------------------------------------------
    def _compact(self, conversation: Conversation, trigger: str, tokens: int, *, target: int,
                 drop_limit: int | None = None, drop_without_limit: bool = False, force_summary: bool = False,
                 focus: str | None = None, undercount: int = 0) -> CompactionRecord:
        plan = self._plan(conversation.messages, trigger, tokens, target=target, drop_limit=drop_limit,
                          undercount=undercount,
                          drop_without_limit=drop_without_limit, force_summary=force_summary, focus=focus)
        if isinstance(plan, CompactionRecord):
            return plan
        return self._install(conversation, plan)

    def _plan(self, before: list[Message], trigger: str, tokens: int, *, target: int,
              drop_limit: int | None = None, drop_without_limit: bool = False, force_summary: bool = False,
              focus: str | None = None, undercount: int = 0) -> CompactionPlan | CompactionRecord:
        """The compacted list for ``before``, or a record (manual) / ContextFullError (automatic)
        when there is nothing worth installing. Changes neither ``before`` nor the guards' counters
        except for a failure."""
        started = self.clock()
        manual = trigger == "manual"
        # After an overflow the conversation itself was just refused: it cannot carry the summary request.
        outcome = self._shrink(before, target=target, focus=focus, manual=manual, force_summary=force_summary,
                               drop_limit=drop_limit, drop_without_limit=drop_without_limit,
                               shared_allowed=trigger != "context_overflow", undercount=undercount)
        if not outcome.layers:
            if manual:
                return self._record(trigger, before, before, tokens, tokens, started, outcome, focus)
            self.guards.failed()
            raise ContextFullError(
                f"Context is full ({tokens:,} of {self.window():,} tokens) and there is nothing left to compact: "
                f"the newest request, system prompt and tools alone fill it. Use /clear to start fresh or "
                f"choose a model with a larger context window.")
        tokens_after = self.measure(outcome.messages)
        threshold = self.threshold()
        fits = tokens_after <= threshold and (drop_limit is None or tokens_after < drop_limit * SETTINGS.drop_ratio)
        if tokens - tokens_after < tokens * SETTINGS.thrash_min_freed:
            # Not clearly smaller (a rambling summary can even be bigger): never applied, never a success.
            if manual:
                outcome.layers = []
                outcome.notes = [f"Nothing was compacted: the result would not have been smaller than the "
                                 f"conversation ({tokens:,} → {tokens_after:,} tokens)."]
                return self._record(trigger, before, before, tokens, tokens, started, outcome, focus)
            self.guards.failed()
            raise ContextFullError(
                f"Compaction could not make the context clearly smaller ({tokens:,} → {tokens_after:,} tokens), "
                f"so it was not applied. {CHOICES}")
        return CompactionPlan(trigger, focus, before, outcome.messages, tokens, tokens_after, fits, started, outcome)

    def _install(self, conversation: Conversation, plan: CompactionPlan) -> CompactionRecord:
        manual = plan.trigger == "manual"
        if not manual:
            self.guards.compacted(plan.before, plan.messages)
        conversation.mark_boundary()
        conversation.replace(plan.messages)
        if plan.fits:
            self.guards.succeeded()
        elif not manual:
            self.guards.failed()
        return self._record(plan.trigger, plan.before, conversation.messages, plan.tokens_before, plan.tokens_after,
                            plan.started, plan.outcome, plan.focus)

    def _shrink(self, messages: list[Message], *, target: int, focus: str | None, manual: bool,
                force_summary: bool, drop_limit: int | None, drop_without_limit: bool,
                shared_allowed: bool, undercount: int) -> _Outcome:
        """The layers in order: clear old tool results, collapse one that dwarfs the rest, then the
        summary pipeline (``_summarise``), then drop the oldest turns if still too big."""
        threshold = self.threshold()
        count = self.count_message
        sizes = self._sizes(target)
        tail_budget = sizes.tail
        if manual:
            # /compact in a roomy window: keep a share of this conversation verbatim, not of the
            # window, or the whole conversation would count as "recent" and nothing would shrink.
            conversation = sum(count(m) for m in messages)
            tail_budget = min(tail_budget, int(conversation * SETTINGS.keep_tail_ratio))
        outcome = _Outcome(messages, shared_allowed=shared_allowed, undercount=undercount)
        always_summarise = manual or force_summary
        if manual and self._cut(messages, tail_budget, manual) is None:
            outcome.notes.append("Nothing to compact yet: the conversation is already as short as it can be.")
            return outcome

        self._apply(outcome, "clear_tool_results", self._cleared(outcome.messages, tail_budget, target, sizes))
        if not always_summarise and self.measure(outcome.messages) <= target:
            return outcome

        dwarf = int(threshold * SETTINGS.dwarf_ratio)
        if any(m.role == "tool" and count(m) > dwarf for m in outcome.messages):
            self._apply(outcome, "collapse",
                        collapse_tool_results(outcome.messages, count, max_tokens=max(1, tail_budget // 2)))
            if not always_summarise and self.measure(outcome.messages) <= target:
                return outcome

        # L1 and L5 replace messages one for one, so a cut found on the shrunk list indexes the
        # original too: the summarizer reads the original outputs, the tail keeps the shrunk ones.
        cut = self._cut(outcome.messages, tail_budget, manual)
        if cut is not None:
            outcome.files = files_touched(messages, self.files())
            self._summarise(outcome, messages, cut, focus, target=target, sizes=sizes)

        tokens_now = self.measure(outcome.messages)
        over = drop_limit is not None and tokens_now >= drop_limit * SETTINGS.drop_ratio
        if over or (drop_without_limit and not outcome.summarised_by_model):
            limit = drop_limit if over else None
            self._apply(outcome, "drop_oldest", drop_oldest_turns(outcome.messages, self.measure, limit=limit))
        elif not manual and tokens_now > threshold:
            # Still over the threshold after summarising: the oldest turns go rather than the turn.
            self._apply(outcome, "drop_oldest", drop_oldest_turns(outcome.messages, self.measure, limit=threshold))
        if outcome.layers and not manual:
            self._explain_miss(outcome, target, sizes)
        return outcome

    def _cleared(self, messages: list[Message], tail_budget: int, target: int, sizes: Sizes) -> list[Message]:
        """L1. Cleared in one large batch (``SETTINGS.clear_batch_ratio``), since each clearing moves where
        the provider's cached prefix ends; but in full whenever that alone brings the request under
        the target, or when the room is small: then every compaction rewrites the prefix anyway."""
        every = clear_tool_results(messages, self.count_message, keep_recent_tokens=tail_budget,
                                   min_tokens=SETTINGS.clear_min_tokens)
        if sizes.small or self.measure(every) <= target:
            return every
        return clear_tool_results(messages, self.count_message, keep_recent_tokens=tail_budget,
                                  min_tokens=SETTINGS.clear_min_tokens, min_freed=int(self.threshold() * SETTINGS.clear_batch_ratio))

    def _summarise(self, outcome: _Outcome, messages: list[Message], cut: Cut, focus: str | None, *,
                   target: int, sizes: Sizes) -> None:
        """L2, else L3, as a pipeline: (cut, chosen by the caller) → summarize → carry over → audit
        → rebuild. Each stage is a pure function of its module; this is the only place that calls
        them in order.

        A summary replaces the messages before ``cut`` only when the result is clearly smaller than
        the compaction's input; one that would not be (a rambling one can even grow the context) is
        discarded and the next candidate tries: the model's summary, then the extractive one, then
        (in ``_shrink``) dropping the oldest turns."""
        limit = self.measure(messages) * (1 - SETTINGS.thrash_min_freed)
        count_text = lambda text: self.count_message(Message.user(text))  # noqa: E731
        candidates = self._summaries(outcome, messages, cut, focus, sizes)  # summarize
        carried = carry_over(messages, cut)  # carry over: what must survive whatever the summary says
        items = must_keep(carried)
        note = recall_note(carried.through_turn, carried.split_turn, self.recall())
        rejected = []
        for layer, body in candidates:
            bare = self.measure(rebuild(outcome.messages, cut, body, outcome.files))
            room = Room(target, self.measure(outcome.messages), bare, max(0, sizes.summary - count_text(body)))
            users, facts, audit_budget = sizes.budgets(room.allowed(kept_share(body, items)))
            carried_text = render(carried, body=body, user_budget=users, facts_budget=facts, count=count_text)
            checked = audit(body, carried_text, items, budget=audit_budget, count=count_text)  # audit
            kept = "\n\n".join(part for part in (checked.section, carried_text) if part)
            rebuilt = rebuild(outcome.messages, cut, body, outcome.files, note=note, kept=kept,  # rebuild
                              carryover=carried.to_meta())
            if self.measure(rebuilt) > limit:
                rejected.append(layer)
                continue
            if rejected:
                outcome.notes.append("The model's summary was not smaller than what it replaced, so a "
                                     "summary built without a model was used instead.")
            outcome.summary_chars = len(body)
            outcome.summarised_by_model = layer == "summarize"
            outcome.audit = (checked.items, checked.kept_by_model, checked.restored)
            self._apply(outcome, layer, rebuilt)
            break
        else:
            outcome.notes.append("A summary would not be smaller than the messages it replaces, so none was used.")
            return
        # A clearing or collapse that only touched summarised messages had no effect of its own.
        originals = {id(m) for m in messages}
        survivors = [m for m in outcome.messages[1:] if id(m) not in originals]
        for flag, name in (("cleared", "clear_tool_results"), ("collapsed", "collapse")):
            if name in outcome.layers and not any(m.meta.get(flag) for m in survivors):
                outcome.layers.remove(name)

    def _summaries(self, outcome: _Outcome, messages: list[Message], cut: Cut, focus: str | None,
                   sizes: Sizes) -> list[tuple[str, str]]:
        """The candidate summaries of the messages before ``cut``, best first: the model's (asked
        in the conversation itself when it can be, else as a quoted transcript), then the
        extractive one built without a model."""
        window = self.summary_window()
        candidates: list[tuple[str, str]] = []
        try:
            body = self._shared_summary(outcome, messages, cut, focus, window, sizes.summary)
            if body is None:
                body, truncated = summarise(summary_input(messages, cut, focus), self.summarize, self.summary_count,
                                            input_budget=window - sizes.summary, max_output_tokens=sizes.summary)
                if truncated:
                    outcome.notes.append("The history was too long for the summarizer; part of its middle was "
                                         "left out.")
            acceptance.check(body, messages)
            candidates.append(("summarize", body))
        except SummaryUnavailable as exc:
            outcome.notes.append(f"The summary was built without a model because {exc}.")
            outcome.summary_rejected = getattr(exc, "reason", "failed")
        candidates.append(("extractive", self._extractive(messages, cut, outcome.files, sizes.summary)))
        return candidates

    def _explain_miss(self, outcome: _Outcome, target: int, sizes: Sizes) -> None:
        """When the compacted request is still over its target: by how much, and what took the room."""
        tokens = self.measure(outcome.messages)
        if tokens <= target:
            return
        floor = self.measure([])
        summary = self.count_message(outcome.messages[0]) if outcome.messages[0].kind == "summary" else 0
        tail = tokens - floor - summary
        outcome.notes.append(
            f"The context is still {tokens - target:,} tokens over the compaction target ({target:,}): the system "
            f"prompt and tools take {floor:,}, the summary {summary:,} and the newest step{'s' if tail > 0 else ''} "
            f"kept verbatim {max(0, tail):,}.")

    def _shared_summary(self, outcome: _Outcome, messages: list[Message], cut: Cut, focus: str | None, window: int,
                        max_output: int) -> str | None:
        """The summary asked for at the end of the conversation itself, or None when that form does
        not apply (another summarizer model, after an overflow, a request that would not fit the
        window, a reply that called a tool, a provider that still found it too long): the quoted
        form is tried then. A model that fails or answers nothing raises SummaryUnavailable, as
        the quoted form would: asking again in another form would only wait on it twice."""
        if self.summarize_shared is None or not outcome.shared_allowed:
            return None
        summarize_shared = self.summarize_shared
        prefix = shared_prefix(messages, cut)
        # With its reply inside the window, by the best count there is: ``measure`` corrected by how
        # far it fell short of the caller's usage-anchored size of the request.
        # The reply may shrink to what is left, down to a summary still worth asking for.
        size = self.measure(prefix + [Message.user(shared_instructions(messages, cut, focus, max_output))])
        room = window - size - outcome.undercount - max(SETTINGS.shared_margin_min, int(window * SETTINGS.shared_margin_ratio))
        max_output = min(max_output, room)
        if max_output < SETTINGS.min_summary_tokens:
            return None
        try:
            text, max_output = with_room(
                lambda limit: summarize_shared(prefix, shared_instructions(messages, cut, focus, limit), limit),
                max_output, room)
        except (QuotedFormNeeded, ContextOverflowError):
            return None
        except SummaryUnavailable:
            raise
        except Exception as exc:
            raise SummaryUnavailable(f"the summarizer failed: {exc}") from exc
        return cap_tokens(text.strip(), max_output, self.summary_count)

    def _summary_output_cap(self) -> int:
        return max(1, min(SETTINGS.summary_output_cap, int(self.summary_window() * SETTINGS.summary_output_ratio),
                          int(self.window() * SETTINGS.summary_output_ratio)))

    def _sizes(self, target: int) -> Sizes:
        """The budgets of a compaction aiming at ``target``, from the room the floor leaves."""
        return sizes_for(threshold=self.threshold(), target=target, floor=self.measure([]),
                         summary_cap=self._summary_output_cap())

    # --- helpers --------------------------------------------------------------------------------
    def _cut(self, messages: list[Message], tail_budget: int, manual: bool) -> Cut | None:
        """Where the summary ends: the usual cut keeps the newest turn verbatim; ``/compact`` may
        also take a finished newest turn into the summary when nothing older is left."""
        cut = choose_cut(messages, self.count_message, tail_budget)
        return cut if cut is not None or not manual else whole_history_cut(messages)

    def _extractive(self, messages: list[Message], cut: Cut, files: tuple[list[str], list[str]], max_tokens: int) -> str:
        """The extractive summary, made to fit the size a model summary would have had."""
        for user_chars, max_users in ((600, 40), (200, 15), (80, 5)):
            body = extractive_summary(messages, cut, files, user_chars=user_chars, max_users=max_users)
            tokens = self.count_message(Message.user(body))
            if tokens <= max_tokens:
                return body
        return cap_tokens(body, max_tokens, self.count_message)

    def _local_limit(self, error: ContextOverflowError, tokens: int) -> int | None:
        """The provider's limit in our own measure: when it also said how big it found the request,
        scale the limit by how far our count was off."""
        if not error.limit:
            return None
        if error.actual and error.actual > 0 and tokens > 0:
            return max(1, int(error.limit * tokens / error.actual))
        return error.limit

    @staticmethod
    def _apply(outcome: _Outcome, layer: str, messages: list[Message]) -> None:
        changed = len(messages) != len(outcome.messages) or any(
            a is not b for a, b in zip(messages, outcome.messages))
        if changed:
            outcome.messages = messages
            outcome.layers.append(layer)

    def _record(self, trigger: str, before: list[Message], after: list[Message], tokens_before: int,
                tokens_after: int, started: float, outcome: _Outcome, focus: str | None) -> CompactionRecord:
        record = CompactionRecord(
            trigger=trigger, messages_before=len(before), messages_after=len(after),
            tokens_before=tokens_before, tokens_after=tokens_after,
            duration_ms=int(round((self.clock() - started) * 1000)), layers=list(outcome.layers), focus=focus,
            summary_chars=outcome.summary_chars, files_read=list(outcome.files[0]),
            files_modified=list(outcome.files[1]), note=" ".join(outcome.notes),
            must_keep=outcome.audit[0], kept_by_model=outcome.audit[1], restored_by_audit=outcome.audit[2],
            summary_rejected=outcome.summary_rejected)
        if record.layers:
            self.records.append(record)
        return record


def _with_summary(message: Message, body: str) -> Message:
    """The summary message with ``body`` (the user's edit) in place of the drafted summary text."""
    old = message.meta.get("summary_body", "")
    text = message.text.replace(old.strip(), body.strip(), 1) if old.strip() else body.strip()
    return Message(role=message.role, kind=message.kind, text=text, seq=0,
                   meta={**message.meta, "summary_body": body.strip(), "edited": True})
