"""A subagent's report cut to the room the parent has left.

Reports put the answer first and the caveats last, so the head and the tail are kept and the
middle is left out at line ends, with a note in its place saying which lines are missing.
"""

from __future__ import annotations

from collections.abc import Callable

from mini_letta.settings import SETTINGS



def cap_report(text: str, room: int, count: Callable[[str], int]) -> str:
    """``text`` if ``count`` says it fits ``room`` tokens, else its head and tail around a note."""
    if count(text) <= room:
        return text
    pieces, line_of = _pieces(text)
    best = _render(pieces, line_of, 0)
    low, high = 1, len(pieces) - 1
    while low <= high:  # the longest cut that fits: size grows with the pieces kept
        middle = (low + high) // 2
        candidate = _render(pieces, line_of, middle)
        if count(candidate) <= room:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best


def _pieces(text: str) -> tuple[list[str], list[int]]:
    """``text`` as pieces of at most ``SETTINGS.subagents.report_piece_chars`` that end at line ends where they can, and the
    line (1-based) each starts on."""
    pieces: list[str] = []
    line_of: list[int] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        for start in range(0, len(line), SETTINGS.subagents.report_piece_chars):
            pieces.append(line[start:start + SETTINGS.subagents.report_piece_chars])
            line_of.append(number)
    return pieces, line_of


def _render(pieces: list[str], line_of: list[int], kept: int) -> str:
    head = round(kept * SETTINGS.subagents.report_head_share)
    tail = kept - head
    cut = pieces[head:len(pieces) - tail]
    first, last = line_of[head], line_of[len(pieces) - tail - 1]
    lines = f"line {first}" if first == last else f"lines {first}-{last}"
    note = (f"[report cut here to fit the room left in the context: {lines} of {line_of[-1]} "
            f"({sum(map(len, cut)):,} characters) left out]\n")
    before = "".join(pieces[:head])
    if before and not before.endswith("\n"):
        before += "\n"
    return before + note + "".join(pieces[len(pieces) - tail:])
