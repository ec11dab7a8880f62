"""The agent built in a background thread once the prompt is drawn, and what the start-up has to say.

The agent's modules and the tokenizer take about half a second to load: built after the prompt is
on the screen, they never compete with drawing it. The agent is handed over as soon as
the first request can be sent; what only its reply needs is warmed after that, in the same thread.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from rich.console import Console

from mini_letta.app import Options, build_agent
from mini_letta.errors import MiniLettaError
from mini_letta.repl.above_prompt import print_above
from mini_letta.repl.views import plain
from mini_letta.trust.redact import warm as warm_redaction


class Startup:
    def __init__(self, options: Options, console: Console, approvals):
        self.options = options
        self.console = console
        self.approvals = approvals
        self.future: Future | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mini-letta-start")
        self._reported = False
        self._showing_notices = False
        # What is not a line of text (the recap of a resumed session), shown above the prompt with
        # the notices; appended by the start-up thread.
        self.above_prompt: list = []

    def start(self, sender=None) -> Future:
        """Start building the agent (once); every render of the prompt calls this, with the
        prompt's application as ``sender``."""
        if self.future is None:
            self.future = self._executor.submit(self._build)
            self._executor.submit(self._warm_for_reply)
        elif sender is not None and self.future.done():
            self._notices_above_prompt(sender)
        return self.future

    def agent(self):
        """The agent, waiting for the start-up if needed (raises its error)."""
        return self.start().result()

    def agent_if_ready(self):
        future = self.future
        if future is not None and future.done() and future.exception() is None:
            return future.result()
        return None

    @property
    def failed(self) -> bool:
        return self.future is not None and self.future.done() and self.future.exception() is not None

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _build(self):
        """What the first request needs, and nothing more: a user who presses Enter waits for it."""
        agent = build_agent(self.options, self.approvals.approve, on_resumed=self._recap_resumed,
                            plan_reviewer=self.approvals)
        agent.toolbox.permissions.on_allowed = self.approvals.allowed_without_asking
        # Loaded here rather than by the first status-bar render or the first reply, which would freeze the prompt.
        agent.budget.counter.warm()
        # The secret detector is imported on first use (about 0.2 s): the history and the session
        # file mask the first line with it.
        warm_redaction()
        import mini_letta.repl.events  # noqa: F401

        return agent

    def _warm_for_reply(self) -> None:
        """Run after ``_build``, the agent already handed over: what only the first reply needs,
        done while the user types (or while the server thinks): the Markdown renderer its first
        text is drawn with."""
        if self.agent_if_ready() is None:
            return
        import mini_letta.repl.markdown_stream  # noqa: F401

    def show_notices(self) -> None:
        while self.above_prompt:
            self.console.print(self.above_prompt.pop(0))
        for text in self.options.notices.take():
            self.console.print(plain(text, "yellow"))

    def _notices_above_prompt(self, app) -> None:
        """What the start-up found out is said above the prompt as soon as it is known. Called from
        a render, in the prompt's own loop (nothing reaches into a loop from the start-up thread);
        a notice not shown here is shown after the next Enter."""
        if self._showing_notices or not app.is_running or app.is_done or not (self.options.notices.pending()
                                                                                or self.above_prompt):
            return
        self._showing_notices = True
        # Reset however it ends: an answered prompt cancels what it had not run yet.
        print_above(self.show_notices).add_done_callback(lambda _: setattr(self, "_showing_notices", False))

    def report_failure(self) -> None:
        """Say once, at the next Enter, why the agent could not start (a missing key, a bad flag...)."""
        if self._reported or not self.failed:
            return
        self._reported = True
        error = self.future.exception()
        reason = str(error) if isinstance(error, MiniLettaError) else f"{type(error).__name__}: {error}"
        self.console.print(plain(f"mini-letta could not start: {reason}", "red"))
        self.console.print("Fix that and start mini-letta again; /exit leaves. What you typed is in the history.")

    def _recap_resumed(self, loaded, path: Path) -> None:
        """Say what -c / -r resumed, above the prompt, once the start-up has loaded it."""
        from mini_letta.repl.commands.sessions import last_active
        from mini_letta.repl.views import resume_recap

        self.above_prompt.append(resume_recap(loaded, last_active(path), session_id=Path(path).stem))


