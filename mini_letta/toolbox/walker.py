"""The search engine used where ``rg`` cannot run: a walk of the tree in Python.

It answers the same questions as :mod:`mini_letta.toolbox.ripgrep` (which files match, their
lines, which files exist) so ``grep`` and ``glob`` format both alike. It does not read ignore
files; it skips ``SKIP_DIRS`` unless a search names them, never follows a symlinked folder, keeps a
symlinked file only when it resolves inside the workspace, and leaves out FIFOs, sockets and
devices (reading one can block for ever). Patterns go through RE2, so none can hang it.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path

from mini_letta.bounded_regex import BadPattern, Matcher, compile_bounded
from mini_letta.toolbox.files import SNIFF_BYTES, binary_reason, iter_lines, open_regular
from mini_letta.toolbox.outcome import ToolError
from mini_letta.toolbox.ripgrep import FileLines, Line, Selection
from mini_letta.toolbox.workspace import Workspace

# grep searches at most this much of one line (minified files can be megabytes on one line).
MAX_LINE_BYTES = 1024 * 1024


def walk_files(ws: Workspace, base: Path, skip_dirs: frozenset[str]) -> Iterator[Path]:
    """Regular files under ``base`` in a stable order (a folder's files, then its sub-folders)."""
    if base.is_file():
        yield base
        return
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in skip_dirs)
        for name in sorted(files):
            path = Path(folder, name)
            if path.is_symlink():
                try:
                    target = path.resolve()
                except (OSError, RuntimeError):
                    continue
                if not ws.contains(target) or not target.is_file():
                    continue
            elif not path.is_file():
                continue
            yield path


def _selected(ws: Workspace, selection: Selection) -> Iterator[Path]:
    if selection.file_type:
        raise ToolError("type needs ripgrep, which cannot run here; filter with glob instead (e.g. '*.py').")
    for path in walk_files(ws, ws.resolve(selection.base), frozenset(selection.exclude_dirs)):
        if not selection.basename_globs or any(fnmatch.fnmatchcase(path.name, g) for g in selection.basename_globs):
            yield path


def _matcher(pattern: str, ignore_case: bool) -> Matcher:
    try:
        return compile_bounded(pattern, ignore_case=ignore_case)
    except BadPattern as exc:
        raise ToolError(str(exc)) from None
    except ImportError:
        raise ToolError("regular-expression search needs ripgrep or google-re2, and neither can run here.") from None


def _scan(ws: Workspace, path: Path, matcher: Matcher, context: int, first_only: bool) -> FileLines | None:
    """The file's matching lines, or None when it has none (unreadable files have none)."""
    found = FileLines()
    before: list[Line] = []
    after = 0
    try:
        with open_regular(path, ws.relative(path)) as stream:
            if binary_reason(stream.read(SNIFF_BYTES)):
                stream.seek(0)
                hit = any(matcher.search(p.decode("utf-8", errors="replace"))
                          for p, _ in iter_lines(stream, MAX_LINE_BYTES))
                return FileLines(binary=True) if hit else None
            stream.seek(0)
            for number, (piece, _) in enumerate(iter_lines(stream, MAX_LINE_BYTES), start=1):
                text = piece.decode("utf-8", errors="replace").rstrip("\n").rstrip("\r")
                match = matcher.search(text)
                if match is None:
                    if after:
                        found.lines.append(Line(number, text, False))
                        after -= 1
                    elif context:
                        before = (before + [Line(number, text, False)])[-context:]
                    continue
                found.lines += before
                before = []
                found.lines.append(Line(number, text, True, match.start(), match.end()))
                after = context
                if first_only:
                    break
    except (OSError, ToolError):
        return None  # unreadable, vanished or swapped for a special file: not the model's concern
    return found if found.lines else None


def matching_files(ws: Workspace, pattern: str, selection: Selection, ignore_case: bool) -> dict[str, bool]:
    matcher = _matcher(pattern, ignore_case)
    found: dict[str, bool] = {}
    for path in _selected(ws, selection):
        lines = _scan(ws, path, matcher, 0, first_only=True)
        if lines is not None:
            found[ws.relative(path)] = lines.binary
    return found


def file_lines(ws: Workspace, pattern: str, paths: list[str], ignore_case: bool,
               context: int) -> dict[str, FileLines]:
    matcher = _matcher(pattern, ignore_case)
    result = {}
    for rel in paths:
        lines = _scan(ws, ws.resolve(rel), matcher, context, first_only=False)
        if lines is not None:
            result[rel] = lines
    return result


def list_files(ws: Workspace, selection: Selection) -> list[str]:
    return [ws.relative(path) for path in _selected(ws, selection)]
