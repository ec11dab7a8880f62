"""A skill's body as the model reads it: when it is invoked, and again after a compaction.

A pure function of the skill, its arguments and a ``fits(text)`` test (the room a tool result or a
re-attachment has). The text names the skill's folder, so the model can read its ``references/``
and run its ``scripts/`` with the ordinary tools (and so under the usual approvals and sandbox). A
body larger than the room keeps its first lines and ends with a line saying where the rest is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mini_letta.skills.discovery import Skill

INVOKED = 'Skill "{name}" invoked{args}.'
TYPED = 'Skill "{name}" invoked by the user{args}.'
REATTACHED = 'Skill "{name}", invoked earlier{args}, re-attached after a compaction.'


@dataclass(frozen=True)
class Activation:
    name: str
    args: str
    text: str
    cut: bool


def activate(skill: Skill, args: str, fits: Callable[[str], bool], *, workspace: Path | None = None,
             heading: str = INVOKED) -> Activation:
    """The text that brings ``skill`` into the conversation, cut at a line end until ``fits`` it.
    Paths are shown relative to ``workspace`` when the skill is inside it."""
    args = args.strip()
    head = _head(skill, args, workspace, heading)
    whole = _text(head, skill.body)
    if fits(whole):
        return Activation(skill.name, args, whole, False)
    lines = skill.body.splitlines()

    def cut_at(kept: int) -> str:
        return _text(head, "\n".join(lines[:kept]), _cut_note(skill, kept, len(lines), workspace))

    low, high = 0, len(lines)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(cut_at(middle)):
            low = middle
        else:
            high = middle - 1
    return Activation(skill.name, args, cut_at(low), True)


def _shown(path: Path, workspace: Path | None) -> str:
    if workspace is not None:
        try:
            return str(path.resolve().relative_to(Path(workspace).resolve())) or "."
        except ValueError:
            pass
    return str(path)


def _head(skill: Skill, args: str, workspace: Path | None, heading: str) -> str:
    folder = _shown(skill.folder, workspace)
    where = ("" if skill.in_workspace or workspace is None
             else " (outside the workspace: only a command run outside the sandbox reaches it, and the user "
                 "is asked first)")
    return "\n".join([
        heading.format(name=skill.name, args=f" with arguments: {args}" if args else ""),
        f"Its folder is {folder}{where}; paths the instructions name (scripts/, references/, assets/) "
        "are inside it.",
    ])


def _text(head: str, body: str, note: str = "") -> str:
    return f"<skill>\n{head}\n\n{body.rstrip()}\n{note + chr(10) if note else ''}</skill>"


def _cut_note(skill: Skill, kept: int, total: int, workspace: Path | None) -> str:
    start = skill.body_line + kept
    return (f"[The instructions are cut here to fit the context: {kept:,} of their {total:,} lines are shown. "
            f"The rest is in {_shown(skill.path, workspace)} from line {start:,} (read_file offset={start}).]")
