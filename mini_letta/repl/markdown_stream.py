"""Streaming Markdown for the REPL: settled blocks go to scrollback once, only the tail is live.

Rich's ``Live`` repaints its whole renderable on every refresh, so a growing reply shown in one
``Live`` costs O(length) per frame and O(length²) per reply, and repainting a tall region flickers.
Here the reply is cut at block boundaries that later text can no longer change. Each settled block
is rendered once and printed above a ``Live`` window that holds only the unsettled tail, cropped
to ``live_lines`` rows, so per-frame work follows the tail, not the reply.

Where a cut is safe (CommonMark rules, outside fenced code):

- at the first non-blank line after blank lines, unless the block so far holds a list item and
  that line is another list item or indented (a loose list, or an item's continuation);
- before an opening fence and after its closing fence, and after an ATX heading, at the top level.

A top-level fence that outgrows the window is settled in pieces of highlighted code lines, with
the padding Rich's ``CodeBlock`` uses, the top padding on the first piece and the bottom padding
on the last, so the text and layout match one render of the whole block; one highlighter serves
all pieces, so a string or comment spanning a piece boundary keeps its colour. Not handled:
reference-style link definitions placed after a cut, and HTML blocks containing blank lines;
both are rare in model replies.

Blocks are rendered by ``markdown_fast``, which lays out the common block kinds as Rich's
``Markdown`` does at a fraction of its cost (code is coloured by a small highlighter, not
Pygments); a block it does not recognise is rendered by Rich's ``Markdown``. Blocks settled in
one frame are printed together, in one ``console.print``.

When the console is not a terminal there is no ``Live`` window: settled blocks are printed as they
settle and fences are settled whole, so the text equals one render of the whole reply.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment

from mini_letta.repl.markdown_fast import CODE_THEME, CodeHighlighter, code_lines, render_markdown

# Once an open fence holds this many lines more than the window shows, they are settled together,
# so a long fence is printed in a few pieces rather than a line per frame.
_FENCE_BATCH = 20

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
    highlighter: CodeHighlighter | None = None  # carries open strings across settled pieces

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
    """Render a streamed Markdown reply: settled blocks to scrollback, the tail in a short window.

    Call ``feed`` for each chunk, then ``finish`` (or ``abort`` on Ctrl-C). Used as a context
    manager it finishes on a normal exit and aborts on an exception. ``renders`` and
    ``rendered_chars`` count the renderer runs and the source characters they were given,
    ``fallback_renders`` those left to Rich's ``Markdown``, ``frames`` the window repaints.
    """

    def __init__(
        self,
        console: Console,
        *,
        live_lines: int = 6,
        min_interval: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.live_lines = max(1, live_lines)
        self.min_interval = min_interval
        self.renders = 0
        self.rendered_chars = 0
        self.fallback_renders = 0  # renders of text the fast renderer left to Rich's Markdown
        self.frames = 0  # repaints of the live window
        self._clock = clock
        self._use_live = console.is_terminal and not console.is_dumb_terminal
        self._live: Live | None = None
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
        self._closed = False

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
        """Take the next chunk; work is done at most once per ``min_interval``.

        Chunks arriving after ``finish`` or ``abort`` (a reply still in flight) are ignored.
        """
        if self._closed or not delta:
            return
        self._incoming.append(delta)
        now = self._clock()
        if now - self._last_frame < self.min_interval:
            return
        self._last_frame = now
        self._settle(final=False)
        if self._use_live:
            self._show_tail()

    def finish(self) -> None:
        """Print everything not yet printed and close the window; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            self._settle(final=True)
        finally:
            self._stop_live()

    def abort(self) -> None:
        """Stop after an interruption, keeping in scrollback every line received so far.

        Safe to call from a ``KeyboardInterrupt`` handler that interrupted ``feed``: settled
        state is committed as each block is printed, so nothing is printed twice.
        """
        self.finish()

    # Settling

    def _settle(self, *, final: bool) -> None:
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
                            self._print_code(tail[cut:start], fence, first=False, last=True)
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
                        pieceable=self._use_live and not opening.group(1) and top_level,
                    )
                elif top_level and _HEADING.match(line):
                    cut = self._print_markdown(tail, cut, pos)
                elif _LIST_ITEM.match(line):
                    self._in_list = True
            fence = self._fence
            if final:
                if fence is not None and fence.pieced:
                    self._print_code(tail[cut:], fence, first=False, last=True)
                    cut = len(tail)
                else:
                    cut = self._print_markdown(tail, cut, len(tail))
                self._fence = None
            elif fence is not None and fence.pieceable:
                if fence.body_lines >= self.live_lines + _FENCE_BATCH:
                    cut = self._print_code_piece(tail, cut, pos, fence)
        finally:
            self._tail = tail[cut:]
            self._scan_pos = pos - cut
            self._flush()

    def _print_markdown(self, tail: str, cut: int, end: int) -> int:
        """Print tail[cut:end] as one Markdown block and return the new cut."""
        text = tail[cut:end]
        if text.strip():
            self._print(self._render_markdown(text))
        self._in_list = False
        return end

    def _render_markdown(self, text: str, *, window: bool = False) -> list[list[Segment]]:
        self.renders += 1
        self.rendered_chars += len(text)
        # One more line than the window shows, so the blank line above a block is judged right.
        last_lines = self.live_lines + 1 if window else None
        lines = render_markdown(text, self.console, last_lines=last_lines)
        if lines is None:
            self.fallback_renders += 1
            markdown = Markdown(text, code_theme=CODE_THEME)
            lines = self.console.render_lines(markdown, self.console.options, pad=False)
        return lines

    def _print_code_piece(self, tail: str, cut: int, end: int, fence: _Fence) -> int:
        """Print all but the window's worth of an open fence's lines; return the new cut."""
        body_start = cut if fence.pieced else tail.index("\n", cut) + 1
        lines = tail[body_start:end].split("\n")[:-1]
        last_text = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
        # The last line with text stays unsettled so the final piece is never empty.
        count = min(len(lines) - self.live_lines, last_text)
        while count > 0 and not lines[count - 1].strip():
            count -= 1  # Syntax drops a trailing blank line, so blank lines wait for the next piece
        if count <= 0:
            return cut
        piece = "\n".join(lines[:count])
        self._print_code(piece, fence, first=not fence.pieced, last=False)
        fence.pieced = True
        fence.body_lines -= count
        return body_start + len(piece) + 1

    def _print_code(self, code: str, fence: _Fence, *, first: bool, last: bool) -> None:
        if last:
            code = code.rstrip()  # as Rich's CodeBlock does
        elif code.endswith("\n"):
            code = code[:-1]
        if fence.highlighter is None:
            fence.highlighter = CodeHighlighter(fence.lexer)
        self.renders += 1
        self.rendered_chars += len(code)
        lines = code_lines(
            fence.highlighter, code.split("\n"), self.console.width, top=first, bottom=last
        )
        self._print(lines, continues=not first)

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

    # The live window

    def _show_tail(self) -> None:
        text = self._tail
        if not text.strip():
            if self._live is not None:
                self._live.update(_Lines([]), refresh=True)
            return
        fence = self._fence
        if fence is not None and fence.pieceable:
            # Only the lines that fit the window need highlighting; before the first piece the
            # tail starts at the opening line, as a cut precedes every top-level fence.
            body = text if fence.pieced else text.partition("\n")[2]
            code = self._last_lines(body).rstrip("\n")
            lines = self._code_window(code, fence.lexer, top_padding=not fence.pieced)
            if not fence.pieced:
                lines = self._separated(lines)
        else:
            lines = self._separated(self._render_markdown(self._bounded(text), window=True))
        height = max(1, min(self.live_lines, self.console.height - 1))
        window = _Lines(lines[-height:])
        self.frames += 1
        if self._live is None:
            self._live = Live(
                window,
                console=self.console,
                auto_refresh=False,
                transient=True,
                # Swapping sys.stdout is global state that outlives a caller that never finishes.
                redirect_stdout=False,
                redirect_stderr=False,
                vertical_overflow="visible",
            )
            self._live.start(refresh=True)
        else:
            self._live.update(window, refresh=True)

    def _code_window(self, code: str, lexer: str, *, top_padding: bool) -> list[list[Segment]]:
        self.renders += 1
        self.rendered_chars += len(code)
        # A fresh highlighter: the window's first line may sit inside a string opened above it,
        # which colours a few lines differently until they settle.
        highlighter = CodeHighlighter(lexer)
        return code_lines(
            highlighter, code.split("\n"), self.console.width, top=top_padding, bottom=False
        )

    def _last_lines(self, text: str) -> str:
        parts = text.rsplit("\n", self.live_lines)
        return "\n".join(parts[1:] if len(parts) > self.live_lines else parts)

    def _bounded(self, text: str) -> str:
        """The tail, or its last whole lines when a huge block (a long list) has not settled."""
        limit = 8 * self.live_lines * max(self.console.width, 20)
        if len(text) <= limit:
            return text
        start = text.find("\n", len(text) - limit) + 1
        return text[start:] if start > 0 else text[text.rfind("\n", 0, len(text) - 1) + 1 :]

    def _stop_live(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()
