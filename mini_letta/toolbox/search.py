"""The ``grep`` and ``glob`` tools: what the model asks for, and how the answer reads.

The searching is done by ripgrep (:mod:`mini_letta.toolbox.ripgrep`), or by the Python walker
(:mod:`mini_letta.toolbox.walker`) where ``rg`` cannot run, with a one-line notice. Either way the
results have one shape: ``path:line: text`` in the order a sorted walk of the tree meets them (a
folder's files before its sub-folders), files newest first for ``glob``, within the output cap.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mini_letta.toolbox import ripgrep, walker
from mini_letta.toolbox.files import special_kind
from mini_letta.toolbox.outcome import ToolError
from mini_letta.toolbox.ripgrep import FileLines, Line, RgUnavailable, Selection
from mini_letta.toolbox.workspace import Workspace

# Folders no search enters unless the model names them: vendored or generated, rarely ignored.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})
MAX_MATCHES = 200
MAX_MATCH_CHARS = 300
MAX_GLOB_RESULTS = 200
MAX_CONTEXT_LINES = 10
NOTE_RESERVE = 200
OUTPUT_MODES = ("content", "files_with_matches", "count")

T = TypeVar("T")


@dataclass
class Engine:
    """ripgrep when it runs, else the walker; the first fallback of a session says why once."""

    ws: Workspace
    rg: str | None = None
    unavailable: str | None = None
    told: bool = False

    @classmethod
    def for_workspace(cls, ws: Workspace) -> Engine:
        rg = ripgrep.find_rg()
        return cls(ws, rg, None if rg else "ripgrep (rg) is not installed")

    def run(self, with_rg: Callable[[str], T], with_walker: Callable[[], T]) -> T:
        if self.rg is not None:
            try:
                return with_rg(self.rg)
            except RgUnavailable as exc:
                self.rg, self.unavailable = None, f"ripgrep could not run ({exc})"
        return with_walker()

    def notice(self) -> str | None:
        if self.rg is not None or self.told:
            return None
        self.told = True
        return (f"[{self.unavailable}: searched with the slower built-in walker, which does not read "
                f".gitignore]")


def walk_order(rel: str) -> tuple[tuple[int, str], ...]:
    """Sort key: a folder's files before its sub-folders, each by name (as ``os.walk`` sorted)."""
    parts = rel.split("/")
    return tuple((1, part) for part in parts[:-1]) + ((0, parts[-1]),)


def _strip_dot(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _excerpt(line: Line) -> str:
    text = line.text
    if len(text) <= MAX_MATCH_CHARS:
        return text
    start = max(0, line.start - MAX_MATCH_CHARS // 3) if line.is_match else 0
    piece = text[start:start + MAX_MATCH_CHARS]
    return ("…" if start else "") + piece + ("…" if start + MAX_MATCH_CHARS < len(text) else "")


def _expand_braces(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` → ``*.ts``, ``*.tsx`` (models write this; fnmatch does not)."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[:match.start()], pattern[match.end():]
    return [p for choice in match.group(1).split(",") for p in _expand_braces(head + choice + tail)]


def _is_magic(segment: str) -> bool:
    return any(c in segment for c in "*?[")


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


def _glob_regex(segments: list[str]) -> str:
    parts = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    return "".join(parts)


@dataclass
class GlobPlan:
    """One brace alternative of a glob: the literal folder it starts in, and the rest as a regex."""

    prefix: str
    rest: list[str]
    regex: re.Pattern[str] | None

    @classmethod
    def of(cls, pattern: str) -> GlobPlan:
        segments = [s for s in pattern.split("/") if s not in ("", ".")]
        if pattern.startswith("/"):
            segments[0:0] = ["/"]
        literal = 0
        while literal < len(segments) and not _is_magic(segments[literal]):
            literal += 1
        rest = segments[literal:]
        prefix = os.path.join(*segments[:literal]) if literal else "."
        return cls(prefix, rest, re.compile(_glob_regex(rest)) if rest else None)

    def named(self) -> set[str]:
        """The folders and names it spells out: a search enters them even if it skips them otherwise."""
        return {s for s in [*Path(self.prefix).parts, *self.rest] if not _is_magic(s)}

    def basename_glob(self) -> str | None:
        last = self.rest[-1] if self.rest else ""
        return None if last in ("", "**") or "[" in last else last

    def matches(self, rel_to_prefix: str) -> bool:
        return self.regex is not None and self.regex.fullmatch(rel_to_prefix) is not None

    def covers(self, rel: str) -> bool:
        """Whether a workspace-relative path matches."""
        if self.prefix == ".":
            return self.matches(rel)
        return rel.startswith(self.prefix + "/") and self.matches(rel[len(self.prefix) + 1:])


def _selection(ws: Workspace, base: Path, *, named: set[str] = frozenset(), hidden: bool = False,
               basename_globs: tuple[str, ...] = (), file_type: str | None = None) -> Selection:
    return Selection(base=ws.relative(base), basename_globs=basename_globs, file_type=file_type or None,
                     hidden=hidden or any(n.startswith(".") for n in named),
                     exclude_dirs=tuple(sorted(SKIP_DIRS - named)))


def shown(rel: str, selection: Selection) -> bool:
    """Hidden files stay out unless asked for: rg lets a file-type filter override that rule."""
    if selection.hidden:
        return True
    inside = rel if selection.base == "." else rel[len(selection.base) + 1:]
    return not inside.startswith(".") and "/." not in inside


def _resolve_base(ws: Workspace, path: str) -> Path:
    base = ws.resolve(path)
    if not base.exists():
        raise ToolError(f"{path} does not exist.")
    kind = special_kind(base.stat().st_mode)
    if kind:
        raise ToolError(f"{path} is {kind}, not a regular file; it was not read. Search regular files or folders.")
    return base


def _filter_selection(ws: Workspace, base: Path, glob: str | None,
                      file_type: str | None) -> tuple[Selection, Callable[[str], bool]]:
    """The folder and filters for grep's ``glob`` and ``type``, plus a check of whole paths for a
    glob with folders in it (``src/**/*.py``, from the workspace root). rg's own ``-g`` would
    override .gitignore, so file names are filtered through a file type of our own instead."""
    if not glob or not glob.strip():
        return _selection(ws, base, file_type=file_type), lambda rel: True
    variants = _expand_braces(glob.strip())
    if not any("/" in v for v in variants):
        return (_selection(ws, base, named=set(variants), basename_globs=tuple(variants), file_type=file_type),
                lambda rel: True)
    plans = [GlobPlan.of(v if "/" in v else "**/" + v) for v in variants]
    names = tuple(dict.fromkeys(b for p in plans if (b := p.basename_glob())))
    named = set().union(*(p.named() for p in plans))
    return (_selection(ws, base, named=named, basename_globs=names, file_type=file_type),
            lambda rel: any(p.covers(rel) for p in plans))


def grep(ws: Workspace, pattern: str, path: str = ".", *, max_chars: int, engine: Engine | None = None,
         glob: str | None = None, file_type: str | None = None, ignore_case: bool = False, context: int = 0,
         output_mode: str = "content", head_limit: int | None = None) -> str:
    if not pattern:
        raise ToolError("pattern is empty; give a regular expression, e.g. 'def main'.")
    if output_mode not in OUTPUT_MODES:
        raise ToolError(f"output_mode must be one of {', '.join(OUTPUT_MODES)}, not {output_mode!r}.")
    engine = engine or Engine.for_workspace(ws)
    base = _resolve_base(ws, path)
    selection, keep = _filter_selection(ws, base, glob, file_type)
    context = max(0, min(int(context or 0), MAX_CONTEXT_LINES))
    limit = max(1, min(int(head_limit or MAX_MATCHES), MAX_MATCHES))
    found = engine.run(
        lambda rg: ripgrep.matching_files(rg, ws.root, pattern, selection, ignore_case, context),
        lambda: walker.matching_files(ws, pattern, selection, ignore_case, context))
    found = {rel: lines for rel, lines in ((_strip_dot(r), f) for r, f in found.items())
             if keep(rel) and shown(rel, selection)}
    text_files = sorted((rel for rel, lines in found.items() if not lines.binary), key=walk_order)
    if base.is_file() and found:
        _, found = _read_until(engine, ws, pattern, list(found), found, ignore_case, context, None)
    if base.is_file() and ws.relative(base) in found and found[ws.relative(base)].binary:
        return f"{path} is a binary file; it was not searched. Look inside with bash (strings, xxd)."
    where = "the workspace" if ws.relative(base) == "." else ws.relative(base)
    notes = [n for n in [engine.notice()] if n]
    if not text_files:
        return "\n".join(notes + [f"No matches for /{pattern}/ in {where}."])
    budget = max(0, max_chars - NOTE_RESERVE - sum(len(n) + 1 for n in notes))
    if output_mode == "files_with_matches":
        lines = _fit(text_files[:limit], budget)
        body = _closing(lines, len(text_files), "files")
    elif output_mode == "count":
        _, counted = _read_until(engine, ws, pattern, text_files[:limit], found, ignore_case, 0, None)
        entries = [f"{rel}: {counted[rel].matches}" for rel in text_files[:limit] if rel in counted]
        lines = _fit(entries, budget)
        body = _closing(lines, len(text_files), "files")
    else:
        chosen, read = _read_until(engine, ws, pattern, text_files[:limit], found, ignore_case, context, limit)
        body = _content(chosen, read, limit, budget, len(text_files))
    return "\n".join(notes + body)


def _read_until(engine: Engine, ws: Workspace, pattern: str, files: list[str], first: dict[str, FileLines],
                ignore_case: bool, context: int, limit: int | None) -> tuple[list[str], dict[str, FileLines]]:
    """The matching lines of the first of ``files``: the first pass's where it saw them all, the
    others read again, in growing batches until ``limit`` matches are in hand (a common word
    fills the limit from a few dozen files, which is all it reads)."""
    read: dict[str, FileLines] = {}
    done, size = 0, 25
    while done < len(files) and (limit is None or sum(f.matches for f in read.values()) < limit):
        batch = files[done:done + size]
        again = [rel for rel in batch if not first[rel].complete]
        read.update({rel: first[rel] for rel in batch if first[rel].complete})
        if again:
            read.update(engine.run(lambda rg: ripgrep.file_lines(rg, ws.root, pattern, again, ignore_case, context),
                                   lambda: walker.file_lines(ws, pattern, again, ignore_case, context)))
        done, size = done + len(batch), size * 4
    return files[:done], read


def _fit(entries: list[str], budget: int) -> list[str]:
    lines, used = [], 0
    for entry in entries:
        if used + len(entry) + 1 > budget:
            break
        lines.append(entry)
        used += len(entry) + 1
    return lines


def _closing(lines: list[str], total: int, what: str) -> list[str]:
    if len(lines) < total:
        lines = lines + [f"[showing {len(lines)} of {total:,} {what}; narrow the pattern, the path or the glob]"]
    return lines


def _content(chosen: list[str], read: dict[str, FileLines], limit: int, budget: int,
             total_files: int) -> list[str]:
    lines: list[str] = []
    used = matches = 0
    full = False
    for rel in chosen:
        entry = read.get(rel)
        if entry is None or entry.binary:
            continue  # changed since the first pass
        previous = None
        for line in entry.lines:
            if line.is_match and matches == limit:
                full = True
                break
            sep = ":" if line.is_match else "-"
            piece = (["--"] if previous is not None and line.number != previous + 1 else [])
            piece.append(f"{rel}{sep}{line.number}{sep} {_excerpt(line)}")
            size = sum(len(p) + 1 for p in piece)
            if used + size > budget:
                full = True
                break
            lines += piece
            used += size
            matches += line.is_match
            previous = line.number
        if full:
            break
    if not lines:
        return ["No matches: the files changed since the search began."]
    if full or total_files > len(chosen):
        lines.append(f"[stopped after {matches} matches; more exist: narrow the pattern or the path]")
    return lines


def glob(ws: Workspace, pattern: str, *, max_chars: int, engine: Engine | None = None) -> str:
    if not pattern.strip():
        raise ToolError("pattern is empty; try '**/*.py' or 'src/*'.")
    engine = engine or Engine.for_workspace(ws)
    root = str(ws.root)
    found: dict[str, float] = {}
    for variant in _expand_braces(pattern):
        for rel in _glob_one(ws, engine, GlobPlan.of(variant)):
            try:
                found[rel] = os.stat(os.path.join(root, rel)).st_mtime
            except OSError:
                continue
    notes = [n for n in [engine.notice()] if n]
    if not found:
        return "\n".join(notes + [f"No files match {pattern}."])
    ordered = sorted(found, key=lambda rel: (-found[rel], rel))
    budget = max(0, max_chars - NOTE_RESERVE)
    lines = _fit(ordered[:MAX_GLOB_RESULTS], budget)
    if len(lines) < len(ordered):
        lines.append(f"[showing {len(lines)} of {len(ordered):,} files, newest first; narrow the pattern]")
    return "\n".join(notes + lines)


def _glob_one(ws: Workspace, engine: Engine, plan: GlobPlan) -> list[str]:
    """Workspace-relative paths matching one brace alternative."""
    base = ws.resolve(plan.prefix)
    if not plan.rest:
        return [ws.relative(base)] if base.is_file() else []  # a regular file (or a link to one), never a FIFO
    if not base.is_dir():
        return []
    name = plan.basename_glob()
    selection = _selection(ws, base, named=plan.named(), basename_globs=(name,) if name else ())
    listed = engine.run(lambda rg: ripgrep.list_files(rg, ws.root, selection),
                        lambda: walker.list_files(ws, selection))
    prefix = ws.relative(base)
    result = []
    for rel in map(_strip_dot, listed):
        if shown(rel, selection) and plan.matches(rel if prefix == "." else rel[len(prefix) + 1:]):
            result.append(rel)
    return result


def grep_options(args: dict[str, Any]) -> dict[str, Any]:
    """grep's optional arguments from a tool call (names as in tools/grep.json)."""
    return {"glob": args.get("glob"), "file_type": args.get("type"), "ignore_case": bool(args.get("ignore_case")),
            "context": args.get("context") or 0, "output_mode": args.get("output_mode") or "content",
            "head_limit": args.get("head_limit")}
