"""Bytes read from a terminal, in pieces cut anywhere, turned into keys: a lone Esc, or text with
escape sequences (arrows, Alt-keys, a terminal's answers) taken out whole."""

from __future__ import annotations

import codecs
from typing import Callable

ESC = "\x1b"


class KeyParser:
    """Text read from the terminal, in pieces cut anywhere, turned into keys: ``on_escape`` for each
    Esc pressed alone, ``on_text`` for the rest with escape sequences taken out."""

    def __init__(self, on_escape: Callable[[], None], on_text: Callable[[str], None]):
        self._on_escape = on_escape
        self._on_text = on_text
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self.pending = ""  # the start of an escape sequence whose end has not been read yet

    def feed(self, data: bytes) -> None:
        text, self.pending = self.pending + self._decoder.decode(data), ""
        start = 0
        while (escape := text.find(ESC, start)) != -1:
            self._on_text(text[start:escape])
            end = _sequence_end(text, escape)
            if end is None:
                self.pending = text[escape:]
                return
            if end == escape + 1:
                self._on_escape()
            start = end
        self._on_text(text[start:])

    def forget(self) -> None:
        self.pending = ""
        self._decoder.reset()

    def pause(self) -> None:
        """Nothing more came: pending Escs were pressed alone; a pending sequence is dropped."""
        if self.pending.strip(ESC) == "":
            for _ in self.pending:
                self._on_escape()
        self.pending = ""


def _sequence_end(text: str, at: int) -> int | None:
    """Where the escape sequence starting at ``at`` ends (``at + 1`` for a lone Esc), or None when
    its end has not been read yet."""
    if at + 1 == len(text):
        return None
    second = text[at + 1]
    if second == ESC:
        # Esc Esc, or Alt with an arrow (Esc Esc [ A): the latter is no Esc pressed.
        if at + 2 == len(text):
            return None
        if text[at + 2] in "[O":
            return _sequence_end(text, at + 1)
        return at + 1
    if second == "[":  # CSI: parameters and intermediates (0x20-0x3F), then one final byte
        index = at + 2
        while index < len(text) and " " <= text[index] <= "?":
            index += 1
        return None if index == len(text) else index + 1
    if second == "O":  # SS3: one more character (F1-F4, arrows in application mode)
        return None if at + 2 == len(text) else at + 3
    return at + 2  # Alt with a key
