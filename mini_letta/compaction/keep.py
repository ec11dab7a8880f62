"""How big each part of a compacted request may be, from the room the floor leaves.

A compaction aims at a target (a share of the threshold). The floor (system prompt and tool
schemas) is paid whatever happens; what is left under the target is shared between the summary,
the carry-over and audit that follow it, and the verbatim tail. In a large window the room is
plentiful and the usual shares of the threshold apply; in a small one (a 4k window with a 1.7k
floor leaves ~400 tokens) every part is cut to its share of that room, and the tail shrinks to
the newest step.

``Room`` then bounds what the carry-over and audit add to one particular summary.
"""

from __future__ import annotations

from dataclasses import dataclass

from mini_letta.compaction.carryover import RECALL_TOOL
from mini_letta.settings import SETTINGS


@dataclass(frozen=True)
class Sizes:
    """Token budgets of one compaction (as the provider counts them)."""

    room: int  # the target less the floor
    summary: int  # the summarizer's output cap
    users: int  # the user's messages in the carry-over
    facts: int  # the other carried facts
    audit: int  # the audit's "Also keep" section
    tail: int  # the messages kept verbatim (at least the newest step, whatever this says)

    @property
    def small(self) -> bool:
        return self.room < SETTINGS.keep_small_room_tokens

    def budgets(self, allowed: int | None = None) -> tuple[int, int, int]:
        """Users, facts and audit budgets, shrunk together when ``allowed`` (what one summary
        leaves, ``Room.allowed``) is less than their sum."""
        budgets = (self.users, self.facts, self.audit)
        if allowed is None or allowed >= sum(budgets):
            return budgets
        share = max(0, allowed) / max(1, sum(budgets))
        return tuple(int(b * share) for b in budgets)  # type: ignore[return-value]


def sizes_for(*, threshold: int, target: int, floor: int, summary_cap: int) -> Sizes:
    """The budgets of a compaction aiming at ``target`` with ``floor`` already spent; each part is
    the smaller of its usual share of the threshold and its share of the room left."""
    room = max(0, target - floor)
    summary = min(summary_cap, max(SETTINGS.min_summary_tokens, int(room * SETTINGS.keep_summary_room_share)))
    users = min(max(SETTINGS.keep_min_budget_tokens, min(SETTINGS.keep_user_cap_tokens, int(threshold * SETTINGS.keep_user_ratio))),
                max(SETTINGS.keep_min_budget_tokens, int(room * SETTINGS.keep_user_room_share)))
    facts = min(max(SETTINGS.keep_min_budget_tokens, int(threshold * SETTINGS.keep_facts_ratio)),
                max(SETTINGS.keep_min_budget_tokens, int(room * SETTINGS.keep_facts_room_share)))
    audit = min(max(SETTINGS.keep_min_budget_tokens, int(threshold * SETTINGS.keep_audit_ratio)),
                max(SETTINGS.keep_min_budget_tokens, int(room * SETTINGS.keep_audit_room_share)))
    tail = max(0, min(int(threshold * SETTINGS.keep_tail_ratio), SETTINGS.keep_tail_cap_tokens, room - summary - users - facts - audit))
    return Sizes(room, summary, users, facts, audit, 0 if room < SETTINGS.keep_small_room_tokens else tail)


@dataclass(frozen=True)
class Room:
    """The sizes that bound what the audit and carry-over may add (tokens, whole request)."""

    target: int  # where the compacted request should land
    before: int  # the request before compacting
    bare: int  # the compacted request with the bare summary
    unused_summary: int  # the part of the summary's output budget the summary did not use

    def allowed(self, kept_share: float) -> int:
        """What is left under the target; at most half of what the summary freed (a compaction must
        shrink the request, however little it summarised); and at most ``SETTINGS.keep_max_added_share`` of the
        bare request, plus, for a summary that kept less than half of the must-keep items
        (``kept_share``), the summary room it left unused: an "OK." gets that room filled, a
        summary that kept most of them gets little added."""
        weak = max(0.0, 1 - 2 * kept_share)
        return min(self.target - self.bare, (self.before - self.bare) // 2,
                   int(self.bare * SETTINGS.keep_max_added_share + self.unused_summary * weak))


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
