"""The list of skills in the system prompt, kept within its share of the window.

A pure function of the skills, the window and a token counter. The list holds each skill's name
and description; when it is over its cap, every description is cut to one shorter length (the
longest that lets all skills fit), and only when the shortest allowed descriptions still do not
fit are skills left out, from the end. Small windows and the compact floor get names only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mini_letta.resources import prompt
from mini_letta.skills.discovery import Skill
from mini_letta.settings import SETTINGS, SkillSettings
from mini_letta.trust.terminal_text import preview
from mini_letta.wording import counted

Count = Callable[[str], int]


@dataclass(frozen=True)
class Cap:
    """What the list may cost: tokens when the window is known, else characters."""

    tokens: int | None = None
    chars: int | None = None

    def fits(self, text: str, count: Count) -> bool:
        if self.tokens is not None:
            return count(text) <= self.tokens
        return len(text) <= (self.chars or 0)

    def describe(self, window: int | None, limits: SkillSettings) -> str:
        if self.tokens is not None and window is not None:
            return f"{self.tokens:,} tokens ({limits.list_share:.0%} of the {window:,}-token window)"
        return f"{self.chars:,} characters (the window is not known)"


def list_cap(window: int | None, limits: SkillSettings = SETTINGS.skills) -> Cap:
    if window is None or window <= 0:
        return Cap(chars=limits.list_chars_unknown_window)
    return Cap(tokens=math.floor(window * limits.list_share))


@dataclass(frozen=True)
class SkillList:
    text: str  # empty when no skill is listed
    tokens: int
    shown: int
    shortened: int  # descriptions cut to fit
    left_out: int
    names_only: bool
    cap: Cap
    window: int | None
    description_chars: int | None = None  # the length descriptions were cut to; None: names only
    entries: tuple[tuple[str, str], ...] = ()  # (name, its line or name in the text), as shown

    def notice(self, limits: SkillSettings = SETTINGS.skills) -> str | None:
        """One sentence for the user when the list is not the whole of every skill, else None."""
        if not self.shortened and not self.left_out:
            return None
        what = [f"{counted(self.shortened, 'description')} shortened"] if self.shortened else []
        what += [f"{counted(self.left_out, 'skill')} left out"] if self.left_out else []
        form = "names only, " if self.names_only else ""
        return (f"The skills list is kept within {self.cap.describe(self.window, limits)}: {form}"
                f"{' and '.join(what)}. /skills shows them all.")


def skill_list(skills: Sequence[Skill], window: int | None, count: Count, *, compact: bool = False,
               limits: SkillSettings = SETTINGS.skills) -> SkillList:
    """The list for ``window`` (None: not known), within :func:`list_cap`. ``compact``: the compact
    floor is sent, so names only, as in windows under ``names_only_below_window``."""
    cap = list_cap(window, limits)
    names_only = compact or (window is not None and window < limits.names_only_below_window)
    total = len(skills)

    def result(text: str, shown: int, shortened: int = 0, length: int | None = None) -> SkillList:
        entries = tuple((skill.name, skill.name if length is None else _entry(skill, length)) for skill in skills[:shown])
        return SkillList(text, count(text) if text else 0, shown, shortened, total - shown, names_only, cap, window,
                         length, entries)

    if not skills:
        return result("", 0)
    if names_only:
        shown = _most(total, lambda k: cap.fits(_names(skills[:k], total - k), count))
        return result(_names(skills[:shown], total - shown) if shown else "", shown)
    full = limits.description_chars
    if cap.fits(_described(skills, full, 0), count):
        return result(_described(skills, full, 0), total, _shortened(skills, full), full)
    shortest = limits.min_description_chars
    if cap.fits(_described(skills, shortest, 0), count):
        length = shortest + _most(full - shortest, lambda extra: cap.fits(_described(skills, shortest + extra, 0), count))
        return result(_described(skills, length, 0), total, _shortened(skills, length), length)
    shown = _most(total, lambda k: cap.fits(_described(skills[:k], shortest, total - k), count))
    return result(_described(skills[:shown], shortest, total - shown) if shown else "", shown,
                  _shortened(skills[:shown], shortest), shortest)


def _most(upper: int, fits: Callable[[int], bool]) -> int:
    """The largest n in [0, upper] with ``fits(n)``, for ``fits`` true up to some n and false after."""
    low, high = 0, upper
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _shortened(skills: Sequence[Skill], length: int) -> int:
    return sum(len(skill.description) > length for skill in skills)


def _left_out_line(left_out: int) -> str:
    return f"({counted(left_out, 'more skill')} not listed for lack of room.)" if left_out else ""


def _entry(skill: Skill, length: int) -> str:
    return f"- {skill.name}: {preview(skill.description, length)}"


def _described(skills: Sequence[Skill], length: int, left_out: int) -> str:
    lines = [prompt("skills_list").rstrip("\n")]
    lines += [_entry(skill, length) for skill in skills]
    return "\n".join(lines + ([_left_out_line(left_out)] if left_out else []))


def _names(skills: Sequence[Skill], left_out: int) -> str:
    text = prompt("skills_list_compact").rstrip("\n") + " " + ", ".join(skill.name for skill in skills)
    return text + (" " + _left_out_line(left_out) if left_out else "")
