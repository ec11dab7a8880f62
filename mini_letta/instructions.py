"""Project instructions: ``AGENTS.md`` and ``CLAUDE.md`` from the workspace root, for the system prompt.

The text is capped because it is paid on every request (it is part of the floor); a cut file says
so, with figures, so neither the user nor the model mistakes a fragment for the whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mini_letta.notices import Say, quiet
from mini_letta.settings import SETTINGS
from mini_letta.workspace_files import read_workspace_text

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
# What is read of one file at most, whatever the character cap: enough to say how long it is.
READ_CAP_BYTES = 1024 * 1024


@dataclass
class Instructions:
    text: str = ""
    sources: list[str] = field(default_factory=list)
    truncated: bool = False


def _cut(text: str, room: int) -> str:
    """The first ``room`` characters, ending at a line break when one is reasonably close."""
    head = text[:room]
    newline = head.rfind("\n")
    return head[: newline + 1] if newline >= room * 0.8 else head


def load_instructions(workspace: Path | str, cap_chars: int = SETTINGS.instructions_cap_chars, say: Say = quiet) -> Instructions:
    """The instruction files found in ``workspace``, each labelled, together at most ``cap_chars``;
    a file that cannot be read is said through ``say`` and skipped."""
    root = Path(workspace)
    result = Instructions()
    parts: list[str] = []
    seen: set[str] = set()
    room = max(0, cap_chars)
    for name in INSTRUCTION_FILES:
        # A regular file inside the workspace only (see workspace_files); else one notice, and skipped.
        content = read_workspace_text(root / name, max(READ_CAP_BYTES, 4 * cap_chars), within=root, say=say)
        if content is None:
            continue
        body = content.strip()
        # CLAUDE.md is often a copy of, or a link to, AGENTS.md: paying for it twice buys nothing.
        if not body or body in seen:
            continue
        seen.add(body)
        shown = body if len(body) <= room else _cut(body, room)
        room -= len(shown)
        result.sources.append(name)
        section = [f'<project_instructions file="{name}">']
        if shown:
            section.append(shown.rstrip("\n"))
        if len(shown) < len(body):
            result.truncated = True
            section.append(f"[{name} truncated: {len(shown):,} of {len(body):,} chars shown]")
        section.append("</project_instructions>")
        parts.append("\n".join(section))
    result.text = "\n\n".join(parts)
    return result
