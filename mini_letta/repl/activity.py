"""The footer shown during a whole turn: a spinner line and the status bar.

    ⠹ Waiting for the model · 4s · Ctrl-C to interrupt
    88% context left · openai:gpt-4.1 · 15k/128k tokens

prompt_toolkit draws the status bar only while it reads a line; during a turn this footer takes its
place. During a wait (the model, a tool, a compaction, a retry) it is a transient
``rich.live.Live``: Rich redraws it from its own thread (so the seconds count while the main thread
waits on the network) and erases it when it stops. While reply text streams, the streamed Markdown
owns the bottom of the screen: the Live stops and ``MarkdownStream`` draws ``footer_lines`` under
its raw tail instead (see ``markdown_stream.py``), so the footer never leaves the screen.
On a console that is not a terminal nothing is drawn.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from rich.console import COLOR_SYSTEMS, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from mini_letta.trust.terminal_text import one_line
from mini_letta.wording import counted

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult


class Activity:
    """``show(label)`` starts or relabels the footer; ``hide()`` removes it; ``status`` is its last line."""

    def __init__(self, console: "Console"):
        self.console = console
        self.label = ""
        self.started = time.monotonic()
        self.tokens = 0  # received in this model call, estimated from characters
        self.status = Text()
        # The lines sent with Enter during the turn (None: Ctrl-D), read at each redraw.
        self.queued: Callable[[], list[str | None]] = list
        self._spinner = Spinner("dots", style="cyan")
        self._live: Live | None = None

    @property
    def visible(self) -> bool:
        return self._live is not None

    def line(self) -> Text:
        """The spinner line's text (without the spinner): what, for how long, what was received."""
        seconds = int(time.monotonic() - self.started)
        parts = [Text(one_line(self.label), style="bold"), Text(f"{seconds}s")]
        if self.tokens:
            parts.append(Text(f"{counted(self.tokens, 'token')} received"))
        queued = self.queued()
        lines = [line for line in queued if line is not None]
        if lines:
            parts.append(Text(f"{counted(len(lines), 'message')} queued: “{one_line(lines[-1])}”", style="cyan"))
        if None in queued:
            parts.append(Text("exits after this reply (Ctrl-D)", style="cyan"))
        parts.append(Text("Ctrl-C to interrupt", style="dim"))
        return Text(" · ").join(parts)

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> "RenderResult":
        spinner = self._spinner.render(time.monotonic())
        first = Text.assemble(spinner if isinstance(spinner, Text) else Text(str(spinner)), " ", self.line())
        first.truncate(options.max_width, overflow="ellipsis")
        status = self.status.copy()
        status.truncate(options.max_width, overflow="ellipsis")
        yield Group(first, status)

    def footer_lines(self, width: int) -> list[str]:
        """The footer as lines of text with escape codes, narrower than ``width``, for a writer
        that draws it itself (the streamed reply). Every part of it went through ``one_line`` or
        the status bar's own cleaning, so the only escape codes are the styles added here."""
        console = self.console
        lines = console.render_lines(self, console.options.update_width(max(1, width - 1)), pad=False)
        system = COLOR_SYSTEMS.get(console.color_system or "")
        return ["".join(segment.style.render(segment.text, color_system=system)
                        if segment.style and system else segment.text
                        for segment in line if not segment.control)
                for line in lines]

    def show(self, label: str, *, restart: bool = True) -> None:
        self.label = label
        if restart:
            self.started = time.monotonic()
        if self._live is None and self.console.is_terminal and not self.console.is_dumb_terminal:
            self._live = Live(self, console=self.console, refresh_per_second=8, transient=True,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()

    def hide(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()
