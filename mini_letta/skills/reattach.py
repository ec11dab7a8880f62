"""What a compaction puts back of the skills invoked before it.

After each compaction every invoked skill's body is added again, as a ``skill`` call and its
result (the caller puts them after the summary), newest first within a cap per skill and in total, and the carry-over names
them all, those left out for lack of room included.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mini_letta.messages import Message
from mini_letta.skills.activation import REATTACHED, activate
from mini_letta.skills.discovery import Skill
from mini_letta.skills.invocations import Invocation, exchange
from mini_letta.settings import SETTINGS, SkillSettings


@dataclass
class Reattachment:
    messages: list[Message] = field(default_factory=list)  # skill call and result pairs, oldest first
    reattached: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # the compaction kept the body
    left_out: list[str] = field(default_factory=list)  # no room left
    missing: list[str] = field(default_factory=list)  # no longer found

    def carryover_line(self, invoked: Sequence[Invocation]) -> str:
        """The carry-over's sentence on skills; empty when none was invoked."""
        if not invoked:
            return ""
        named = ", ".join(f"{i.name} ({i.args})" if i.args else i.name for i in invoked)
        line = f"Skills invoked in this session: {named}."
        if self.reattached:
            line += f" Re-attached after this summary: {', '.join(self.reattached)}."
        if self.kept:
            line += f" Still in the context below: {', '.join(self.kept)}."
        if self.left_out:
            line += f" Left out for lack of room (call the skill tool to load again): {', '.join(self.left_out)}."
        if self.missing:
            line += f" No longer found: {', '.join(self.missing)}."
        return line


def reattach_budget(window: int | None, limits: SkillSettings = SETTINGS.skills) -> int:
    """The tokens all re-attached skills may take together in ``window``."""
    if window is None or window <= 0:
        return limits.reattach_tokens_total
    return min(limits.reattach_tokens_total, math.floor(window * limits.reattach_window_share))


def reattach(invoked: Sequence[Invocation], find: Callable[[str], Skill | None], count: Callable[[str], int], *,
             window: int | None, kept: Collection[str] = (), workspace: Path | None = None,
             limits: SkillSettings = SETTINGS.skills) -> Reattachment:
    """The messages that bring back ``invoked`` (oldest first) after a compaction, but for those
    named in ``kept`` (the compaction kept their bodies). The newest get room first: each at most
    ``reattach_tokens_per_skill``, all within :func:`reattach_budget`."""
    result = Reattachment()
    left = reattach_budget(window, limits)
    added: list[Message] = []
    for invocation in reversed(invoked):
        if invocation.name in kept:
            result.kept.insert(0, invocation.name)
            continue
        skill = find(invocation.name)
        if skill is None:
            result.missing.insert(0, invocation.name)
            continue
        room = min(limits.reattach_tokens_per_skill, left)
        activation = activate(skill, invocation.args, lambda text: count(text) <= room,
                              workspace=workspace, heading=REATTACHED)
        size = count(activation.text)
        if size > room:
            result.left_out.insert(0, invocation.name)
            continue
        left -= size
        added[:0] = exchange(invocation, activation.text, reattached=True)
        result.reattached.insert(0, invocation.name)
    result.messages = added
    return result
