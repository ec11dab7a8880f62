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

# Shares of the compaction threshold. The user's messages get the most (Codex keeps up to 20k
# tokens of them); the total stays small next to the tail, which is ~30% of the threshold.
USER_RATIO = 0.08
USER_CAP_TOKENS = 20_000
FACTS_RATIO = 0.03
AUDIT_RATIO = 0.03
MIN_BUDGET_TOKENS = 40
# The same parts as shares of the room under the target, for windows where the floor leaves little.
SUMMARY_ROOM_SHARE = 0.3
USER_ROOM_SHARE = 0.15
FACTS_ROOM_SHARE = 0.05
AUDIT_ROOM_SHARE = 0.05
# A summary shorter than this says too little to be worth a model call.
MIN_SUMMARY_TOKENS = 128
TAIL_RATIO = 0.3
TAIL_CAP_TOKENS = 20_000
# Below this much room under the target (a small window) the tail is only the newest step, and
# old tool results are cleared whenever compaction runs: every compaction rewrites the prefix anyway.
SMALL_ROOM_TOKENS = 4_096
# Never more than this share of the compacted request without them: a good summary leaves little to
# add, and a poor one must not make the request after compaction much bigger.
MAX_ADDED_SHARE = 0.15


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
        return self.room < SMALL_ROOM_TOKENS

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
    summary = min(summary_cap, max(MIN_SUMMARY_TOKENS, int(room * SUMMARY_ROOM_SHARE)))
    users = min(max(MIN_BUDGET_TOKENS, min(USER_CAP_TOKENS, int(threshold * USER_RATIO))),
                max(MIN_BUDGET_TOKENS, int(room * USER_ROOM_SHARE)))
    facts = min(max(MIN_BUDGET_TOKENS, int(threshold * FACTS_RATIO)),
                max(MIN_BUDGET_TOKENS, int(room * FACTS_ROOM_SHARE)))
    audit = min(max(MIN_BUDGET_TOKENS, int(threshold * AUDIT_RATIO)),
                max(MIN_BUDGET_TOKENS, int(room * AUDIT_ROOM_SHARE)))
    tail = max(0, min(int(threshold * TAIL_RATIO), TAIL_CAP_TOKENS, room - summary - users - facts - audit))
    return Sizes(room, summary, users, facts, audit, 0 if room < SMALL_ROOM_TOKENS else tail)


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
