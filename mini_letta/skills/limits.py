"""Every size the skills room works with, as data in one place (a test holds the anchors' numbers)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SkillLimits:
    # The list of names and descriptions in the system prompt: Codex gives it about 2% of the
    # window, and 8,000 characters when the window is not known.
    list_share: float = 0.02
    list_chars_unknown_window: int = 8_000
    # The Agent Skills specification caps a description at 1,024 characters; shortening never goes
    # below this many (after that, skills are left out of the list instead).
    description_chars: int = 1_024
    min_description_chars: int = 24
    # Under this window (and in the compact floor) the list is names only.
    names_only_below_window: int = 8_192
    # After a compaction, Claude Code re-attaches each invoked skill's body capped at 5,000 tokens;
    # the total is ours (Claude Code's docs name a per-skill cap only), and never more than this
    # share of the window.
    reattach_tokens_per_skill: int = 5_000
    reattach_tokens_total: int = 25_000
    reattach_window_share: float = 0.25
    # A folder of a hostile repository could hold a million skill folders.
    max_skills_per_folder: int = 500
    # A SKILL.md larger than this is read up to it (the rest is cut, with a notice).
    skill_file_bytes: int = 256 * 1024


LIMITS = SkillLimits()
