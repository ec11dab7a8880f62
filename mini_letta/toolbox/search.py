"""grep and glob in pure Python, so they behave the same on every machine.

Both walk the tree without following symlinked folders, skip ``SKIP_DIRS`` and keep only files
whose resolved path stays inside the workspace.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from mini_letta.toolbox.files import SNIFF_BYTES, binary_reason, iter_lines, open_regular, special_kind
from mini_letta.toolbox.outcome import ToolError
from mini_letta.toolbox.workspace import Workspace

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})
MAX_MATCHES = 200
MAX_MATCH_CHARS = 300
# grep searches at most this much of one line (minified files can be megabytes on one line).
MAX_GREP_LINE_BYTES = 1024 * 1024
MAX_GLOB_RESULTS = 200
NOTE_RESERVE = 200


def walk_files(ws: Workspace, base: Path, keep_dirs: frozenset[str] = frozenset()) -> Iterator[Path]:
    """Regular files under ``base`` in a stable order; symlinks are yielded only when they resolve
    inside. FIFOs, sockets and devices are left out: reading one can block for ever."""
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS or d in keep_dirs)
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


def _excerpt(text: str, match: re.Match[str]) -> str:
    if len(text) <= MAX_MATCH_CHARS:
        return text
    start = max(0, match.start() - MAX_MATCH_CHARS // 3)
    piece = text[start:start + MAX_MATCH_CHARS]
    return ("…" if start else "") + piece + ("…" if start + MAX_MATCH_CHARS < len(text) else "")


def grep(ws: Workspace, pattern: str, path: str = ".", *, max_chars: int) -> str:
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}; remember to escape ( ) [ ] . * + ? with \\.") from None
    base = ws.resolve(path)
    if not base.exists():
        raise ToolError(f"{path} does not exist.")
    kind = special_kind(base.stat().st_mode)
    if kind:
        raise ToolError(f"{path} is {kind}, not a regular file; it was not read. Search regular files or folders.")
    files = [base] if base.is_file() else walk_files(ws, base)
    budget = max(0, max_chars - NOTE_RESERVE)
    lines: list[str] = []
    used = binary = 0
    stopped = False
    for file in files:
        try:
            with open_regular(file, ws.relative(file)) as stream:
                if binary_reason(stream.read(SNIFF_BYTES)):
                    binary += 1
                    continue
                stream.seek(0)
                rel = ws.relative(file)
                for number, (piece, _) in enumerate(iter_lines(stream, MAX_GREP_LINE_BYTES), start=1):
                    text = piece.decode("utf-8", errors="replace").rstrip("\n").rstrip("\r")
                    match = regex.search(text)
                    if match is None:
                        continue
                    entry = f"{rel}:{number}: {_excerpt(text, match)}"
                    if len(lines) == MAX_MATCHES or used + len(entry) + 1 > budget:
                        stopped = True
                        break
                    lines.append(entry)
                    used += len(entry) + 1
        except (OSError, ToolError):
            continue  # unreadable, vanished or swapped for a special file: not the model's concern
        if stopped:
            break
    where = ws.relative(base)
    skipped = f" ({binary} binary file{'s' if binary != 1 else ''} skipped)" if binary else ""
    if not lines:
        return f"No matches for /{pattern}/ in {where}{skipped}."
    if stopped:
        lines.append(f"[stopped after {len(lines)} matches; more exist: narrow the pattern or the path]")
    if skipped:
        lines.append(f"[{skipped.strip(' ()')}]")
    return "\n".join(lines)


def _expand_braces(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` → ``*.ts``, ``*.tsx`` (models write this; Python's glob does not)."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[:match.start()], pattern[match.end():]
    return [p for choice in match.group(1).split(",") for p in _expand_braces(head + choice + tail)]


def _segment_regex(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := segment.find("]", i + 2)) != -1:
            body = segment[i + 1:end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _glob_regex(segments: list[str]) -> re.Pattern[str]:
    parts = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(parts))


def _is_magic(segment: str) -> bool:
    return any(c in segment for c in "*?[")


def _glob_one(ws: Workspace, pattern: str) -> Iterator[Path]:
    segments = [s for s in pattern.split("/") if s not in ("", ".")]
    if pattern.startswith("/"):
        segments[0:0] = ["/"]
    literal = 0
    while literal < len(segments) and not _is_magic(segments[literal]):
        literal += 1
    prefix = os.path.join(*segments[:literal]) if literal else "."
    base = ws.resolve(prefix)
    rest = segments[literal:]
    if not rest:
        if base.is_file():  # a regular file (or a link to one), never a FIFO or device
            yield base
        return
    if not base.is_dir():
        return
    regex = _glob_regex(rest)
    keep = frozenset(s for s in rest if s in SKIP_DIRS)
    for path in walk_files(ws, base, keep):
        if regex.fullmatch(path.relative_to(base).as_posix()):
            yield path


def glob(ws: Workspace, pattern: str, *, max_chars: int) -> str:
    if not pattern.strip():
        raise ToolError("pattern is empty; try '**/*.py' or 'src/*'.")
    found: dict[Path, float] = {}
    for variant in _expand_braces(pattern):
        for path in _glob_one(ws, variant):
            try:
                found[path] = path.stat().st_mtime
            except OSError:
                continue
    if not found:
        return f"No files match {pattern}."
    ordered = sorted(found, key=lambda p: (-found[p], str(p)))
    budget = max(0, max_chars - NOTE_RESERVE)
    lines: list[str] = []
    used = 0
    for path in ordered[:MAX_GLOB_RESULTS]:
        rel = ws.relative(path)
        if used + len(rel) + 1 > budget:
            break
        lines.append(rel)
        used += len(rel) + 1
    if len(lines) < len(ordered):
        lines.append(f"[showing {len(lines)} of {len(ordered):,} files, newest first; narrow the pattern]")
    return "\n".join(lines)
