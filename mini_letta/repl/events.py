"""How the REPL shows what the agent does: streamed Markdown, compact tool lines, compaction status."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from mini_letta.agent import AgentEvents
from mini_letta.repl.markdown_stream import MarkdownStream
from mini_letta.repl.views import compaction_line, plain
from mini_letta.terminal_text import visible

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost


class ReplEvents(AgentEvents):
    def __init__(self, repl: "ReplHost"):
        self.repl = repl
        self.console = repl.console
        self.stream: MarkdownStream | None = None
        self.status = None

    def text(self, delta: str) -> None:
        if self.stream is None:
            self.stream = MarkdownStream(self.console)
        self.stream.feed(visible(delta))

    def _end_stream(self) -> None:
        if self.stream is not None:
            self.stream.finish()
            self.stream = None

    def tool_call(self, call, description: str) -> None:
        self._end_stream()
        self.console.print(Text.assemble(("⏺", "cyan"), " ", plain(description)))

    def tool_result(self, call, outcome) -> None:
        lines = outcome.text.strip().splitlines()
        first = lines[0][:100] if lines else "(no output)"
        style = "red" if outcome.is_error else "dim"
        more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
        self.console.print(Text.assemble("  ", plain(f"⎿ {first}{more}", style)))

    def assistant_message(self, message) -> None:
        self._end_stream()
        self.repl.refresh_status()

    def compaction_started(self, trigger: str) -> None:
        self._end_stream()
        label = {"manual": "Compacting", "context_pressure": "Context is nearly full: compacting",
                 "context_overflow": "Provider said too long: compacting"}.get(trigger, "Compacting")
        self.status = self.console.status(f"{label}…", spinner="dots")
        self.status.start()

    def compaction_finished(self, record) -> None:
        self._stop_status()
        if not record.layers:  # "nothing to compact": say why instead of "0 → 0"
            self.console.print(plain(record.note or "Nothing to compact yet."))
        else:
            self.console.print(plain(compaction_line(record), "magenta"))
            if record.note:
                self.console.print(plain(record.note, "dim"))
        self.repl.refresh_status()

    def notice(self, text: str) -> None:
        self._end_stream()
        self._stop_status()
        self.console.print(plain(text, "yellow"))

    def _stop_status(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def close(self) -> None:
        """End any live display (also after Ctrl-C), keeping what was shown."""
        self._stop_status()
        if self.stream is not None:
            self.stream.abort()
            self.stream = None
