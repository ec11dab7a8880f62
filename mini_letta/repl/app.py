"""The interactive REPL's prompt loop: read a line, run it (a command, ``!``, or a turn), repeat.

prompt_toolkit reads the input and draws the status bar, Rich prints the output. The agent is built
in the background (``startup.py``); each slash command's body lives in ``commands/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import ThreadedCompleter
from rich.console import Console
from rich.text import Text

from mini_letta import config
from mini_letta.app import CONFIGURE_HINT, Options, choose_provider
from mini_letta.errors import MiniLettaError
from mini_letta.repl import commands
from mini_letta.repl.approvals import Approvals
from mini_letta.repl.completion import SlashCompleter
from mini_letta.repl.history import RedactingFileHistory
from mini_letta.repl.prompt_keys import input_bindings
from mini_letta.repl.startup import Startup
from mini_letta.repl.status_bar import StatusBar
from mini_letta.repl.views import plain, short_tokens
from mini_letta.wording import counted


class Repl:
    def __init__(self, options: Options, console: Console | None = None):
        self.options = options
        self.console = console or Console(highlight=False)
        self.running = True
        self.approvals = Approvals(self, yolo=options.yolo)
        self.startup = Startup(options, self.console, self.approvals)
        self.status = StatusBar(self.startup, self.console)
        self.events = None  # the ReplEvents of the turn or compaction under way
        # The recent tool outputs in full, newest last, for Ctrl-O and /expand.
        self.outputs: list[tuple[str, str]] = []
        self.draft = ""
        self.turn_keys = None  # the TurnKeys of the turn under way: Esc interrupts, typing is kept
        self.sent_ahead: list[str | None] = []  # lines sent with Enter during a turn run next; None: Ctrl-D

    def agent(self):
        """The agent, waiting for the background start-up if needed (raises its error)."""
        return self.startup.agent()

    def agent_if_ready(self):
        return self.startup.agent_if_ready()

    def refresh_status(self) -> None:
        self.status.refresh()

    def status_line(self):
        return self.status.line()

    def percent_left(self) -> int | None:
        agent = self.agent_if_ready()
        return agent.context_state().percent_left if agent is not None else None

    def cycle_mode(self) -> None:
        """Shift+Tab at the prompt: the next permission mode, shown in the status bar."""
        self.options.permission_mode.cycle()
        self.refresh_status()

    def remember_output(self, call, outcome) -> None:
        from mini_letta.repl.commands.basic import keep_output

        keep_output(self, self.agent().toolbox.describe(call) if self.agent_if_ready() else call.name, outcome.text)

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> int:
        from mini_letta.repl.commands.basic import print_latest
        from mini_letta.repl.commands.sessions import resume

        home = config.private_folder(config.home())
        session = PromptSession(history=RedactingFileHistory(str(home / "history")),
                                completer=ThreadedCompleter(SlashCompleter(host=self)), complete_while_typing=True,
                                key_bindings=input_bindings(lambda: print_latest(self), rewind=True,
                                                            on_cycle_mode=self.cycle_mode),
                                bottom_toolbar=self.status.toolbar, refresh_interval=0.5)
        session.app.after_render += self.startup.start
        self._banner()
        if self.options.pick_session:
            self._guarded(lambda: resume(self, None))
        warned_exit = False
        while self.running:
            self._prepare_compaction()
            try:
                line = self._next_line(session)
            except KeyboardInterrupt:
                self._cancel_prepared()
                if warned_exit:
                    break
                warned_exit = True
                self.console.print("[dim]Press Ctrl-C again to exit, or Ctrl-D.[/dim]")
                continue
            except EOFError:
                break
            warned_exit = False
            self.startup.report_failure()
            self.startup.show_notices()
            if not line.strip():
                continue
            self._guarded(lambda: self._handle(line.strip()))
            self.startup.show_notices()
            self.refresh_status()
        self._cancel_prepared()
        self._stop_background_commands()
        self.console.print("[dim]Bye. Resume this session with `mini-letta --continue`.[/dim]")
        self.startup.shutdown()
        return 0

    def _stop_background_commands(self) -> None:
        """The session ends, and with it every command the model started in the background."""
        from mini_letta.toolbox.background import close_all

        stopped = close_all()
        if stopped:
            self.console.print(plain(f"Stopped {counted(stopped, 'background command')}.", "dim"))

    def _next_line(self, session) -> str:
        """A line sent during the last turn, shown as if typed at the prompt, else the prompt's."""
        if self.sent_ahead:
            line = self.sent_ahead.pop(0)
            if line is None:  # Ctrl-D pressed on an empty line during the turn
                raise EOFError
            self.console.print(Text.assemble("› ", plain(line)))
            return line
        line, self.draft = session.prompt("› ", default=self.draft), ""
        return line

    def _guarded(self, action: Callable[[], None]) -> None:
        try:
            action()
        except MiniLettaError as error:
            self.console.print(plain(str(error), "red"))
        except KeyboardInterrupt:  # e.g. while start-up was still finishing; the line is in the history
            self.console.print("[yellow]Cancelled.[/yellow]")

    def _handle(self, line: str) -> None:
        if line.startswith("/"):
            commands.dispatch(self, line)
        elif line.startswith("!"):
            from mini_letta.repl.commands.shell import run_user_command

            run_user_command(self, line[1:].strip())
        else:
            self.send(self._attach_files(self.agent(), line))

    def _attach_files(self, agent, line: str) -> str:
        """The message with the files it names with ``@`` attached, each said with its size."""
        from mini_letta.attachments import attach_mentions
        from mini_letta.toolbox.outcome import fit_tokens

        limit, count = agent.tool_output_tokens(), agent.budget.calibration.count_text
        attached = attach_mentions(line, agent.toolbox.ws, agent.tool_output_chars(),
                                   fit=lambda text: fit_tokens(text, limit, count, reader="read_file"))
        for problem in attached.problems:
            self.console.print(plain(problem, "yellow"))
        if attached.paths:
            tokens = agent.budget.calibration.count_text(attached.text) - agent.budget.calibration.count_text(line)
            self.console.print(plain(f"Attached {', '.join(attached.described())} (~{short_tokens(tokens)} tokens).",
                                     "yellow" if attached.partial else "dim"))
        return attached.text

    def _prepare_compaction(self) -> None:
        """The user is about to type: a good moment to prepare the next compaction's summary."""
        agent = self.agent_if_ready()
        if agent is not None and agent.prepare_compaction():
            self.refresh_status()

    def _cancel_prepared(self) -> None:
        agent = self.agent_if_ready()
        if agent is not None:
            agent.ahead.cancel()

    def _banner(self) -> None:
        workspace = Path.cwd()
        self.console.print(Text.assemble(("mini-letta", "bold"), " in ", plain(str(workspace)), " · /help for commands"))
        if choose_provider(self.options) == "demo" and self.options.provider is None:
            self.console.print(f"[yellow]{CONFIGURE_HINT}[/yellow] Type `help` to see what the demo model can do.")
        self.startup.show_notices()  # about the command line, before anything is typed

    def send(self, line: str) -> None:
        """Run a turn with ``line`` as the user's message (typed, or an MCP prompt's text)."""
        from mini_letta.cost import spend_line
        from mini_letta.loop.agent import TurnInterrupted
        from mini_letta.repl.events import ReplEvents
        from mini_letta.repl.turn_keys import TurnKeys

        agent = self.agent()
        events = self.events = ReplEvents(self)
        self.turn_keys = TurnKeys()
        subagents = getattr(agent, "subagents", None)
        if subagents is not None:
            subagents.listeners.append(events.subagent_progress)
        try:
            with self.turn_keys:
                result = agent.run_turn(line, events)
            if result.spend is not None and result.spend.calls:
                self.console.print(plain(spend_line(result.spend), "dim"))
        except TurnInterrupted:
            agent.ahead.cancel()
            events.close()
            self.console.print("[yellow]Interrupted.[/yellow] What was said so far is kept.")
        finally:
            events.close()
            if subagents is not None:
                subagents.listeners.remove(events.subagent_progress)
            self.events = None
            self.sent_ahead += self.turn_keys.sent
            self.draft, self.turn_keys = self.draft + self.turn_keys.typed, None


def run_repl(options: Options) -> None:
    code = Repl(options).run()
    if code:
        raise SystemExit(code)
