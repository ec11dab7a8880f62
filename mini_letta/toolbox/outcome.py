"""What a tool hands back to the model, and how long output is cut to fit."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


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
        kept = kept[:max(1, int(len(kept) * limit / max(1, size) * 0.9))]
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
