"""Streaming Markdown for the REPL: settled blocks go to scrollback once, only the tail is redrawn.

``MarkdownStream(console, footer=...)``: ``feed(text)`` as the reply streams, ``finish()`` at its end.
A block is printed (by Rich's ``Markdown``) once later text can no longer change it; the unsettled
tail is written raw on a terminal and kept shorter than the screen; a long code fence settles in
pieces that colour as one render. Not a terminal: blocks print as they settle, fences whole. The
design (where a cut is safe, the fence pieces, the footer) is in ``docs/markdown_stream.md``.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from rich.cells import get_character_cell_size
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.syntax import Syntax

from mini_letta.repl.markdown_links import LinkTargetMarkdown

CODE_THEME = "monokai"  # Rich's Markdown default

# Once an open fence holds this many lines more than ``live_lines``, they are settled together,
# so a long fence is printed in a few pieces rather than a line per frame.
_FENCE_BATCH = 20
# Lines of already settled code lexed again before a piece of an open fence (see the module's doc):
# a piece then costs at most about 40 ms (Python code, 100 columns).
_CODE_CONTEXT = 500
_TAB_SIZE = 8
# Rows kept free under the raw tail for the footer (its lines, and one more for a full last row,
# after which the footer starts a row lower).
FOOTER_ROWS = 3
# C0 controls but newline and tab, DEL and C1 controls: written raw they would move the cursor or
# change the terminal's state, and the row count would be wrong.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")


@dataclass
class _Fence:
    char: str
    length: int
    lexer: str
    top_level: bool  # cuts may be made before and after it
    pieceable: bool  # may be settled in pieces while still open
    body_lines: int = 0  # complete lines not yet settled
    pieced: bool = False  # its opening and first lines are already printed
    settled: list[str] = field(default_factory=list)  # its last settled lines, lexed again as context

    def closed_by(self, line: str) -> bool:
        match = _FENCE.match(line)
        return bool(
            match
            and match.group(2)[0] == self.char
            and len(match.group(2)) >= self.length
            and not match.group(3).strip()
        )


def _open_fence(line: str) -> re.Match[str] | None:
    match = _FENCE.match(line)
    if match and match.group(2)[0] == "`" and "`" in match.group(3):
        return None  # CommonMark: a backtick fence's info string holds no backtick
    return match


class _Lines:
    """Lines already rendered to segments, printed without rendering them again."""

    def __init__(self, lines: Iterable[list[Segment]]) -> None:
        self._lines = list(lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        newline = Segment.line()
        for line in self._lines:
            yield from line
            yield newline


class MarkdownStream:
    """Render a streamed Markdown reply: settled blocks to scrollback, the tail written raw.

    Call ``feed`` for each chunk, then ``finish`` (or ``abort`` on Ctrl-C). Used as a context
    manager it finishes on a normal exit and aborts on an exception. ``min_interval`` is how often
    (at most) received text is checked for settled blocks; ``live_lines`` is how many lines of an
    open code fence stay raw when a piece of it settles. ``renders`` and ``rendered_chars`` count
    the renderer runs and the source characters they were given, ``render_seconds`` holds the CPU
    time of each run (what a settled block adds to the latency the user sees), ``frames`` counts
    the times the raw tail was erased and written again.

    ``footer(width)`` returns the lines to keep under the raw tail (already styled with escape
    codes, each narrower than ``width``); it is called when the footer is first drawn, then from
    the stream's thread every ``footer_interval`` seconds, so it must only read what it shows.
    """

    def __init__(
        self,
        console: Console,
        *,
        live_lines: int = 6,
        min_interval: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        footer: Callable[[int], list[str]] | None = None,
        footer_interval: float = 0.125,
    ) -> None:
        self.console = console
        self.live_lines = max(1, live_lines)
        self.min_interval = min_interval
        self.renders = 0
        self.rendered_chars = 0
        self.render_seconds: list[float] = []
        self.frames = 0  # erasures and rewrites of the raw tail
        self._clock = clock
        # Looked up at each check for settled blocks, not for each chunk: they cost a few
        # microseconds each, and a resize reflows the raw text anyway.
        self._width = console.width
        self._file = console.file
        self._raw = (
            console.is_terminal and not console.is_dumb_terminal and not console.legacy_windows
        )
        self._footer = footer if self._raw else None
        # The cursor may go up this many rows: the raw text's first row must stay on the screen,
        # with the footer under the last one.
        self.max_raw_rows = max(1, console.height - 2 - (FOOTER_ROWS if self._footer else 0))
        self._incoming: list[str] = []
        self._tail = ""  # received text not yet settled; it starts at a block boundary
        self._scan_pos = 0  # offset in _tail of the first line not yet scanned
        self._fence: _Fence | None = None
        self._in_list = False  # the unsettled block holds a list item
        self._after_blank = False  # the last scanned line outside a fence was blank
        self._pending: list[list[Segment]] = []  # settled lines not yet printed
        self._printed = False
        self._ended_empty = False  # the last printed line is an empty line
        self._last_frame = float("-inf")
        self._unscanned_line = False  # a newline arrived after the last check
        self._closed = False
        # The raw text on screen: rows below its first row, and the column, of the cursor.
        self._rows = 0
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
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None
        self._stopped = threading.Event()

    def __enter__(self) -> MarkdownStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.abort()

    def feed(self, delta: str) -> None:
        """Take the next chunk: write it raw, and look for settled blocks once per ``min_interval``.

        Chunks arriving after ``finish`` or ``abort`` (a reply still in flight) are ignored.
        """
        if self._closed or not delta:
            return
        with self._lock:
            self._take(delta)

    def _take(self, delta: str) -> None:
        self._incoming.append(delta)
        if self._raw:
            if self._held:
                self._held.append(delta)
            else:
                ready, self._word = _whole_words(self._word + delta, self._width)
                if ready:
                    self._write_raw(ready)
                if self._held and self._word:  # held text comes before the word, in order
                    self._held.append(self._word)
                    self._word = ""
            if self._footer is not None and self._ticker is None:
                self._draw_footer()
                self._start_ticker()
        # Only complete lines are scanned, so a check before a newline arrives finds nothing.
        self._unscanned_line = self._unscanned_line or "\n" in delta
        if not self._unscanned_line:
            return
        now = self._clock()
        if now - self._last_frame < self.min_interval:
            return
        self._last_frame = now
        self._unscanned_line = False
        self._settle(final=False)

    def finish(self) -> None:
        """Replace the raw tail with its rendering; later calls do nothing."""
        if self._closed:
            return
        self._stop_ticker()
        with self._lock:
            self._closed = True
            self._settle(final=True)

    def abort(self) -> None:
        """Stop after an interruption, keeping on screen every character received so far.

        The raw tail stays as it is, unrendered (rendering is what may have been interrupted),
        followed by any text held back from it, and the cursor moves to a new line. Safe to call
        from a ``KeyboardInterrupt`` handler that interrupted ``feed``: settled state is
        committed as each block is printed, so nothing is printed twice.
        """
        if self._closed:
            return
        self._stop_ticker()
        with self._lock:
            self._closed = True
            if not self._raw:
                self._settle(final=True)
                return
            self._erase_footer()
            held, self._held = "".join(self._held) + self._word, []
            self._word = ""
            self._write_raw(held, limit=False)
            if self._column:
                self.console.file.write("\n")
                self.console.file.flush()
            self._rows = self._column = 0

    # The footer

    def _start_ticker(self) -> None:
        self._ticker = threading.Thread(target=self._tick, name="mini-letta-footer", daemon=True)
        self._ticker.start()

    def _stop_ticker(self) -> None:
        self._stopped.set()
        ticker = self._ticker
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join()

    def _tick(self) -> None:
        while not self._stopped.wait(self._footer_interval):
            with self._lock:
                if self._closed:
                    return
                self._draw_footer(fresh=True)

    def _erase_footer(self) -> None:
        """Clear the footer's rows; the cursor stays after the raw text."""
        if not self._footer_rows:
            return
        if self._column >= self._width:
            # A full last row: the cursor sits on its last character, which an erase would take.
            # The text goes on at the next row's start either way.
            self._rows, self._column = self._rows + 1, 0
            self._file.write("\r\n\x1b[J")
        else:
            self._file.write("\x1b[J")
        self._footer_rows = 0

    def _draw_footer(self, *, fresh: bool = False) -> None:
        """Draw the footer under the raw text (erasing the old one) and put the cursor back."""
        if self._footer is None:
            return
        if fresh or self._footer_width != self._width:
            self._footer_lines, self._footer_width = self._footer(self._width), self._width
        lines = self._footer_lines
        if self._column >= self._width:
            # As in ``_erase_footer``; the erase below clears an old footer.
            self._rows, self._column = self._rows + 1, 0
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

    # Settling

    def _settle(self, *, final: bool) -> None:
        self._width, self._file = self.console.width, self.console.file
        if self._incoming:
            self._tail += "".join(self._incoming)
            self._incoming.clear()
        if final and self._tail and not self._tail.endswith("\n"):
            self._tail += "\n"  # so a closing fence on the last line is recognised
        tail = self._tail
        cut = 0  # offset in tail up to which everything is printed
        pos = self._scan_pos
        try:
            while (newline := tail.find("\n", pos)) >= 0:
                line = tail[pos:newline]
                start, pos = pos, newline + 1
                fence = self._fence
                if fence is not None:
                    if fence.closed_by(line):
                        self._fence = None
                        if fence.pieced:
                            self._print_code(tail[cut:start].split("\n"), fence, first=False, last=True)
                            cut = pos
                        elif fence.top_level:
                            cut = self._print_markdown(tail, cut, pos)
                    else:
                        fence.body_lines += 1
                    continue
                if not line.strip():
                    self._after_blank = True
                    continue
                indented = line[:1] in " \t"
                if self._after_blank:
                    self._after_blank = False
                    continues_list = self._in_list and bool(_LIST_ITEM.match(line))
                    if not (indented or continues_list):
                        cut = self._print_markdown(tail, cut, start)
                top_level = not (indented and self._in_list)
                if opening := _open_fence(line):
                    if top_level:
                        cut = self._print_markdown(tail, cut, start)
                    marker = opening.group(2)
                    self._fence = _Fence(
                        char=marker[0],
                        length=len(marker),
                        lexer=opening.group(3).strip().partition(" ")[0] or "text",
                        top_level=top_level,
                        pieceable=self._raw and not opening.group(1) and top_level,
                    )
                elif top_level and _HEADING.match(line):
                    cut = self._print_markdown(tail, cut, pos)
                elif _LIST_ITEM.match(line):
                    self._in_list = True
            fence = self._fence
            if final:
                if fence is not None and fence.pieced:
                    self._print_code(tail[cut:].split("\n"), fence, first=False, last=True)
                    cut = len(tail)
                else:
                    cut = self._print_markdown(tail, cut, len(tail))
                self._fence = None
            elif fence is not None and fence.pieceable:
                if (
                    fence.body_lines >= self.live_lines + _FENCE_BATCH
                    or self._rows > self.max_raw_rows // 2
                ):
                    cut = self._print_code_piece(tail, cut, pos, fence)
        finally:
            self._tail = tail[cut:]
            self._scan_pos = pos - cut
            if self._raw and (cut or final):
                self._redraw(final=final)
            else:
                self._flush()

    def _print_markdown(self, tail: str, cut: int, end: int) -> int:
        """Print tail[cut:end] as one Markdown block and return the new cut."""
        text = tail[cut:end]
        if text.strip():
            self._print(self._render_markdown(text))
        self._in_list = False
        return end

    def _render_markdown(self, text: str) -> list[list[Segment]]:
        started = time.thread_time()
        lines = self.console.render_lines(
            LinkTargetMarkdown(text, code_theme=CODE_THEME), self.console.options, pad=False
        )
        self._count_render(text, started)
        return lines

    def _count_render(self, source: str, started: float) -> None:
        self.renders += 1
        self.rendered_chars += len(source)
        self.render_seconds.append(time.thread_time() - started)

    def _print_code_piece(self, tail: str, cut: int, end: int, fence: _Fence) -> int:
        """Print all but the window's worth of an open fence's lines; return the new cut."""
        body_start = cut if fence.pieced else tail.index("\n", cut) + 1
        lines = tail[body_start:end].split("\n")[:-1]
        last_text = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
        # The last line with text stays unsettled so the final piece is never empty.
        count = min(len(lines) - self.live_lines, last_text)
        if count <= 0:
            return cut
        self._print_code(lines[:count], fence, first=not fence.pieced, last=False, following=lines[count:])
        fence.pieced = True
        fence.body_lines -= count
        return body_start + sum(len(line) + 1 for line in lines[:count])

    def _print_code(
        self, lines: list[str], fence: _Fence, *, first: bool, last: bool, following: Sequence[str] = ()
    ) -> None:
        """Print a piece of an open fence as Rich's ``CodeBlock`` would print those lines."""
        started = time.thread_time()
        context = fence.settled
        source = "\n".join([*context, *lines, *following])
        syntax = Syntax(
            source.rstrip() if last else source,  # as CodeBlock strips the whole block
            fence.lexer,
            theme=CODE_THEME,
            word_wrap=True,
            padding=(1 if first else 0, 1, 1 if last else 0, 1),
            line_range=(len(context) + 1, len(context) + len(lines)),
        )
        rendered = self.console.render_lines(syntax, self.console.options, pad=False)
        self._count_render("\n".join(lines), started)
        fence.settled = [*context, *lines][-_CODE_CONTEXT:]
        self._print(rendered, continues=not first)

    def _separated(self, lines: list[list[Segment]]) -> list[list[Segment]]:
        """Prefix the blank line Rich's Markdown puts between top-level blocks.

        Rendered alone, a list or block quote already starts with that blank line (Rich carries
        its last paragraph's spacing flag over to it), and a rule already ends with one.
        """
        starts_empty = bool(lines) and Segment.get_line_length(lines[0]) == 0
        if self._printed and not self._ended_empty and not starts_empty:
            return [[], *lines]
        return lines

    def _print(self, lines: list[list[Segment]], *, continues: bool = False) -> None:
        """Queue lines for the next flush; one print per frame costs less than one per block."""
        if not lines:
            return
        if not continues:
            lines = self._separated(lines)
        self._pending.extend(lines)
        self._printed = True
        self._ended_empty = Segment.get_line_length(lines[-1]) == 0

    def _flush(self) -> None:
        if self._pending:
            lines, self._pending = self._pending, []
            self.console.print(_Lines(lines))

    # The raw tail

    def _redraw(self, *, final: bool) -> None:
        """Erase the raw tail, print what settled, and write the rest of the tail raw again."""
        file = self._file
        if self._rows or self._column or self._footer_rows:
            up = f"\x1b[{self._rows}A" if self._rows else ""
            file.write(f"{up}\r\x1b[J")
            self.frames += 1
        self._rows = self._column = self._footer_rows = 0
        self._held = []
        self._word = ""
        self._flush()
        if final:
            file.flush()
        else:
            ready, self._word = _whole_words(self._tail, self._width)
            self._write_raw(ready)
            if self._held and self._word:
                self._held.append(self._word)
                self._word = ""
            self._draw_footer()

    def _write_raw(self, text: str, *, limit: bool = True) -> None:
        """Write ``text`` as plain text, counting the rows it takes when the terminal wraps it.

        With ``limit``, writing stops before the raw tail would be taller than
        ``max_raw_rows`` and the rest is held back until the tail is redrawn.
        """
        width = self._width
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
        rows, column = self._rows, self._column
        most = self.max_raw_rows if limit else float("inf")
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
        self._rows, self._column = rows, column
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
