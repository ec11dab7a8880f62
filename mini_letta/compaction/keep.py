"""What a summary message adds to the model's summary: where the rest is, the audit, the carry-over.

``keep_task`` is the one entry point the controller calls after it has a summary body (from the
model or the extractive layer); it sizes everything from the compaction threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mini_letta.compaction.audit import audit, kept_share, must_keep
from mini_letta.compaction.carryover import RECALL_TOOL, carry_over, render
from mini_letta.compaction.turns import Cut

# Shares of the compaction threshold. The user's messages get the most (Codex keeps up to 20k
# tokens of them); the total stays small next to the tail, which is ~30% of the threshold.
USER_RATIO = 0.08
USER_CAP_TOKENS = 20_000
FACTS_RATIO = 0.03
AUDIT_RATIO = 0.03
MIN_BUDGET_TOKENS = 40
# Never more than this share of the compacted request without them: a good summary leaves little to
# add, and a poor one must not make the request after compaction much bigger.
MAX_ADDED_SHARE = 0.15


def budget_tokens(threshold: int) -> int:
    """The most the audit and carry-over may add to a summary (the tail budget leaves this room)."""
    return sum(_budgets(threshold))


def _budgets(threshold: int, room: int | None = None) -> tuple[int, int, int]:
    """Token budgets of the user's messages, the other carried facts and the audit: shares of the
    threshold, shrunk together when ``room`` (what the request has left under its target) is less."""
    budgets = (max(MIN_BUDGET_TOKENS, min(USER_CAP_TOKENS, int(threshold * USER_RATIO))),
               max(MIN_BUDGET_TOKENS, int(threshold * FACTS_RATIO)),
               max(MIN_BUDGET_TOKENS, int(threshold * AUDIT_RATIO)))
    if room is None or room >= sum(budgets):
        return budgets
    share = max(0, room) / sum(budgets)
    return tuple(int(b * share) for b in budgets)  # type: ignore[return-value]


@dataclass(frozen=True)
class Room:
    """The sizes that bound what the audit and carry-over may add (tokens, whole request)."""

    target: int  # where the compacted request should land
    before: int  # the request before compacting
    bare: int  # the compacted request with the bare summary
    unused_summary: int  # the part of the summary's output budget the summary did not use

    def allowed(self, kept_share: float) -> int:
        """What is left under the target; at most half of what the summary freed (a compaction must
        shrink the request, however little it summarised); and at most ``MAX_ADDED_SHARE`` of the
        bare request, plus, for a summary that kept less than half of the must-keep items
        (``kept_share``), the summary room it left unused: an "OK." gets that room filled, a
        summary that kept most of them gets little added."""
        weak = max(0.0, 1 - 2 * kept_share)
        return min(self.target - self.bare, (self.before - self.bare) // 2,
                   int(self.bare * MAX_ADDED_SHARE + self.unused_summary * weak))


@dataclass
class Kept:
    note: str  # right under the summary header: which turns this stands for, and where to find them
    text: str  # after the summary: the audit's "Also keep" and the carry-over
    meta: dict[str, Any] = field(default_factory=dict)
    items: int = 0
    kept_by_model: int = 0
    restored: int = 0


def recall_note(through_turn: int, split: bool, recall: bool) -> str:
    """Which turns the summary stands for, and (when the tool is offered) how to get them back."""
    if through_turn <= 0:
        return ""
    whole = through_turn - 1 if split else through_turn
    turns = "Turn 1" if whole == 1 else f"Turns 1–{whole}" if whole > 1 else ""
    if split:
        turns = (turns + " and the" if turns else "The") + f" first steps of turn {through_turn}"
    where = f"; {RECALL_TOOL} searches the full record of them, tool outputs included" if recall else ""
    return f"{turns} {'is' if turns == 'Turn 1' else 'are'} summarized here{where}."


def keep_task(messages: list, cut: Cut, body: str, *, threshold: int, count: Callable[[str], int],
              recall: bool, room: Room | None = None) -> Kept:
    """The note, audit section and carry-over for a summary ``body`` of ``messages`` cut at ``cut``.

    Without ``room`` the budgets are shares of ``threshold``; with it they shrink to what
    ``Room.allowed`` leaves (after an overflow, a long summary, a short history).
    """
    carried = carry_over(messages, cut)
    items = must_keep(carried)
    user_budget, facts_budget, audit_budget = _budgets(threshold, room.allowed(kept_share(body, items)) if room else None)
    carried_text = render(carried, body=body, user_budget=user_budget, facts_budget=facts_budget, count=count)
    checked = audit(body, carried_text, items, budget=audit_budget, count=count)
    text = "\n\n".join(part for part in (checked.section, carried_text) if part)
    return Kept(recall_note(carried.through_turn, carried.split_turn, recall), text,
                {"carryover": carried.to_meta()}, checked.items, checked.kept_by_model, checked.restored)
