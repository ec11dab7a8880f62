"""ripgrep as the engine under ``grep`` and ``glob``.

``rg`` walks the tree in parallel, honours ``.gitignore``, ``.ignore`` and hidden-file rules, never
follows symbolic links unless told to, skips FIFOs and devices while walking, and matches in linear
time. The ``ripgrep`` wheel puts it next to the interpreter; ``MINI_LETTA_RG`` names another
binary (empty: behave as if there were none, which tests use to exercise the fallback).

A search is two passes. The first lists the matching files (``--files-with-matches``: a path
each, however common the pattern); the caller sorts them and picks the few it can show; the second
reads the matching lines of just those, as JSON (line numbers, match offsets, binary files). When
no text file matches, a third pass looks for binary files that do. Paths are the file system's
strings (``os.fsdecode``), so a name that is not UTF-8 is found and can be opened again.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mini_letta.settings import SETTINGS
from mini_letta.toolbox.outcome import ToolError

# Bytes of file names per rg call: an argument list stays far below the system's limit (2 MiB).
ARGUMENT_BYTES = 256 * 1024
# Names of source code. The search for binary files that match leaves these out, which halves it
# where most bytes are source (99 -> 50 ms on the benchmark tree): a source file with a NUL byte in
# it is searched as rg searches it, up to that byte (a corrupt file). Text where a stray NUL is to be
# expected (logs, .txt, .csv) stays in: there the text after the NUL is what the model is after.
SOURCE_NAMES = ("*.py", "*.pyi", "*.c", "*.h", "*.cc", "*.cpp", "*.hpp", "*.js", "*.jsx", "*.mjs", "*.cjs",
                "*.ts", "*.tsx", "*.md", "*.rst", "*.json", "*.yaml", "*.yml", "*.toml", "*.html",
                "*.css", "*.sh", "*.rs", "*.go", "*.java")


class RgUnavailable(Exception):
    """``rg`` is missing or cannot run on this platform; the caller falls back to the walker."""


@dataclass
class Line:
    number: int
    text: str
    is_match: bool
    start: int = 0  # first match, in characters
    end: int = 0


@dataclass
class FileLines:
    binary: bool = False
    lines: list[Line] = field(default_factory=list)
    complete: bool = True  # False: the first pass did not read them all

    @property
    def matches(self) -> int:
        return sum(line.is_match for line in self.lines)


# The first pass's entry for each file it lists (shared: nothing changes it).
UNREAD = FileLines(complete=False)


@dataclass
class Selection:
    """Which files a search considers: a folder or a file, plus filters."""

    base: str  # workspace-relative
    basename_globs: tuple[str, ...] = ()  # e.g. ("*.py", "*.pyi"); gitignore rules still apply
    file_type: str | None = None  # rg's own types: py, js, rust, ...
    hidden: bool = False
    exclude_dirs: tuple[str, ...] = ()


def find_rg() -> str | None:
    configured = os.environ.get("MINI_LETTA_RG")
    if configured is not None:
        return configured or None
    beside = Path(sys.executable).parent / ("rg.exe" if os.name == "nt" else "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def _selection_args(selection: Selection) -> list[str]:
    # --no-require-git: a project's .gitignore counts before `git init` too. Globs given with -g
    # would override the ignore files, so basename filters go through a type of our own instead.
    args = ["--no-config", "--no-require-git", "--no-messages"]
    if selection.hidden:
        args.append("--hidden")
    for name in selection.exclude_dirs:
        args += ["-g", f"!{name}/"]
    if selection.basename_globs:
        for glob in selection.basename_globs:
            args += ["--type-add", f"minisel:{glob}"]
        args += ["--type", "minisel"]
    if selection.file_type:
        args += ["--type", selection.file_type]
    return args


def _run(rg: str, args: list[str], cwd: Path) -> bytes:
    try:
        process = subprocess.Popen([rg, *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
    except OSError as exc:
        raise RgUnavailable(f"{rg}: {exc.strerror or exc}") from None
    try:
        stdout, stderr = process.communicate(timeout=SETTINGS.tools.grep_timeout_seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise ToolError(f"the search took longer than {SETTINGS.tools.grep_timeout_seconds} s and was stopped; "
                        f"narrow the path, the glob or the pattern.") from None
    except BaseException:  # Ctrl-C: rg must not go on searching
        process.kill()
        process.wait()
        raise
    # 1: nothing matched. 2: an error, which with output still means some files were unreadable.
    if process.returncode == 2 and not stdout:
        message = stderr.decode(errors="replace").strip()
        if "No files were searched" in message:
            return b""  # every file was filtered out: no matches, not a failure
        if "regex parse error" in message or "error parsing" in message.lower():
            raise ToolError(_pattern_error(message, args))
        if "unrecognized file type" in message:
            raise ToolError(message.splitlines()[-1].replace("rg: ", "") +
                            "; common types: py, js, ts, rust, go, java, c, cpp, md, json, yaml.")
        raise ToolError(f"the search failed: {message.splitlines()[-1] if message else 'rg exited with 2'}")
    if process.returncode not in (0, 1, 2):
        raise RgUnavailable(f"{rg} exited with {process.returncode}")
    return stdout


def _pattern_error(message: str, args: list[str]) -> str:
    pattern = args[args.index("-e") + 1] if "-e" in args else ""
    errors = [line.strip()[len("error:"):].strip() for line in message.splitlines() if line.strip().startswith("error:")]
    detail = "; ".join(errors) or message.splitlines()[-1]
    return f"invalid regular expression {pattern!r}: {detail}; escape ( ) [ ] . * + ? with \\."


def _text(value: dict) -> str:
    if "text" in value:
        return value["text"]
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", errors="replace")


def _path(value: dict) -> str:
    """A path from rg's JSON: a name that is not UTF-8 comes as bytes, kept as the file system's
    own string (surrogate escapes), so the file can be opened and named again."""
    if "text" in value:
        return value["text"]
    return os.fsdecode(base64.b64decode(value.get("bytes", "")))


def _paths(output: bytes) -> list[str]:
    """Paths from ``--null`` output, as the file system's strings (any name, any byte), decoded
    at once as ``os.fsdecode`` decodes one."""
    text = output.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
    return [path for path in text.split("\0") if path]


def _relative(paths: list[str]) -> list[str]:
    """Paths as the workspace names them: rg given "." as the folder prints "./a.py"."""
    return [path[2:] if path.startswith("./") else path for path in paths]


def _events(output: bytes) -> Iterable[tuple[str, dict]]:
    for raw in output.split(b"\n"):
        if raw:
            event = json.loads(raw)
            yield event["type"], event["data"]


def _base_args(selection: Selection) -> list[str]:
    # Without a path rg searches the working folder and prints paths with no "./" in front (stdin
    # is /dev/null, which rg does not take for input).
    return [] if selection.base == "." else ["--", selection.base]


def _pattern_args(pattern: str, ignore_case: bool) -> list[str]:
    return (["-i"] if ignore_case else ["-s"]) + ["-e", pattern]


def _batches(paths: list[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for path in paths:
        length = len(os.fsencode(path)) + 1
        if batch and size + length > ARGUMENT_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += length
    if batch:
        yield batch


def matching_files(rg: str, root: Path, pattern: str, selection: Selection, ignore_case: bool,
                   context: int) -> dict[str, FileLines]:
    """Every text file under the selection with a match (workspace-relative), its lines not read
    yet (``complete`` False). While walking, rg stops reading a binary file at its first NUL byte;
    a file named as the path is searched whole and listed binary or not (the second pass tells)."""
    args = ["--files-with-matches", "--null", *_selection_args(selection), *_pattern_args(pattern, ignore_case),
            "--", selection.base]
    return dict.fromkeys(_relative(_paths(_run(rg, args, root))), UNREAD)


def binary_matches(rg: str, root: Path, pattern: str, selection: Selection, ignore_case: bool) -> list[str]:
    """The binary files under the selection that match, searched as text (``--text``), for a
    search whose text files have none; files named as source (``SOURCE_NAMES``) are left out.
    Only then: reading every binary file to its end is most of what it costs (on the benchmark
    tree, 105 of 174 MB; ``--binary`` cost twice as much). rg names the binary files it passes over
    only in its ``--debug`` log, which writes a line for every file a name filter or an ignore
    rule leaves out (7x slower with ``*.o`` ignored in a tree of 10,000 .o files), so this pass
    walks again instead. Files over ``SETTINGS.tools.grep_binary_max_bytes`` are left out: searched as text, a long run
    without a newline is held in memory whole (a 300 MB file of zeros took 426 MB)."""
    args = ["--files-with-matches", "--null", "--text", "--max-filesize", str(SETTINGS.tools.grep_binary_max_bytes),
            *_selection_args(selection), *[a for name in SOURCE_NAMES for a in ("--type-add", f"minisrc:{name}")],
            "--type-not", "minisrc", *_pattern_args(pattern, ignore_case), "--", selection.base]
    # With no text file matching, each file listed here is one rg's first pass passed over as binary.
    return _relative(_paths(_run(rg, args, root)))


def file_lines(rg: str, root: Path, pattern: str, paths: list[str], ignore_case: bool,
               context: int) -> dict[str, FileLines]:
    """All matching lines (and ``context`` lines around them) of ``paths``."""
    result: dict[str, FileLines] = {}
    for batch in _batches(paths):
        result.update(_lines(rg, root, pattern, ignore_case, context, ["--no-config"], *batch))
    return result


def _lines(rg: str, root: Path, pattern: str, ignore_case: bool, context: int, options: list[str],
           *paths: str) -> dict[str, FileLines]:
    args = ["--json", *options, "-C", str(context), *_pattern_args(pattern, ignore_case), "--", *paths]
    result: dict[str, FileLines] = {}
    for kind, data in _events(_run(rg, args, root)):
        if kind not in ("match", "context", "end"):
            continue
        entry = result.setdefault(_path(data["path"]), FileLines())
        if kind == "end":
            entry.binary = data.get("binary_offset") is not None
            continue
        raw = _text(data["lines"]).rstrip("\n").rstrip("\r")
        line = Line(data["line_number"] or 0, raw, kind == "match")
        if line.is_match and data.get("submatches"):
            line.start, line.end = _char_span(data["lines"], data["submatches"][0])
        entry.lines.append(line)
    return {path: entry for path, entry in result.items() if entry.matches or entry.binary}


def _char_span(lines: dict, submatch: dict) -> tuple[int, int]:
    """rg gives byte offsets; excerpts are cut in characters."""
    raw = lines["text"].encode("utf-8") if "text" in lines else base64.b64decode(lines.get("bytes", ""))
    start = len(raw[:submatch["start"]].decode("utf-8", errors="replace"))
    return start, start + len(submatch["match"].get("text", ""))


def list_files(rg: str, root: Path, selection: Selection, *, newest_first: bool = False) -> list[str]:
    """Files under the selection, as ``rg --files`` lists them (ignore files honoured);
    ``newest_first``: sorted by modification time by rg itself, which reads each file's time
    faster than Python can (the one thing that kept glob from rg's speed)."""
    args = ["--files", "--null", *(["--sortr", "modified"] if newest_first else []), *_selection_args(selection),
            *_base_args(selection)]
    return _paths(_run(rg, args, root))
