"""How the REPL shows what the agent does: streamed Markdown, compact tool lines, compaction status,
and the activity footer (spinner and status bar) during the whole turn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from mini_letta.loop.agent import AgentEvents
from mini_letta.repl.activity import Activity
from mini_letta.repl.views import compaction_line, plain, preview, tool_result_line
from mini_letta.subagents.progress import footer_line, progress_line
from mini_letta.trust.terminal_text import visible

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost
    from mini_letta.repl.markdown_stream import MarkdownStream

COMPACTING = {"manual": "Compacting", "context_pressure": "Context is nearly full: compacting",
              "context_overflow": "The provider said the request is too long: compacting",
              "model_change": "The new model's window is smaller: compacting"}


class ReplEvents(AgentEvents):
    def __init__(self, repl: "ReplHost"):
        self.repl = repl
        self.console = repl.console
        self.stream: MarkdownStream | None = None
        self.activity = Activity(repl.console)
        self.activity.queued = lambda: repl.turn_keys.sent if repl.turn_keys is not None else []
        self._received_chars = 0
        self._subagents: dict[str, object] = {}  # by run id, in the order they started
        self._subagents_shown: set[str] = set()

    # -- the footer ------------------------------------------------------------------------------
    def _show(self, label: str, *, restart: bool = True) -> None:
        self.activity.status = self.repl.status_line()
        self.activity.show(label, restart=restart)

    def go_on(self, steps: int) -> bool:
        """The turn reached its limit of model calls: ask, one key, whether to allow as many again."""
        return self.repl.approvals.ask_to_go_on(steps)

    def pause(self) -> None:
        """Take the footer away (before the REPL asks the user something)."""
        self.activity.hide()

    def resume(self) -> None:
        """Show the footer again after ``pause`` (an allowed command now runs), its seconds from now."""
        self._show(self.activity.label)

    # -- the model -------------------------------------------------------------------------------
    def waiting_for_model(self) -> None:
        self._end_stream()
        self._received_chars = 0
        self.activity.tokens = 0
        self._show("Waiting for the model")

    def retrying(self, text: str) -> None:
        self._end_stream()
        self.console.print(plain(text[:1].upper() + text[1:] + ".", "yellow"))
        self._show(text[:1].upper() + text[1:])

    def text(self, delta: str) -> None:
        if self.stream is None:
            # Imported here, not with this module: the first request is sent before it is needed
            # (the start-up imports it while the user types).
            from mini_letta.repl.markdown_stream import MarkdownStream

            # The stream draws the footer under its text; the seconds go on from the request.
            self.activity.hide()
            self.activity.label = "Receiving the reply"
            self.stream = MarkdownStream(self.console, footer=self.activity.footer_lines)
        self._received_chars += len(delta)
        self.activity.tokens = (self._received_chars + 3) // 4
        self.stream.feed(visible(delta))

    def _end_stream(self) -> None:
        if self.stream is not None:
            self.stream.finish()
            self.stream = None

    def tool_call_started(self, call_id: str, name: str) -> None:
        self._end_stream()
        self._show(f"The model is writing a {name} call", restart=False)

    def assistant_message(self, message) -> None:
        self._end_stream()
        self.activity.hide()
        self.repl.refresh_status()

    # -- tools -----------------------------------------------------------------------------------
    def tool_call(self, call, description: str) -> None:
        self._end_stream()
        self.activity.hide()
        self.console.print(Text.assemble(("⏺ ", "cyan"), plain(description)))
        self._show(f"Running {preview(description, 60)}")

    def tool_result(self, call, outcome) -> None:
        self.activity.hide()
        if call.name == "task":
            self._show_finished_subagents()
            # What the subagents said (prefixed with their type) is shown with their lines, not after the turn.
            for text in self.repl.options.notices.take():
                self.console.print(plain(text, "yellow"))
        self.repl.remember_output(call, outcome)
        if call.name == "todo_write" and not outcome.is_error:
            self._show_todos(call)
        else:
            self.console.print(tool_result_line(outcome.text, outcome.is_error))
        self.repl.refresh_status()

    def _show_todos(self, call) -> None:
        """The list the model just wrote, in place of its result's first line."""
        from mini_letta.repl.todos_view import todo_lines
        from mini_letta.todos.items import parse

        todos = parse(call.parse_arguments())
        self.console.print(todo_lines(todos) if todos else plain("  ⎿ Task list cleared", "dim"))

    # -- subagents ------------------------------------------------------------------------------
    def subagent_progress(self, run) -> None:
        """From the subagent's thread: the footer's line follows it, redrawn in place by Rich, so a
        subagent's whole work is one line; several side by side share it, each with its state."""
        self._subagents[run.id] = run
        self.activity.label = footer_line([other for other in self._subagents.values()
                                           if other.id not in self._subagents_shown] or [run])

    def _show_finished_subagents(self) -> None:
        """The line each finished subagent collapses to, once, above its report's line."""
        for run in list(self._subagents.values()):
            if run.status != "running" and run.id not in self._subagents_shown:
                self._subagents_shown.add(run.id)
                self.console.print(Text.assemble(("  ◆ ", "magenta"), plain(progress_line(run), "dim")))

    # -- compaction ------------------------------------------------------------------------------
    def compaction_started(self, trigger: str) -> None:
        self._end_stream()
        self._show(COMPACTING.get(trigger, "Compacting"))

    def compaction_finished(self, record) -> None:
        self.activity.hide()
        if not record.layers:  # "nothing to compact": say why instead of "0 → 0"
            self.console.print(plain(record.note or "Nothing to compact yet."))
        else:
            self.console.print(Text(compaction_line(record, self.repl.percent_left()), style="magenta"))
            if record.note:
                self.console.print(plain(record.note, "dim"))
        self.repl.refresh_status()

    def notice(self, text: str) -> None:
        self._end_stream()
        self.activity.hide()
        self.console.print(plain(text, "yellow"))

    def close(self) -> None:
        """End any live display (also after Ctrl-C), keeping what was shown: a subagent stopped
        with the turn collapses to its line too, which says it was interrupted."""
        self.activity.hide()
        if self.stream is not None:
            self.stream.abort()
            self.stream = None
        self._show_finished_subagents()
