"""The summary layer of a plan: (cut) → summarize → carry over → audit → rebuild.

Each stage is a pure function of its module; this is the only place that calls them in order. The
model is reached through ``protocols.SummaryModel``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mini_letta.compaction import acceptance, native
from mini_letta.compaction.audit import audit, kept_share, must_keep
from mini_letta.compaction.carryover import carry_over, render
from mini_letta.compaction.keep import Room, Sizes, recall_note, sizes_for
from mini_letta.compaction.protocols import CompactionRequest, Measure, SummaryModel
from mini_letta.compaction.layers import extractive_summary, rebuild
from mini_letta.compaction.summarizer import (QuotedFormNeeded, SummaryUnavailable, cap_tokens, shared_instructions,
                                              shared_prefix, summarise, summary_input, with_room)
from mini_letta.compaction.turns import Cut, history_start, whole_history_cut
from mini_letta.compaction.turns import choose_cut as usual_cut
from mini_letta.errors import ContextOverflowError
from mini_letta.messages import Message
from mini_letta.settings import SETTINGS

@dataclass
class Draft:
    """The plan being built: the messages so far, which layers changed them, and what to report."""

    messages: list[Message]
    layers: list[str] = field(default_factory=list)
    summary_chars: int = 0
    files: tuple[list[str], list[str]] = ([], [])
    notes: list[str] = field(default_factory=list)
    summarised_by_model: bool = False
    audit: tuple[int, int, int] = (0, 0, 0)
    summary_rejected: str = ""

    def apply(self, layer: str, messages: list[Message]) -> None:
        if len(messages) != len(self.messages) or any(a is not b for a, b in zip(messages, self.messages)):
            self.messages = messages
            self.layers.append(layer)


def choose_cut(messages: list[Message], count: Callable[[Message], int], tail_budget: int, manual: bool,
               between_turns: bool = False) -> Cut | None:
    """Where the summary ends: the usual cut keeps the newest turn verbatim; ``/compact`` may also
    take a finished newest turn into the summary when nothing older is left. Planned between turns
    (ahead of time), a finished newest turn larger than the tail budget is summarised too: at the
    next message it is no longer the newest, and the usual cut would summarise it then."""
    cut = usual_cut(messages, count, tail_budget)
    if between_turns and (cut is None or sum(map(count, cut.kept(messages))) > tail_budget):
        return whole_history_cut(messages) or cut
    return cut if cut is not None or not manual else whole_history_cut(messages)


def sizes(measure: Measure, summarizer: SummaryModel, target: int) -> Sizes:
    """The budgets of a compaction aiming at ``target``, from the room the floor leaves."""
    cap = max(1, min(SETTINGS.summary_output_cap, int(summarizer.window * SETTINGS.summary_output_ratio),
                     int(measure.window * SETTINGS.summary_output_ratio)))
    return sizes_for(threshold=measure.threshold, target=target, floor=measure.measure([]), summary_cap=cap)


def summarise_stage(draft: Draft, messages: list[Message], cut: Cut, request: CompactionRequest, measure: Measure,
                    summarizer: SummaryModel, budgets: Sizes) -> None:
    """L2, else L3. A summary replaces the messages before ``cut`` only when the result is clearly
    smaller than the compaction's input; one that would not be (a rambling one can even grow the
    context) is discarded and the next candidate tries: the model's, then the extractive one, then
    (in the plan) dropping the oldest turns."""
    limit = measure.measure(messages) * (1 - SETTINGS.thrash_min_freed)
    count_text = lambda text: measure.count(Message.user(text))  # noqa: E731
    candidates = _candidates(draft, messages, cut, request, measure, summarizer, budgets)
    carried = carry_over(messages, cut)  # what must survive whatever the summary says
    items = must_keep(carried)
    note = recall_note(carried.through_turn, carried.split_turn, request.recall)
    rejected = []
    for layer, body, extra in candidates:
        bare = measure.measure(rebuild(draft.messages, cut, body, draft.files, **extra))
        room = Room(request.target, measure.measure(draft.messages), bare, max(0, budgets.summary - count_text(body)))
        users, facts, audit_budget = budgets.budgets(room.allowed(kept_share(body, items)))
        carried_text = render(carried, body=body, user_budget=users, facts_budget=facts, count=count_text)
        checked = audit(body, carried_text, items, budget=audit_budget, count=count_text)
        kept = "\n\n".join(part for part in (checked.section, carried_text) if part)
        rebuilt = rebuild(draft.messages, cut, body, draft.files, note=note, kept=kept, carryover=carried.to_meta(),
                          **extra)
        if measure.measure(rebuilt) > limit:
            rejected.append(layer)
            continue
        if rejected:
            draft.notes.append("The model's summary was not smaller than what it replaced, so a "
                               "summary built without a model was used instead.")
        draft.summary_chars = len(body)
        draft.summarised_by_model = layer in ("summarize", native.LAYER)
        draft.audit = (checked.items, checked.kept_by_model, checked.restored)
        draft.apply(layer, rebuilt)
        break
    else:
        draft.notes.append("A summary would not be smaller than the messages it replaces, so none was used.")
        return
    # A clearing or collapse that only touched summarised messages had no effect of its own.
    originals = {id(m) for m in messages}
    survivors = [m for m in draft.messages[1:] if id(m) not in originals]
    for flag, name in (("cleared", "clear_tool_results"), ("collapsed", "collapse")):
        if name in draft.layers and not any(m.meta.get(flag) for m in survivors):
            draft.layers.remove(name)


def _candidates(draft: Draft, messages: list[Message], cut: Cut, request: CompactionRequest, measure: Measure,
                summarizer: SummaryModel, budgets: Sizes) -> list[tuple[str, str, dict]]:
    """The candidate summaries, best first: the model's (in the conversation itself when it can
    be, else as a quoted transcript), then the extractive one built without a model."""
    # The provider's own compaction first, where it has one (compaction/native.py); ours after it.
    own = native.candidate(summarizer, messages[:history_start(messages)] + cut.summarised(messages), request.focus)
    if own is not None:
        return [own, ("extractive", _extractive(messages, cut, draft.files, budgets.summary, measure.count), {})]
    candidates: list[tuple[str, str, dict]] = []
    try:
        body = _in_conversation(messages, cut, request, measure, summarizer, budgets.summary)
        if body is None:
            body, truncated = summarise(summary_input(messages, cut, request.focus), summarizer.quoted,
                                        summarizer.count, input_budget=summarizer.window - budgets.summary,
                                        max_output_tokens=budgets.summary)
            if truncated:
                draft.notes.append("The history was too long for the summarizer; part of its middle was left out.")
        acceptance.check(body, messages)
        candidates.append(("summarize", body, {}))
    except SummaryUnavailable as exc:
        draft.notes.append(f"The summary was built without a model because {exc}.")
        draft.summary_rejected = getattr(exc, "reason", "failed")
    candidates.append(("extractive", _extractive(messages, cut, draft.files, budgets.summary, measure.count), {}))
    return candidates


def _in_conversation(messages: list[Message], cut: Cut, request: CompactionRequest, measure: Measure,
                     summarizer: SummaryModel, max_output: int) -> str | None:
    """The summary asked for at the end of the conversation itself, or None when that form does
    not apply (another summarizer model, after an overflow, a request that would not fit the
    window, a reply that called a tool, a provider that still found it too long): the quoted
    form is tried then. A model that fails or answers nothing raises SummaryUnavailable, as
    the quoted form would: asking again in another form would only wait on it twice."""
    ask = summarizer.in_conversation
    if ask is None or not request.shared_allowed:
        return None
    window, focus = summarizer.window, request.focus
    prefix = shared_prefix(messages, cut)
    # The reply inside the window by the best count there is: ``measure`` corrected by how far it
    # fell short of the caller's size; it may shrink to what is left, down to a useful summary.
    size = measure.measure(prefix + [Message.user(shared_instructions(messages, cut, focus, max_output))])
    room = (window - size - request.undercount
            - max(SETTINGS.shared_margin_min, int(window * SETTINGS.shared_margin_ratio)))
    max_output = min(max_output, room)
    if max_output < SETTINGS.min_summary_tokens:
        return None
    try:
        text, max_output = with_room(lambda limit: ask(prefix, shared_instructions(messages, cut, focus, limit), limit),
                                     max_output, room)
    except (QuotedFormNeeded, ContextOverflowError):
        return None
    except SummaryUnavailable:
        raise
    except Exception as exc:
        raise SummaryUnavailable(f"the summarizer failed: {exc}") from exc
    return cap_tokens(text.strip(), max_output, summarizer.count)


def _extractive(messages: list[Message], cut: Cut, files: tuple[list[str], list[str]], max_tokens: int,
                count: Callable[[Message], int]) -> str:
    """The extractive summary, made to fit the size a model summary would have had."""
    for user_chars, max_users in SETTINGS.extractive_sizes:
        body = extractive_summary(messages, cut, files, user_chars=user_chars, max_users=max_users)
        if count(Message.user(body)) <= max_tokens:
            return body
    return cap_tokens(body, max_tokens, count)
