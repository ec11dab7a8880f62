"""The unsettled tail of a streamed reply, written raw to the terminal, with the footer kept under it.

``RawTail`` counts the rows and column the raw text takes as the terminal wraps it, so it can erase
it and write it again when blocks settle (``markdown_stream.py``); a thread redraws the footer a few
times a second. The design is in ``docs/markdown_stream.md``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

from rich.cells import get_character_cell_size
from rich.console import Console

_TAB_SIZE = 8
# Rows kept free under the raw tail for the footer (its lines, and one more for a full last row,
# after which the footer starts a row lower).
FOOTER_ROWS = 3
# C0 controls but newline and tab, DEL and C1 controls: written raw they would move the cursor or
# change the terminal's state, and the row count would be wrong.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class RawTail:
    """Raw text and footer on a terminal. ``footer(width)`` returns the lines to keep under the text
    (styled with escape codes, each narrower than ``width``); ``lock`` is the stream's, held by
    every caller and by the footer's thread."""

    def __init__(self, console: Console, footer: Callable[[int], list[str]] | None, footer_interval: float,
                 lock: threading.Lock) -> None:
        self.console = console
        self.width = console.width
        self._file = console.file
        self._footer = footer
        # The cursor may go up this many rows: the raw text's first row must stay on the screen,
        # with the footer under the last one.
        self.max_rows = max(1, console.height - 2 - (FOOTER_ROWS if footer else 0))
        self.frames = 0  # erasures and rewrites of the raw text
        # The raw text on screen: rows below its first row, and the column, of the cursor.
        self.rows = 0
        self._column = 0
        self._held: list[str] = []  # received text not written raw: the raw text reached its limit
        # The last word received, not written raw until it ends: only a whole word can be moved to
        # the next row when it would cross the right edge, so the terminal never splits one.
        self._word = ""
        self._footer_rows = 0  # footer rows drawn under the cursor's row
        # The footer's last lines and their width: text moving down a row draws them again as they
        # were; only the thread asks for new ones, so a reply's thousands of rows cost no renders.
        self._footer_lines: list[str] = []
        self._footer_width = 0
        self._footer_interval = footer_interval
        self._lock = lock
        self.ticker: threading.Thread | None = None
        self._stopped = threading.Event()

    def follow_console(self) -> None:
        """Take the console's width and file again (at each check for settled blocks: looking them
        up costs a few microseconds, too much for each chunk)."""
        self.width, self._file = self.console.width, self.console.file

    def received(self, delta: str) -> None:
        """Write a chunk as it arrives: whole words only, held back once the text is as tall as allowed."""
        if self._held:
            self._held.append(delta)
        else:
            ready, self._word = _whole_words(self._word + delta, self.width)
            if ready:
                self._write(ready)
            if self._held and self._word:  # held text comes before the word, in order
                self._held.append(self._word)
                self._word = ""
        if self._footer is not None and self.ticker is None:
            self._draw_footer()
            self.ticker = threading.Thread(target=self._tick, name="mini-letta-footer", daemon=True)
            self.ticker.start()

    def redraw(self, tail: str, print_settled: Callable[[], None], *, final: bool) -> None:
        """Erase the raw text, print what settled, and write ``tail`` raw again (not when ``final``)."""
        file = self._file
        if self.rows or self._column or self._footer_rows:
            up = f"\x1b[{self.rows}A" if self.rows else ""
            file.write(f"{up}\r\x1b[J")
            self.frames += 1
        self.rows = self._column = self._footer_rows = 0
        self._held = []
        self._word = ""
        print_settled()
        if final:
            file.flush()
        else:
            ready, self._word = _whole_words(tail, self.width)
            self._write(ready)
            if self._held and self._word:
                self._held.append(self._word)
                self._word = ""
            self._draw_footer()

    def end_after_interruption(self) -> None:
        """The footer away, the text held back written after the raw text, the cursor on a new line."""
        self._erase_footer()
        held, self._held = "".join(self._held) + self._word, []
        self._word = ""
        self._write(held, limit=False)
        if self._column:
            self._file.write("\n")
            self._file.flush()
        self.rows = self._column = 0

    def stop(self) -> None:
        """Stop the footer's thread (called without the lock: the thread takes it)."""
        self._stopped.set()
        ticker = self.ticker
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join()

    def _tick(self) -> None:
        while not self._stopped.wait(self._footer_interval):
            with self._lock:
                if self._stopped.is_set():
                    return
                self._draw_footer(fresh=True)

    def _erase_footer(self) -> None:
        """Clear the footer's rows; the cursor stays after the raw text."""
        if not self._footer_rows:
            return
        if self._column >= self.width:
            # A full last row: the cursor sits on its last character, which an erase would take.
            # The text goes on at the next row's start either way.
            self.rows, self._column = self.rows + 1, 0
            self._file.write("\r\n\x1b[J")
        else:
            self._file.write("\x1b[J")
        self._footer_rows = 0

    def _draw_footer(self, *, fresh: bool = False) -> None:
        """Draw the footer under the raw text (erasing the old one) and put the cursor back."""
        if self._footer is None:
            return
        if fresh or self._footer_width != self.width:
            self._footer_lines, self._footer_width = self._footer(self.width), self.width
        lines = self._footer_lines
        if self._column >= self.width:
            # As in ``_erase_footer``; the erase below clears an old footer.
            self.rows, self._column = self.rows + 1, 0
            out = ["\r\n\x1b[J"]
        else:
            out = ["\x1b[J"]
        for line in lines:
            out.append("\r\n")
            out.append(line)
        # Relative moves: drawing at the screen's bottom scrolls the text up with the cursor.
        if lines:
            out.append(f"\x1b[{len(lines)}A\r")
        if self._column:
            out.append(f"\x1b[{self._column}C")
        self._footer_rows = len(lines)
        self._file.write("".join(out))
        self._file.flush()

    def _write(self, text: str, *, limit: bool = True) -> None:
        """Write ``text`` as plain text, counting the rows it takes when the terminal wraps it.

        With ``limit``, writing stops before the raw tail would be taller than
        ``max_rows`` and the rest is held back until the tail is redrawn.
        """
        width = self.width
        column = self._column
        fits = column + len(text) <= width
        if fits and "\n" not in text and text.isascii() and text.isprintable():
            # Most chunks: a few characters that fit the row, one cell each.
            self._column = column + len(text)
            self._file.write(text)
            self._file.flush()
            return
        # The text moves down a row: the footer under it is erased first and drawn again after.
        footer = self._footer_rows
        self._erase_footer()
        rows, column = self.rows, self._column
        most = self.max_rows if limit else float("inf")
        out: list[str] = []
        lines = _wrap_at_words(text, column, width).split("\n")
        for index, line in enumerate(lines):
            if index:
                if rows + 1 > most:
                    self._held = ["\n" + "\n".join(lines[index:])]
                    break
                rows, column = rows + 1, 0
                out.append("\n")
            if not line:
                continue
            if line.isascii() and line.isprintable():
                # One cell a character. A terminal moves a character that would pass the last
                # column to the next row: a full row leaves the cursor on it, not below it.
                first_wraps, start = (1, 0) if column >= width else (0, column)
                wraps = first_wraps + (start + len(line) - 1) // width
                if rows + wraps <= most:
                    rows += wraps
                    column = (start + len(line) - 1) % width + 1
                    out.append(line)
                    continue
            rows, column, placed = _place(line, rows, column, width, most, out)
            if placed < len(line):
                self._held = ["\n".join([line[placed:], *lines[index + 1 :]])]
                break
        self.rows, self._column = rows, column
        if out:
            self._file.write("".join(out))
            self._file.flush()
        if footer:
            self._draw_footer()


def _whole_words(text: str, width: int) -> tuple[str, str]:
    """(``text`` up to its last space or new line, the word after it). A word as long as a row is
    let through: it cannot fit on one row anyway."""
    end = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t")) + 1
    if len(text) - end >= width:
        return text, ""
    return text[:end], text[end:]


def _wrap_at_words(text: str, column: int, width: int) -> str:
    """``text`` with a new line put before each word that would cross the right edge, the cursor
    being at ``column``; spaces that would end a row are dropped with it. Lines that are not plain
    ASCII (wide characters, tabs, controls) are left as they are: the terminal wraps them."""
    out: list[str] = []
    for index, line in enumerate(text.split("\n")):
        if index:
            out.append("\n")
            column = 0
        if not (line.isascii() and line.isprintable()):
            out.append(line)
            column = width  # unknown: the next line starts a row anyway
            continue
        for piece in re.findall(r" +|[^ ]+", line):
            if piece[0] == " ":
                if column + len(piece) >= width:
                    out.append("\n")
                    column = 0
                    continue
            elif column and column + len(piece) > width and len(piece) <= width:
                out.append("\n")
                column = 0
            out.append(piece)
            column = (column + len(piece) - 1) % width + 1 if column + len(piece) > width else column + len(piece)
    return "".join(out)


def _place(
    line: str, rows: int, column: int, width: int, most: float, out: list[str]
) -> tuple[int, int, int]:
    """Append ``line`` (no newline) to ``out`` a character at a time, as a terminal wraps it.

    Tabs become spaces and control characters are dropped, so the count matches the screen.
    Returns the cursor's row and column and how many characters were placed before the row
    limit ``most``.
    """
    for index, char in enumerate(line):
        if char == "\t":
            cells = [" "] * (_TAB_SIZE - column % _TAB_SIZE if column < width else _TAB_SIZE)
        elif _CONTROL.match(char):
            continue
        else:
            cells = [char]
        size = get_character_cell_size(char) if char != "\t" else 1
        if size and column + size * len(cells) > width and rows + 1 > most:
            return rows, column, index
        for cell in cells:
            if size and column + size > width:
                rows, column = rows + 1, 0
            column += size
            out.append(cell)
    return rows, column, len(line)
