"""What a tool hands back to the model, and how long output is cut to fit."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mini_letta.settings import SETTINGS


NO_OUTPUT = "(no output)"  # what a command that printed nothing returns, before its exit line
# The line a command's result ends with: "[exit code 0]", "[killed by SIGTERM]".
_EXIT_LINE = re.compile(r"^\[(exit code -?\d+|killed by [A-Z0-9 ]+)\]$")


@dataclass(frozen=True)
class OutputSummary:
    """A result as one line tells it, the same wherever it is told (the REPL's line under a call,
    the demo model's reply): the output's lines, its first, and the command's exit."""

    lines: int  # of output: neither the "(no output)" placeholder nor the exit line
    first: str  # the first line of output that is not blank ("" when there is none)
    exit: str  # "exit code 0", "killed by SIGTERM", or "" (not a command)


def summarize_output(text: str) -> OutputSummary:
    lines = text.strip("\n").splitlines()
    exit_line = ""
    if lines and _EXIT_LINE.match(lines[-1].strip()):
        exit_line = lines.pop().strip()[1:-1]
    if lines and lines[0].strip() == NO_OUTPUT:
        lines.pop(0)
    first = next((line.strip() for line in lines if line.strip()), "")
    return OutputSummary(len(lines), first, exit_line)


@dataclass
class ToolOutcome:
    """The text the model reads as the tool's result; ``is_error`` marks a failed call."""

    text: str
    is_error: bool = False


class ToolError(Exception):
    """A failure the model caused or can work around; ``str(err)`` is the sentence it reads."""


class ToolInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a running tool; ``outcome`` holds what it produced until then.

    It is a KeyboardInterrupt so that code which does not know it still ends the turn.
    """

    def __init__(self, outcome: ToolOutcome):
        super().__init__(outcome.text)
        self.outcome = outcome


def cap_text(text: str, limit: int, hint: str) -> str:
    """``text`` cut to at most ``limit`` characters, ending in a note on what was cut and ``hint``."""
    if len(text) <= limit:
        return text
    kept = limit
    for _ in range(2):  # the note's length depends on the number it prints
        note = f"\n[output cut: showing the first {kept:,} of {len(text):,} characters; {hint}]"
        kept = max(0, limit - len(note))
    return text[:kept] + note


_NUMBERED_LINE = re.compile(r"^\s*(\d+)\t")


def fit_tokens(text: str, limit: int, count: Callable[[str], int], *, reader: str | None = None) -> str:
    """``text`` cut at a line end (its head kept) until ``count`` says it is at most ``limit``
    tokens, with a note; ``text`` itself when it fits. Tools cap their output in characters, but
    dense text (CJK, base64, minified code) holds far more tokens per character than prose. Output
    with numbered lines (``reader`` is the tool that printed them, ``read_file``) says which
    ``offset`` continues it."""
    size = count(text)
    if size <= limit:
        return text
    kept = text
    for _ in range(6):
        kept = kept[:max(1, int(len(kept) * limit / max(1, size) * SETTINGS.cut_undershoot))]
        if "\n" in kept.rstrip("\n"):
            kept = kept[:kept.rstrip("\n").rindex("\n")]
        size = count(kept)
        if size <= limit:
            break
    note = f"[output cut to about {limit:,} tokens to fit the context"
    last = _NUMBERED_LINE.match(kept.rsplit("\n", 1)[-1])
    if reader and last:
        note += f"; call {reader} with offset={int(last.group(1)) + 1} to continue"
    return kept + "\n" + note + "]"


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            return f"{size:.1f} {unit}"
    raise AssertionError("unreachable")
