"""Making text from a model, a tool, a file, a session or memory safe to put on a terminal.

Such text is data. Rich markup is avoided by the callers (``rich.text.Text``, ``markup=False``);
this module handles what Rich lets through: escape sequences (ESC is not stripped by Rich, so
``\\x1b[8m`` would conceal what follows, and ``\\x1b]52;`` could write the clipboard), C1 controls,
a carriage return that moves the cursor back over what was printed, and the invisible Unicode
formatting characters (bidirectional overrides, zero-width characters) that make text read
differently from what it is. Every character is mapped on its own, so streamed text can be
cleaned chunk by chunk.

Pure Python: the core may use it without importing a terminal library.
"""

from __future__ import annotations

import re

# C0 controls show as their Unicode "control picture" (ESC → ␛, NUL → ␀), DEL as ␡.
_C0 = {code: chr(0x2400 + code) for code in range(0x20)}
_INVISIBLE = [*range(0x80, 0xA0),  # C1 controls (0x9b is a one-byte CSI)
              0x00AD, 0x061C, 0x115F, 0x1160, 0x180E, *range(0x200B, 0x2010), *range(0x202A, 0x202F),
              *range(0x2060, 0x2070), 0x3164, 0xFEFF, 0xFFA0, *range(0xFFF9, 0xFFFC)]
_CODE_POINTS = {code: f"<U+{code:04X}>" for code in _INVISIBLE}

_PROSE = {**_C0, 0x7F: "\u2421", **_CODE_POINTS,
          0x0A: "\n", 0x09: "\t",  # layout in prose
          0x0D: None}  # "\r\n" reads as "\n"; a lone "\r" would move back over the line

# In a command awaiting approval every character counts: tabs, carriage returns and look-alike
# spaces are shown, not laid out.
_SPACES = [0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
_COMMAND = {**_C0, 0x7F: "\u2421", **_CODE_POINTS, **{code: f"<U+{code:04X}>" for code in _SPACES},
            0x0A: "\n"}
VISIBLE_SPACE = "\u2423"  # ␣
_SPACE_RUN = re.compile(r"(?m)^ +| {2,}| +$")


def visible(text: str) -> str:
    """``text`` with escape sequences and other controls made visible (newlines and tabs kept)."""
    return text.translate(_PROSE)


def visible_command(command: str) -> str:
    """A command shown character for character: controls as pictures (``\\r`` as ␍, tab as ␉),
    look-alike spaces as ``<U+00A0>``, and spaces that a reader could miss (runs of two or more,
    at the start or end of a line) as ␣, so nothing can be pushed out of sight."""
    shown = command.translate(_COMMAND)
    return _SPACE_RUN.sub(lambda match: VISIBLE_SPACE * len(match.group()), shown)


def one_line(text: str) -> str:
    """``text`` made visible on a single line: line breaks as ⏎ and whitespace runs collapsed, so
    a payload cannot hide behind a screenful of spaces in a short preview."""
    return " ⏎ ".join(" ".join(visible(line).split()) for line in text.strip().splitlines())


def preview(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters, ending in "…"."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit - 1]
    space = cut.rfind(" ")
    # A word cut in two loses its start too, unless it is so long that almost nothing would be left.
    if flat[limit - 1] != " " and space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:") + "…"
