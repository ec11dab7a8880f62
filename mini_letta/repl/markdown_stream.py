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

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.syntax import Syntax

from mini_letta.repl.markdown_links import LinkTargetMarkdown
from mini_letta.repl.raw_tail import RawTail

CODE_THEME = "monokai"  # Rich's Markdown default

# Once an open fence holds this many lines more than ``live_lines``, they are settled together,
# so a long fence is printed in a few pieces rather than a line per frame.
_FENCE_BATCH = 20
# Lines of already settled code lexed again before a piece of an open fence (see the module's doc):
# a piece then costs at most about 40 ms (Python code, 100 columns).
_CODE_CONTEXT = 500

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
        self._clock = clock
        self._raw = (
            console.is_terminal and not console.is_dumb_terminal and not console.legacy_windows
        )
        self._lock = threading.Lock()
        self._screen = RawTail(console, footer if self._raw else None, footer_interval, self._lock)
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

    @property
    def frames(self) -> int:
        """The times the raw tail was erased and written again."""
        return self._screen.frames

    @property
    def max_raw_rows(self) -> int:
        """The rows the raw tail may take (the cursor goes up at most this many)."""
        return self._screen.max_rows

    @property
    def _ticker(self):
        return self._screen.ticker

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
            self._screen.received(delta)
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
        self._screen.stop()
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
        self._screen.stop()
        with self._lock:
            self._closed = True
            if not self._raw:
                self._settle(final=True)
                return
            self._screen.end_after_interruption()

    # Settling

    def _settle(self, *, final: bool) -> None:
        self._screen.follow_console()
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
                    or self._screen.rows > self._screen.max_rows // 2
                ):
                    cut = self._print_code_piece(tail, cut, pos, fence)
        finally:
            self._tail = tail[cut:]
            self._scan_pos = pos - cut
            if self._raw and (cut or final):
                self._screen.redraw(self._tail, self._flush, final=final)
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
