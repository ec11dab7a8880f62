"""Counts in the words shown to the user and the model: "1 line", "2 lines", never "1 line(s)"."""

from __future__ import annotations


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """``number`` with ``noun`` in the right number: ``counted(1, "file")`` is "1 file",
    ``counted(1200, "line")`` is "1,200 lines"; ``plural`` for nouns that do not just add an "s"."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"
