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

from mini_letta.settings import SETTINGS
from mini_letta.trust.bounded_regex import BadPattern, Matcher, compile_bounded
from mini_letta.toolbox.files import SNIFF_BYTES, binary_reason, open_regular
from mini_letta.toolbox.outcome import ToolError
from mini_letta.toolbox.ripgrep import FileLines, Line, Selection
from mini_letta.toolbox.workspace import Workspace


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
        return compile_bounded(pattern, ignore_case=ignore_case, within_lines=True)
    except BadPattern as exc:
        raise ToolError(str(exc)) from None
    except ImportError:
        raise ToolError("regular-expression search needs ripgrep or google-re2, and neither can run here.") from None


def _scan(ws: Workspace, path: Path, matcher: Matcher, context: int, *, walked: bool = False) -> FileLines | None:
    """The file's matching lines, or None when it has none (unreadable files have none, nor do
    ``walked`` binary files over rg's ``--max-filesize`` for binary files).

    The file is searched in one call (a call per line cost more in Python than the search), and
    line numbers come from the match offsets."""
    try:
        with open_regular(path, ws.relative(path)) as stream:
            head = stream.read(SNIFF_BYTES)
            binary = bool(binary_reason(head))
            if binary and walked and os.fstat(stream.fileno()).st_size > SETTINGS.tools.grep_binary_max_bytes:
                return None
            text = (head + stream.read(SETTINGS.tools.grep_file_bytes)).decode("utf-8", errors="replace")
    except (OSError, ToolError):
        return None  # unreadable, vanished or swapped for a special file: not the model's concern
    if binary:
        # Its lines are never shown; grep counts it when no text file matches, as with rg.
        return FileLines(binary=True) if matcher.search(text) else None
    hits: dict[int, tuple[int, int]] = {}  # line index → the first match's span in that line
    line, counted_to = 0, 0
    for match in matcher.finditer(text):
        line += text.count("\n", counted_to, match.start())
        counted_to = match.start()
        begins = text.rfind("\n", 0, match.start()) + 1
        hits.setdefault(line, (match.start() - begins, match.end() - begins))
    if not hits:
        return None
    rows = text.split("\n")
    if len(rows) > 1 and rows[-1] == "":
        rows.pop()  # after the last newline: not a line
    wanted = sorted({i for line in hits for i in range(line - context, line + context + 1) if 0 <= i < len(rows)})
    found = FileLines()
    for index in wanted:
        start, end = hits.get(index, (0, 0))
        found.lines.append(Line(index + 1, rows[index].rstrip("\r"), index in hits, start, end))
    return found


def matching_files(ws: Workspace, pattern: str, selection: Selection, ignore_case: bool,
                   context: int) -> dict[str, FileLines]:
    """As :func:`mini_letta.toolbox.ripgrep.matching_files`, with each text file's lines already
    read (the walker reads them anyway)."""
    matcher = _matcher(pattern, ignore_case)
    walked = ws.resolve(selection.base).is_dir()
    found: dict[str, FileLines] = {}
    for path in _selected(ws, selection):
        lines = _scan(ws, path, matcher, context, walked=walked)
        if lines is not None:
            found[ws.relative(path)] = lines
    return found


def file_lines(ws: Workspace, pattern: str, paths: list[str], ignore_case: bool,
               context: int) -> dict[str, FileLines]:
    matcher = _matcher(pattern, ignore_case)
    result = {}
    for rel in paths:
        lines = _scan(ws, ws.resolve(rel), matcher, context)
        if lines is not None:
            result[rel] = lines
    return result


def list_files(ws: Workspace, selection: Selection, *, newest_first: bool = False) -> list[str]:
    listed = [ws.relative(path) for path in _selected(ws, selection)]
    if not newest_first:
        return listed
    times = {}
    for rel in listed:
        try:
            times[rel] = os.stat(ws.root / rel).st_mtime_ns
        except OSError:
            continue  # vanished since the walk
    return sorted(times, key=lambda rel: -times[rel])
