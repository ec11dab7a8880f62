"""What ``/skills`` prints: each skill's source, what it costs in tokens, whether it was invoked."""

from __future__ import annotations

from collections.abc import Sequence

from mini_letta.skills.listing import SkillList
from mini_letta.skills.skillset import SkillRow
from mini_letta.wording import counted


def skills_report(rows: Sequence[SkillRow], listed: SkillList) -> list[str]:
    """Plain lines (names and sources come from files: print them as text, never as markup)."""
    offered = [row for row in rows if row.offered]
    if not rows:
        return ["No skills. Put SKILL.md folders in .agents/skills, .claude/skills or .mini-letta/skills of "
                "this folder, or in skills/ of the data folder, then /skills reload."]
    head = (f"{counted(len(offered), 'skill')} offered; the list costs {listed.tokens:,} tokens of its "
            f"{_cap(listed)}")
    if listed.names_only:
        head += ", names only"
    lines = [head + "."]
    if listed.left_out:
        lines.append(f"{counted(listed.left_out, 'skill')} left out of the list for lack of room (still usable "
                     "with /name or $name).")
    width = max(len(row.name) for row in rows)
    source_width = max(len(row.source) for row in rows)
    for row in rows:
        if not row.offered:
            cost = "not offered: this folder is not trusted (/trust, then /skills reload)"
        else:
            listed_cost = f"list {row.listed_tokens:,}" if row.listed_tokens else "not in the list"
            cost = f"{listed_cost} · body {row.body_tokens:,} tokens" + ("  invoked" if row.invoked else "")
        lines.append(f"  {row.name:<{width}}  {row.source:<{source_width}}  {cost}")
    return lines


def _cap(listed: SkillList) -> str:
    if listed.cap.tokens is not None:
        return f"{listed.cap.tokens:,}-token cap"
    return f"{listed.cap.chars:,}-character cap"
