"""Compaction as data: ``plan(messages, request, measure, summarizer) -> CompactionResult``.

A pure function of the history it is given: it changes neither the list nor any shared state, so
``/compact --preview``, the summary prepared ahead of time and the automatic compaction are the
same plan, shown or installed at different times by the loop (``loop/compacting.py``), which also
asks the guards. The layers, cheapest first: clear old tool results, collapse one that dwarfs the
rest, summarise (``compaction/summary_stage.py``), drop the oldest turns if still too big.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from mini_letta.compaction.keep import Sizes
from mini_letta.compaction.layers import (clear_tool_results, collapse_tool_results, drop_oldest_turns,
                                          files_touched, head_summary)
from mini_letta.compaction.record import CompactionRecord, is_prefix
from mini_letta.compaction.protocols import CompactionRequest, Measure, SummaryModel
from mini_letta.compaction.summary_stage import Draft, choose_cut, sizes, summarise_stage
from mini_letta.errors import ContextOverflowError
from mini_letta.messages import Message
from mini_letta.settings import SETTINGS

COMPACTED, NOTHING_TO_COMPACT, NOT_SMALLER = "compacted", "nothing_to_compact", "not_smaller"


def pressure_request(measure: Measure, tokens: int, trigger: str = "context_pressure",
                     **context) -> CompactionRequest | None:
    """Automatic compaction over the threshold; None while under it. ``tokens``: the step's size
    (``StepSize.total``: usage-anchored), the one size that decides whether to act; the plan works
    in ``measure``'s scale, the one it compares its candidates in, and ``undercount`` carries how far
    that falls short of the step's size. ``trigger``
    "context_overflow": a rejection just taught a smaller window, so the conversation itself, just
    refused, cannot carry the summary request."""
    measured = measure.measure(context.pop("messages"))
    if tokens <= measure.threshold:
        return None
    # When only the step's size is over, the local measure is low and cannot tell when to stop.
    return CompactionRequest(trigger, measured, int(measure.threshold * SETTINGS.comfort_ratio),
                             undercount=max(0, tokens - measured), drop_limit=measure.window,
                             force_summary=measured <= measure.threshold,
                             shared_allowed=trigger != "context_overflow", **context)


def overflow_request(measure: Measure, messages: list[Message], error: ContextOverflowError,
                     **context) -> CompactionRequest:
    """After the provider rejected the request as too long: summarise, and drop the oldest turns
    while over 90% of the limit it named (or when the summary failed and it named none)."""
    tokens = measure.measure(messages)
    limit = local_limit(error, tokens)
    target = int(measure.threshold * SETTINGS.comfort_ratio)
    if limit is not None:
        target = min(target, int(limit * SETTINGS.drop_ratio))
    # With no limit named, or one our count already claims to be under, our measure has just been
    # proven low: summarise (and drop, if the summary fails) rather than trust it to say "fits".
    unreliable = limit is None or tokens < limit * SETTINGS.drop_ratio
    # The conversation itself was just refused: it cannot carry the summary request.
    return CompactionRequest("context_overflow", tokens, target, drop_limit=limit, drop_without_limit=unreliable,
                             force_summary=unreliable, shared_allowed=False, **context)


def manual_request(measure: Measure, messages: list[Message], focus: str | None = None,
                   **context) -> CompactionRequest:
    """``/compact [focus]``: always summarises, whatever the guards say."""
    return CompactionRequest("manual", measure.measure(messages), int(measure.threshold * SETTINGS.comfort_ratio),
                             focus=focus or None, **context)


def local_limit(error: ContextOverflowError, tokens: int) -> int | None:
    """The provider's limit in our own measure: scaled by how far our count was off when it also
    said how big it found the request."""
    if not error.limit:
        return None
    if error.actual and error.actual > 0 and tokens > 0:
        return max(1, int(error.limit * tokens / error.actual))
    return error.limit


@dataclass
class CompactionResult:
    """A compaction computed, not installed. ``before`` is the history it was computed from; it
    installs only while the conversation still holds exactly that."""

    status: str  # COMPACTED | NOTHING_TO_COMPACT | NOT_SMALLER
    before: list[Message]
    messages: list[Message]
    record: CompactionRecord
    fits: bool = False
    planned_at: float = 0.0
    would_be: int = 0  # the size it would have had (NOT_SMALLER: why it was not used)

    @property
    def trigger(self) -> str:
        return self.record.trigger

    @property
    def focus(self) -> str | None:
        return self.record.focus

    @property
    def tokens_before(self) -> int:
        return self.record.tokens_before

    @property
    def tokens_after(self) -> int:
        return self.record.tokens_after

    @property
    def summary(self) -> str:
        return head_summary(self.messages)

    def summarised(self) -> list[Message]:
        """The messages of ``before`` that the summary would stand for (not kept, even shortened)."""
        kept = {m.id for m in self.messages if m.kind != "summary"}
        return [m for m in self.before if m.id not in kept]

    def kept(self) -> list[Message]:
        return [m for m in self.messages if m.kind != "summary"]


def plan(messages: list[Message], request: CompactionRequest, measure: Measure, summarizer: SummaryModel,
         clock: Callable[[], float] = time.monotonic) -> CompactionResult:
    """The compacted list for ``messages`` and its record. NOTHING_TO_COMPACT when no layer changed
    anything, NOT_SMALLER when the result would not be clearly smaller (never installed)."""
    started = clock()
    before = list(messages)
    draft = _shrink(before, request, measure, summarizer)
    tokens, tokens_after = request.tokens, measure.measure(draft.messages)
    status, would_be = COMPACTED, tokens_after
    if not draft.layers:
        status, draft.messages, tokens_after = NOTHING_TO_COMPACT, before, tokens
    elif tokens - tokens_after < tokens * SETTINGS.thrash_min_freed:
        # Not clearly smaller (a rambling summary can even be bigger): never applied, never a success.
        status, draft.layers, draft.messages = NOT_SMALLER, [], before
        draft.notes = [f"Nothing was compacted: the result would not have been smaller than the "
                       f"conversation ({tokens:,} → {tokens_after:,} tokens)."]
        tokens_after = tokens
    drop_limit = request.drop_limit
    fits = tokens_after <= measure.threshold and (drop_limit is None or tokens_after < drop_limit * SETTINGS.drop_ratio)
    ended = clock()
    record = _record(request, before, draft, tokens, tokens_after, ended - started)
    return CompactionResult(status, before, draft.messages, record, fits=status == COMPACTED and fits,
                            planned_at=ended, would_be=would_be)


def onto(result: CompactionResult, current: list[Message], measure: Measure, trigger: str,
         clock: Callable[[], float] = time.monotonic) -> CompactionResult | None:
    """A result planned on an earlier history (prepared ahead of time), put onto ``current``: its
    summary and kept tail, then every message that came after it. None when ``current`` no longer
    starts with that history or the result would not be clearly smaller."""
    if result.status != COMPACTED or not is_prefix(result.before, current):
        return None
    started = clock()
    messages = result.messages + current[len(result.before):]
    tokens, tokens_after = measure.measure(current), measure.measure(messages)
    if tokens - tokens_after < tokens * SETTINGS.thrash_min_freed:
        return None
    note = " ".join(filter(None, [result.record.note, "The summary was prepared ahead of time, while you typed."]))
    record = replace(result.record, trigger=trigger, messages_before=len(current), messages_after=len(messages),
                     tokens_before=tokens, tokens_after=tokens_after, prepared=True, note=note,
                     duration_ms=int(round((clock() - started) * 1000)))
    return CompactionResult(COMPACTED, list(current), messages, record, fits=tokens_after <= measure.threshold)


def with_summary(result: CompactionResult, summary: str, measure: Measure) -> CompactionResult:
    """``result`` with the user's ``summary`` in place of the drafted one (``/compact --preview``,
    then ``e``); raises ValueError when that would not be clearly smaller."""
    if summary.strip() == result.summary.strip():
        return result
    messages = [_edited(result.messages[0], summary)] + result.messages[1:]
    tokens_before, tokens_after = result.tokens_before, measure.measure(messages)
    if tokens_before - tokens_after < tokens_before * SETTINGS.thrash_min_freed:
        raise ValueError(f"With the edited summary the conversation would not be clearly smaller "
                         f"({tokens_before:,} → {tokens_after:,} tokens), so nothing was changed.")
    record = replace(result.record, tokens_after=tokens_after, edited=True)
    return replace(result, messages=messages, record=record, fits=tokens_after <= measure.threshold)


@dataclass
class Shrinking:
    """What the layers share while a plan is built: its input, the request, the draft so far."""

    messages: list[Message]  # the input: the summarizer reads these, the draft holds the shrunk ones
    request: CompactionRequest
    measure: Measure
    summarizer: SummaryModel
    budgets: Sizes
    tail_budget: int
    draft: Draft

    @property
    def manual(self) -> bool:
        return self.request.trigger == "manual"

    @property
    def always_summarise(self) -> bool:
        return self.manual or self.request.force_summary

    def over_target(self) -> bool:
        return self.measure.measure(self.draft.messages) > self.request.target


@dataclass(frozen=True)
class Layer:
    """One layer of a plan: ``run`` when ``needed`` says so, in the order of :data:`LAYERS`."""

    name: str
    needed: Callable[[Shrinking], bool]
    run: Callable[[Shrinking], None]


def _clear(state: Shrinking) -> None:
    state.draft.apply("clear_tool_results", _cleared(state.draft.messages, state.measure, state.tail_budget,
                                                     state.request.target, state.budgets))


def _dwarfed(state: Shrinking) -> bool:
    dwarf = int(state.measure.threshold * SETTINGS.dwarf_ratio)
    return any(m.role == "tool" and state.measure.count(m) > dwarf for m in state.draft.messages)


def _collapse(state: Shrinking) -> None:
    state.draft.apply("collapse", collapse_tool_results(state.draft.messages, state.measure.count,
                                                        max_tokens=max(1, state.tail_budget // 2)))


def _summarise(state: Shrinking) -> None:
    # L1 and L5 replace messages one for one, so a cut found on the shrunk list indexes the
    # original too: the summarizer reads the original outputs, the tail keeps the shrunk ones.
    request, draft = state.request, state.draft
    cut = choose_cut(draft.messages, state.measure.count, state.tail_budget, state.manual, request.between_turns)
    if cut is not None:
        draft.files = files_touched(state.messages, request.files)
        summarise_stage(draft, state.messages, cut, request, state.measure, state.summarizer, state.budgets)


def _drop_limit(state: Shrinking) -> int | None:
    """The limit the oldest turns are dropped under: the one a rejection named while at or over
    ``drop_ratio`` of it; the threshold when a model's summary still left the request over it;
    None (no limit: a fixed number of turns) when the summary failed and no limit is known."""
    limit, tokens = state.request.drop_limit, state.measure.measure(state.draft.messages)
    if limit is not None and tokens >= limit * SETTINGS.drop_ratio:
        return limit
    if state.request.drop_without_limit and not state.draft.summarised_by_model:
        return None
    return state.measure.threshold


def _drop_needed(state: Shrinking) -> bool:
    limit, tokens = state.request.drop_limit, state.measure.measure(state.draft.messages)
    if limit is not None and tokens >= limit * SETTINGS.drop_ratio:
        return True
    if state.request.drop_without_limit and not state.draft.summarised_by_model:
        return True
    # Still over the threshold after summarising: the oldest turns go rather than the turn.
    return not state.manual and tokens > state.measure.threshold


def _drop(state: Shrinking) -> None:
    state.draft.apply("drop_oldest", drop_oldest_turns(state.draft.messages, state.measure.measure,
                                                       limit=_drop_limit(state)))


# The layers, cheapest first; each runs only when it is needed, which (but for a forced summary and
# the drop under a rejection's limit) means while the draft is still over the target.
LAYERS: tuple[Layer, ...] = (
    Layer("clear_tool_results", needed=lambda state: True, run=_clear),
    Layer("collapse", needed=lambda state: (state.always_summarise or state.over_target()) and _dwarfed(state),
          run=_collapse),
    Layer("summarise", needed=lambda state: state.always_summarise or state.over_target(), run=_summarise),
    Layer("drop_oldest", needed=_drop_needed, run=_drop),
)


def _shrink(messages: list[Message], request: CompactionRequest, measure: Measure, summarizer: SummaryModel) -> Draft:
    """The layers of :data:`LAYERS` in order."""
    budgets = sizes(measure, summarizer, request.target)
    tail_budget = budgets.tail
    manual = request.trigger == "manual"
    if manual:
        # /compact in a roomy window: keep a share of this conversation verbatim, not of the
        # window, or the whole conversation would count as "recent" and nothing would shrink.
        tail_budget = min(tail_budget, int(sum(measure.count(m) for m in messages) * SETTINGS.keep_tail_ratio))
    draft = Draft(messages)
    if manual and choose_cut(messages, measure.count, tail_budget, manual) is None:
        draft.notes.append("Nothing to compact yet: the conversation is already as short as it can be.")
        return draft
    state = Shrinking(messages, request, measure, summarizer, budgets, tail_budget, draft)
    for layer in LAYERS:
        if layer.needed(state):
            layer.run(state)
    if draft.layers and not manual:
        _explain_miss(draft, measure, request.target)
    return draft


def _cleared(messages: list[Message], measure: Measure, tail_budget: int, target: int, budgets: Sizes) -> list[Message]:
    """L1, in one large batch (``SETTINGS.clear_batch_ratio``), since each clearing moves where the
    provider's cached prefix ends; in full whenever that alone reaches the target, or when the
    room is small (then every compaction rewrites the prefix anyway)."""
    every = clear_tool_results(messages, measure.count, keep_recent_tokens=tail_budget,
                               min_tokens=SETTINGS.clear_min_tokens)
    if budgets.small or measure.measure(every) <= target:
        return every
    return clear_tool_results(messages, measure.count, keep_recent_tokens=tail_budget, min_tokens=SETTINGS.clear_min_tokens,
                              min_freed=int(measure.threshold * SETTINGS.clear_batch_ratio))


def _explain_miss(draft: Draft, measure: Measure, target: int) -> None:
    """When the compacted request is still over its target: by how much, and what took the room."""
    tokens = measure.measure(draft.messages)
    if tokens <= target:
        return
    floor = measure.measure([])
    summary = measure.count(draft.messages[0]) if draft.messages[0].kind == "summary" else 0
    tail = tokens - floor - summary
    draft.notes.append(
        f"The context is still {tokens - target:,} tokens over the compaction target ({target:,}): the system "
        f"prompt and tools take {floor:,}, the summary {summary:,} and the newest step{'s' if tail > 0 else ''} "
        f"kept verbatim {max(0, tail):,}.")


def _record(request: CompactionRequest, before: list[Message], draft: Draft, tokens: int, tokens_after: int,
            seconds: float) -> CompactionRecord:
    return CompactionRecord(
        trigger=request.trigger, messages_before=len(before), messages_after=len(draft.messages),
        tokens_before=tokens, tokens_after=tokens_after, duration_ms=int(round(seconds * 1000)),
        layers=list(draft.layers), focus=request.focus, summary_chars=draft.summary_chars,
        files_read=list(draft.files[0]), files_modified=list(draft.files[1]), note=" ".join(draft.notes),
        must_keep=draft.audit[0], kept_by_model=draft.audit[1], restored_by_audit=draft.audit[2],
        summary_rejected=draft.summary_rejected)


def _edited(message: Message, body: str) -> Message:
    """The summary message with ``body`` (the user's edit) in place of the drafted summary text."""
    old = message.meta.get("summary_body", "")
    text = message.text.replace(old.strip(), body.strip(), 1) if old.strip() else body.strip()
    return Message(role=message.role, kind=message.kind, text=text, seq=0,
                   meta={**message.meta, "summary_body": body.strip(), "edited": True})


__all__ = ["COMPACTED", "NOTHING_TO_COMPACT", "NOT_SMALLER", "CompactionRequest", "CompactionResult", "Measure",
           "manual_request", "onto", "overflow_request", "plan", "pressure_request", "with_summary"]
