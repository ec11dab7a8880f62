"""``@path`` in a message: the workspace's paths to complete, and the files' contents attached.

The paths come from ``git ls-files`` (tracked and untracked, ``.gitignore`` honoured) inside a git
work tree, else from a walk that skips hidden folders and the usual generated ones. A mention of a
file inside the workspace attaches its text, read as ``read_file`` reads it (numbered lines, capped
like a tool's output, binary files refused); the message is then counted like any other before it
is sent. An ``@`` word that names no file (an e-mail address, a handle) is left as it is.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mini_letta import safe_git
from mini_letta.toolbox import files
from mini_letta.toolbox.outcome import ToolError
from mini_letta.toolbox.search import SKIP_DIRS
from mini_letta.toolbox.workspace import Workspace

MAX_PATHS = 20_000
GIT_TIMEOUT_SECONDS = 5
MENTION = re.compile(r"(?<!\S)@([^\s@]+)")


def workspace_paths(root: Path) -> list[str]:
    """Workspace-relative file paths for completion, at most ``MAX_PATHS``."""
    try:
        # The user's own config is read (its core.excludesFile); the workspace's programs never run.
        listed = safe_git.run(root, "ls-files", "--cached", "--others", "--exclude-standard", "-z",
                              user_config=True, timeout=GIT_TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        listed = None
    if listed is not None and listed.returncode == 0:
        paths = [p for p in listed.stdout.decode("utf-8", errors="replace").split("\0") if p]
        return sorted(set(paths))[:MAX_PATHS]
    found: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        base = Path(folder).relative_to(root)
        found += [(base / name).as_posix() for name in sorted(names) if not name.startswith(".")]
        if len(found) >= MAX_PATHS:
            break
    return found[:MAX_PATHS]


@dataclass
class Attached:
    text: str  # the message with the files' contents after it
    paths: list[str] = field(default_factory=list)  # attached, workspace-relative
    problems: list[str] = field(default_factory=list)  # mentioned files that could not be attached
    # path -> what of it was attached when not all of it: "lines 1-11 of 304"
    partial: dict[str, str] = field(default_factory=dict)

    def described(self) -> list[str]:
        """Each attached path, with the part of it attached when it is not the whole file."""
        return [f"{path} ({self.partial[path]})" if path in self.partial else path for path in self.paths]


_FIT_NOTE = "[output cut to about"
_NUMBERED = re.compile(r"^\s*(\d+)\t")
_SHOWN_UP_TO = re.compile(r"^\[(?:output limit reached after line ([\d,]+)|showing lines [\d,]+-([\d,]+) of)", re.M)


def _lines_in(path: Path) -> int:
    with path.open("rb") as stream:
        count = last = 0
        for block in iter(lambda: stream.read(1 << 20), b""):
            count += block.count(b"\n")
            last = block[-1]
        return count + (1 if last not in (0, 10) else 0)


def attach_mentions(text: str, workspace: Path | Workspace, max_chars: int,
                    fit: Callable[[str], str] | None = None) -> Attached:
    """``text`` with the contents of each ``@path`` that names a file in the workspace (or a folder
    added to it). ``fit`` cuts a file's text further to what the context has room for in tokens
    (``toolbox.outcome.fit_tokens``): ``max_chars`` alone lets dense code take 1.6 times the room."""
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    result = Attached(text)
    parts = []
    for raw in dict.fromkeys(match.group(1).rstrip(".,;:!?)") for match in MENTION.finditer(text)):
        try:
            target = ws.resolve(raw)
        except ToolError:
            outside = _outside_file(raw, workspace)
            if outside:  # a file that is there, not a handle or an address: say why it is left out
                result.problems.append(f"@{raw} was not attached: {outside} is outside the workspace "
                                       f"{ws.root}; only files inside it are attached (/add-dir adds a folder).")
            continue
        if not target.is_file():
            continue
        relative = ws.relative(target)
        try:
            content = files.read_file(ws, relative, max_chars=max_chars)
        except (ToolError, OSError) as error:
            result.problems.append(f"@{raw} was not attached: {error}")
            continue
        if fit is not None:
            content = fit(content)
        shown = _shown_lines(content)
        if shown is not None:
            total = _lines_in(target)
            result.partial[relative] = f"lines 1-{shown:,} of {total:,}; {total - shown:,} left out"
        result.paths.append(relative)
        parts.append(f'<file path="{relative}">\n{content}\n</file>')
    if parts:
        result.text = text + "\n\nFiles I attached with @:\n" + "\n".join(parts)
    return result


def _shown_lines(content: str) -> int | None:
    """The last line of the file in ``content`` when ``read_file`` or ``fit`` cut it, else None."""
    cut = _SHOWN_UP_TO.search(content)
    if cut:
        return int((cut.group(1) or cut.group(2)).replace(",", ""))
    if content.rstrip().endswith("]") and _FIT_NOTE in content.rsplit("\n", 1)[-1]:
        numbered = [m for m in map(_NUMBERED.match, content.splitlines()) if m]
        return int(numbered[-1].group(1)) if numbered else 0
    return None


def _outside_file(raw: str, workspace: Path) -> Path | None:
    """The file ``raw`` names outside ``workspace``, when it names one that exists."""
    try:
        candidate = Path(raw).expanduser()
        resolved = (candidate if candidate.is_absolute() else Path(workspace) / candidate).resolve()
        return resolved if resolved.is_file() else None
    except (OSError, ValueError, RuntimeError):
        return None
