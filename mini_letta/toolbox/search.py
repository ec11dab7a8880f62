"""The ``grep`` and ``glob`` tools: what the model asks for, and how the answer reads.

The searching is done by ripgrep (:mod:`mini_letta.toolbox.ripgrep`), or by the Python walker
(:mod:`mini_letta.toolbox.walker`) where ``rg`` cannot run, with a one-line notice. Either way the
results have one shape: ``path:line: text`` in the order a sorted walk of the tree meets them (a
folder's files before its sub-folders), files newest first for ``glob``, within the output cap.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mini_letta.settings import SETTINGS
from mini_letta.toolbox import ripgrep, walker
from mini_letta.toolbox.files import special_kind
from mini_letta.toolbox.glob_patterns import GlobPlan, expand_braces
from mini_letta.toolbox.outcome import ToolError
from mini_letta.toolbox.ripgrep import FileLines, Line, RgUnavailable, Selection
from mini_letta.toolbox.workspace import Workspace
from mini_letta.wording import counted

# Folders no search enters unless the model names them: vendored or generated, rarely ignored.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})
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


def walk_order(rel: str) -> str:
    """Sort key: a folder's files before its sub-folders, each by name (as ``os.walk`` sorted).
    A string, cheaper than a tuple per part over thousands of paths: a folder's name is marked
    \\x02 and ended by \\x00 (so "a" sorts before "ab"), the file's name marked \\x01 (before any
    folder)."""
    folders, _, name = rel.rpartition("/")
    return ("\x02" + folders.replace("/", "\x00\x02") + "\x00" if folders else "") + "\x01" + name


_CONTROLS = {code: f"\\x{code:02x}" for code in [*range(32), 127]}


def printable(rel: str) -> str:
    """A path as the model is shown it: bytes that are not UTF-8 (kept by ``os.fsdecode`` as
    surrogate escapes) and control characters become ``\\xNN``, as bash's ``$'...'`` writes them,
    so every name fits on its line and in a JSON request."""
    if rel.isprintable():
        return rel
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace").translate(_CONTROLS)


def _excerpt(line: Line) -> str:
    text = line.text
    if len(text) <= SETTINGS.tools.search_match_chars:
        return text
    start = max(0, line.start - SETTINGS.tools.search_match_chars // 3) if line.is_match else 0
    piece = text[start:start + SETTINGS.tools.search_match_chars]
    return ("…" if start else "") + piece + ("…" if start + SETTINGS.tools.search_match_chars < len(text) else "")


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
                      file_type: str | None) -> tuple[Selection, Callable[[str], bool] | None]:
    """The folder and filters for grep's ``glob`` and ``type``, plus a check of whole paths for a
    glob with folders in it (``src/**/*.py``, from the workspace root), else None. rg's own ``-g``
    would override .gitignore, so file names are filtered through a file type of our own instead."""
    if not glob or not glob.strip():
        return _selection(ws, base, file_type=file_type), None
    variants = expand_braces(glob.strip())
    if not any("/" in v for v in variants):
        return _selection(ws, base, named=set(variants), basename_globs=tuple(variants), file_type=file_type), None
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
    context = max(0, min(int(context or 0), SETTINGS.tools.search_context_lines))
    limit = max(1, min(int(head_limit or SETTINGS.tools.search_matches), SETTINGS.tools.search_matches))
    found = engine.run(
        lambda rg: ripgrep.matching_files(rg, ws.root, pattern, selection, ignore_case, context),
        lambda: walker.matching_files(ws, pattern, selection, ignore_case, context))
    keep = _path_filter(selection, keep)
    if keep is not None:
        found = {rel: lines for rel, lines in found.items() if keep(rel)}
    if base.is_file() and found:  # one named file: read now, which also says whether it is binary
        found = {**found, **_read_until(engine, ws, pattern, list(found), found, ignore_case, context, None)[1]}
        if any(lines.binary for lines in found.values()):
            return (f"{path} is a binary file that matches; its lines are not shown. "
                    f"Look inside with bash (strings, xxd).")
    text_files = sorted((rel for rel, lines in found.items() if not lines.binary), key=walk_order)
    where = "the workspace" if ws.relative(base) == "." else ws.relative(base)
    notes = [n for n in [engine.notice()] if n]
    if not text_files:
        binary = _binary_files(engine, ws, pattern, selection, ignore_case, found, keep)
        if binary:
            first = f"No text matches for /{pattern}/ in {where}; "
            return "\n".join(notes + [first + _binary_note(binary, max_chars - len(first) - 2) + "."])
        return "\n".join(notes + [f"No matches for /{pattern}/ in {where}."])
    budget = max(0, max_chars - SETTINGS.tools.search_note_chars - sum(len(n) + 1 for n in notes))
    if output_mode == "files_with_matches":
        lines = _fit([printable(rel) for rel in text_files[:limit]], budget)
        body = _closing(lines, len(text_files), "files")
    elif output_mode == "count":
        _, counted = _read_until(engine, ws, pattern, text_files[:limit], found, ignore_case, 0, None)
        entries = [f"{printable(rel)}: {counted[rel].matches}" for rel in text_files[:limit]
                   if rel in counted and not counted[rel].binary]
        lines = _fit(entries, budget)
        body = _closing(lines, len(text_files), "files")
    else:
        chosen, read = _read_until(engine, ws, pattern, text_files[:limit], found, ignore_case, context, limit)
        body = _content(chosen, read, limit, budget, len(text_files))
    return "\n".join(notes + body)


def _path_filter(selection: Selection, keep: Callable[[str], bool] | None) -> Callable[[str], bool] | None:
    """What the engines' answers still need checking against: a glob's folders, and hidden files
    let in by a file-type filter (see shown()). None when nothing does (a check per path costs)."""
    if selection.hidden or not (selection.basename_globs or selection.file_type):
        return keep
    if keep is None:
        return lambda rel: shown(rel, selection)
    return lambda rel: keep(rel) and shown(rel, selection)


def _binary_files(engine: Engine, ws: Workspace, pattern: str, selection: Selection, ignore_case: bool,
                  found: dict[str, FileLines], keep: Callable[[str], bool] | None) -> list[str]:
    """For a search no text file matches: the binary files that do, in path order (the walker
    found them while walking; ripgrep looks again, searching binary files as text)."""
    matches = engine.run(lambda rg: ripgrep.binary_matches(rg, ws.root, pattern, selection, ignore_case),
                         lambda: [rel for rel, lines in found.items() if lines.binary and not _source_named(rel)])
    return sorted((rel for rel in matches if keep is None or keep(rel)), key=walk_order)


def _source_named(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, glob) for glob in ripgrep.SOURCE_NAMES)


def _binary_note(files: list[str], room: int) -> str:
    """'2 binary files match (lines not shown): a.so, b.bin', naming the files that fit in ``room``
    (at most ``SETTINGS.tools.binary_note_chars``)."""
    room = min(room, SETTINGS.tools.binary_note_chars)
    count = len(files)
    head = f"{counted(count, 'binary file')} {'matches' if count == 1 else 'match'} (lines not shown)"
    names: list[str] = []
    for rel in map(printable, files):
        rest = count - len(names) - 1
        tail = f" and {rest:,} more" if rest else ""
        if len(head) + sum(len(n) + 2 for n in names) + len(rel) + 2 + len(tail) > room:
            break
        names.append(rel)
    if not names:
        return head
    rest = count - len(names)
    return head + ": " + ", ".join(names) + (f" and {rest:,} more" if rest else "")


def _read_until(engine: Engine, ws: Workspace, pattern: str, files: list[str], first: dict[str, FileLines],
                ignore_case: bool, context: int, limit: int | None) -> tuple[list[str], dict[str, FileLines]]:
    """The matching lines of the first of ``files``: the first pass's where it saw them all, the
    others read again, in batches until ``limit`` matches are in hand (a common word fills the
    limit from a few dozen files, which is all it reads). Each batch is another rg process, so the
    next is four times as large, or larger where the matches per file so far say three times as many
    files are needed: reading too many costs less than one more process."""
    read: dict[str, FileLines] = {}
    done, size, matches = 0, 25, 0
    while done < len(files) and (limit is None or matches < limit):
        batch = files[done:done + size]
        again = [rel for rel in batch if not first[rel].complete]
        read.update({rel: first[rel] for rel in batch if first[rel].complete})
        if again:
            read.update(engine.run(lambda rg: ripgrep.file_lines(rg, ws.root, pattern, again, ignore_case, context),
                                   lambda: walker.file_lines(ws, pattern, again, ignore_case, context)))
        done += len(batch)
        matches = sum(f.matches for f in read.values())
        size = max(size * 4, math.ceil((limit - matches) * done / matches * 3) if limit and matches else 0)
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
            continue  # changed since the first pass, or binary after its first match
        name, previous = printable(rel), None
        for line in entry.lines:
            if line.is_match and matches == limit:
                full = True
                break
            sep = ":" if line.is_match else "-"
            piece = (["--"] if previous is not None and line.number != previous + 1 else [])
            piece.append(f"{name}{sep}{line.number}{sep} {_excerpt(line)}")
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
    listings = [_glob_listing(ws, engine, base, plans) for base, plans in _glob_groups(ws, expand_braces(pattern))]
    newest, total = _newest_first(str(ws.root), listings, SETTINGS.tools.glob_results)
    notes = [n for n in [engine.notice()] if n]
    if not newest:
        return "\n".join(notes + [f"No files match {pattern}."])
    budget = max(0, max_chars - SETTINGS.tools.search_note_chars)
    lines = _fit([printable(rel) for rel in newest], budget)
    if len(lines) < total:
        lines.append(f"[showing {len(lines)} of {total:,} files, newest first; narrow the pattern]")
    return "\n".join(notes + lines)


def _glob_groups(ws: Workspace, variants: list[str]) -> list[tuple[Path, list[GlobPlan]]]:
    """The brace alternatives grouped by the folder they start in and the files they let in
    (hidden files, skipped folders, whether names are filtered), so ``**/*.{so,pyi}`` is one
    listing of both kinds of name, not two listings."""
    groups: dict[tuple, tuple[Path, list[GlobPlan]]] = {}
    for plan in map(GlobPlan.of, variants):
        base = ws.resolve(plan.prefix)
        selection = _selection(ws, base, named=plan.named())
        key = (selection.base, selection.hidden, selection.exclude_dirs, bool(plan.rest), plan.basename_glob() is None)
        groups.setdefault(key, (base, []))[1].append(plan)
    return list(groups.values())


def _glob_listing(ws: Workspace, engine: Engine, base: Path, plans: list[GlobPlan]) -> list[str]:
    """Workspace-relative paths matching any of ``plans`` (one group of them), newest first."""
    if not plans[0].rest:
        return [ws.relative(base)] if base.is_file() else []  # a regular file (or a link to one), never a FIFO
    if not base.is_dir():
        return []
    names = tuple(dict.fromkeys(name for plan in plans if (name := plan.basename_glob())))
    selection = _selection(ws, base, named=set().union(*(plan.named() for plan in plans)), basename_globs=names)
    listed = engine.run(lambda rg: ripgrep.list_files(rg, ws.root, selection, newest_first=True),
                        lambda: walker.list_files(ws, selection, newest_first=True))
    # One regex for the whole path (a call per path in Python cost as much as rg's listing):
    # the folder, no hidden name below it unless asked for (see shown()), any of the plans.
    prefix = ws.relative(base)
    whole = re.compile(("" if prefix == "." else re.escape(prefix) + "/") +
                       ("" if selection.hidden else r"(?!(?:.*/)?\.)") +
                       "(?:" + "|".join(plan.regex.pattern for plan in plans if plan.regex) + ")", re.DOTALL)
    return [rel for rel in listed if whole.fullmatch(rel)]


def _newest_first(root: str, listings: list[list[str]], limit: int) -> tuple[list[str], int]:
    """The ``limit`` newest files of ``listings`` (each newest first), ties by name, and how many
    files there are. Only the head of each listing is stat'ed: down to its ``limit``-th file and
    any as new as that one, which is all the ordering can need."""
    times: dict[str, float] = {}
    vanished: set[str] = set()  # a set: a file in two listings is gone once, not twice
    for listing in listings:
        kept, last = 0, None
        for rel in listing:
            if rel in times or rel in vanished:
                continue
            try:
                mtime = os.stat(os.path.join(root, rel)).st_mtime
            except OSError:
                vanished.add(rel)
                continue
            if kept >= limit and mtime != last:
                break
            times[rel] = mtime
            kept, last = kept + 1, mtime
    total = (len(set().union(*listings)) if len(listings) > 1 else len(listings[0])) - len(vanished)
    return sorted(times, key=lambda rel: (-times[rel], rel))[:limit], total


def grep_options(args: dict[str, Any]) -> dict[str, Any]:
    """grep's optional arguments from a tool call (names as in tools/grep.json)."""
    return {"glob": args.get("glob"), "file_type": args.get("type"), "ignore_case": bool(args.get("ignore_case")),
            "context": args.get("context") or 0, "output_mode": args.get("output_mode") or "content",
            "head_limit": args.get("head_limit")}
