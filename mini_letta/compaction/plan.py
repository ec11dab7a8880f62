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


def pressure_request(measure: Measure, tokens: int | None = None, trigger: str = "context_pressure",
                     **context) -> CompactionRequest | None:
    """Automatic compaction over the threshold; None while under it. ``tokens``: the caller's
    (usage-anchored) size when it has a better one; it only decides whether to act. ``trigger``
    "context_overflow": a rejection just taught a smaller window, so the conversation itself, just
    refused, cannot carry the summary request."""
    measured = measure.measure(context.pop("messages"))
    tokens = max(measured, tokens or 0)
    if tokens <= measure.threshold:
        return None
    # When only the caller's count is over, the local measure is low and cannot tell when to stop.
    return CompactionRequest(trigger, measured, int(measure.threshold * SETTINGS.comfort_ratio),
                             undercount=tokens - measured, drop_limit=measure.window,
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


def _shrink(messages: list[Message], request: CompactionRequest, measure: Measure, summarizer: SummaryModel) -> Draft:
    """The layers in order; each runs only while the result is still over the target."""
    count, target, manual = measure.count, request.target, request.trigger == "manual"
    budgets = sizes(measure, summarizer, target)
    tail_budget = budgets.tail
    if manual:
        # /compact in a roomy window: keep a share of this conversation verbatim, not of the
        # window, or the whole conversation would count as "recent" and nothing would shrink.
        tail_budget = min(tail_budget, int(sum(count(m) for m in messages) * SETTINGS.keep_tail_ratio))
    draft = Draft(messages)
    always_summarise = manual or request.force_summary
    if manual and choose_cut(messages, count, tail_budget, manual) is None:
        draft.notes.append("Nothing to compact yet: the conversation is already as short as it can be.")
        return draft

    draft.apply("clear_tool_results", _cleared(draft.messages, measure, tail_budget, target, budgets))
    if not always_summarise and measure.measure(draft.messages) <= target:
        return draft
    dwarf = int(measure.threshold * SETTINGS.dwarf_ratio)
    if any(m.role == "tool" and count(m) > dwarf for m in draft.messages):
        draft.apply("collapse", collapse_tool_results(draft.messages, count, max_tokens=max(1, tail_budget // 2)))
        if not always_summarise and measure.measure(draft.messages) <= target:
            return draft

    # L1 and L5 replace messages one for one, so a cut found on the shrunk list indexes the
    # original too: the summarizer reads the original outputs, the tail keeps the shrunk ones.
    cut = choose_cut(draft.messages, count, tail_budget, manual, request.between_turns)
    if cut is not None:
        draft.files = files_touched(messages, request.files)
        summarise_stage(draft, messages, cut, request, measure, summarizer, budgets)

    tokens_now = measure.measure(draft.messages)
    limit = request.drop_limit
    over = limit is not None and tokens_now >= limit * SETTINGS.drop_ratio
    if over or (request.drop_without_limit and not draft.summarised_by_model):
        draft.apply("drop_oldest", drop_oldest_turns(draft.messages, measure.measure, limit=limit if over else None))
    elif not manual and tokens_now > measure.threshold:
        # Still over the threshold after summarising: the oldest turns go rather than the turn.
        draft.apply("drop_oldest", drop_oldest_turns(draft.messages, measure.measure, limit=measure.threshold))
    if draft.layers and not manual:
        _explain_miss(draft, measure, target)
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
