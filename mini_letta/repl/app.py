"""The interactive REPL: prompt_toolkit for input and the status bar, Rich for output.

The prompt is drawn at once; the agent (and with it the provider SDK, which is slow to import, and
the tokenizer, which takes about a second to load) is built in a background thread that starts once
the prompt is on the screen, so the two never compete for the interpreter while it is being drawn.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app, run_in_terminal
from prompt_toolkit.completion import Completer, Completion, ThreadedCompleter
from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings
from rich.console import Console, Group
from rich.text import Text

from mini_letta import config
from mini_letta.app import CONFIGURE_HINT, Options, build_agent, choose_provider
from mini_letta.errors import AuthenticationError, MiniLettaError
from mini_letta.repl import commands
from mini_letta.trust.redact import warm as warm_redaction
from mini_letta.repl.history import RedactingFileHistory
from mini_letta.repl.views import (LEVEL_TOOLBAR, STATUS_SEPARATOR, fit_status, plain, short_tokens, status_fields,
                                   status_text)
from mini_letta.trust.terminal_text import visible, visible_command
from mini_letta.wording import counted

MAX_KEPT_OUTPUTS = 20
PATHS_REFRESH_SECONDS = 5.0
MAX_PATH_COMPLETIONS = 50
SHOWN_COMMAND_LINES = 40
RESUME_CHOICES = 10


class SlashCompleter(Completer):
    """Slash commands at the start of the line; workspace paths after ``@`` anywhere."""

    def __init__(self, workspace: Path | None = None, host=None):
        self.workspace = workspace or Path.cwd()
        self.host = host  # the REPL, whose agent's MCP servers may offer prompts as commands
        self._paths: list[str] = []
        self._listed_at = float("-inf")

    def get_completions(self, document, complete_event):
        text = document.text_before_cursor
        word = text.split()[-1] if text and not text[-1].isspace() else ""
        if word.startswith("@"):
            yield from self._path_completions(word)
            return
        if not text.startswith("/") or " " in text:
            return
        for entry in commands.listed(self.host):
            if entry.name.startswith(text[1:]):
                yield Completion("/" + entry.name, start_position=-len(text), display_meta=entry.help)

    def _path_completions(self, word: str):
        import time

        from mini_letta.attachments import workspace_paths

        # Listed again at most every few seconds: files come and go while the session runs.
        if time.monotonic() - self._listed_at > PATHS_REFRESH_SECONDS:
            self._paths, self._listed_at = workspace_paths(self.workspace), time.monotonic()
        typed = word[1:]
        starts = [p for p in self._paths if p.startswith(typed)]
        inside = [p for p in self._paths if typed and typed in p and not p.startswith(typed)]
        for path in (starts + inside)[:MAX_PATH_COMPLETIONS]:
            yield Completion("@" + path, start_position=-len(word), display=visible(path))


class Repl:
    def __init__(self, options: Options, console: Console | None = None):
        self.options = options
        self.console = console or Console(highlight=False)
        self.running = True
        self._status_cache: str | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mini-letta-start")
        self._agent_future: Future | None = None
        self._startup_reported = False
        self._showing_notices = False
        # What the start-up has to say that is not a line of text (the recap of a resumed session),
        # shown above the prompt with the notices; appended by the start-up thread.
        self._above_prompt: list = []
        self.events = None  # the ReplEvents of the turn or compaction under way
        # The recent tool outputs in full, newest last, for Ctrl-O and /expand.
        self.outputs: list[tuple[str, str]] = []
        self.draft = ""
        self.turn_keys = None  # the TurnKeys of the turn under way: Esc interrupts, typing is kept
        self.sent_ahead: list[str | None] = []  # lines sent with Enter during a turn run next; None: Ctrl-D

    # -- the agent -------------------------------------------------------------------------------
    def start_agent(self, sender=None) -> Future:
        """Start building the agent in the background (once); every render of the prompt calls this,
        with the prompt's application as ``sender``."""
        if self._agent_future is None:
            self._agent_future = self._executor.submit(self._build_agent)
        elif sender is not None and self._agent_future.done():
            self._notices_above_prompt(sender)
        return self._agent_future

    def _notices_above_prompt(self, app) -> None:
        """What the start-up found out (the server's model, a guessed window, a template without
        tools) is said above the prompt as soon as it is known, not at the next Enter.

        Called from a render, in the prompt's own loop: the status bar redraws every half second,
        so nothing has to reach into a loop from the start-up thread (the loop of a prompt that was
        answered meanwhile is closed). A notice not shown here is shown after the next Enter."""
        if self._showing_notices or not app.is_running or app.is_done or not (config.has_notices()
                                                                                or self._above_prompt):
            return
        self._showing_notices = True
        # Reset however it ends: an answered prompt cancels what it had not run yet.
        run_in_terminal(self._show_notices).add_done_callback(lambda _: setattr(self, "_showing_notices", False))

    def _build_agent(self):
        agent = build_agent(self.options, self.approve, on_resumed=self._recap_resumed)
        agent.toolbox.permissions.on_allowed = self.allowed_without_asking
        # Loaded here rather than by the first status-bar render or the first reply, which would freeze the prompt.
        agent.budget.counter.warm()
        # The secret detector is imported on first use (about 0.4 s): not at the first Enter.
        warm_redaction()
        # Nor the SDK's reply models, built on its first reply (the demo model has none). Only an
        # optimisation: whatever goes wrong in it, the first reply builds them as it always did.
        try:
            getattr(agent.provider, "warm", lambda: None)()
        except Exception:  # noqa: BLE001
            pass
        import mini_letta.repl.events  # noqa: F401

        return agent

    def agent(self):
        """The agent, waiting for the background start-up if needed (raises its error)."""
        return self.start_agent().result()

    def agent_if_ready(self):
        future = self._agent_future
        if future is not None and future.done() and future.exception() is None:
            return future.result()
        return None

    def new_session(self) -> None:
        from mini_letta.sessions.store import SessionWriter

        agent = self.agent()
        previous = agent.session
        agent.reset(SessionWriter.create(config.home(), agent.workspace, agent.provider.name, agent.provider.model))
        if previous is not None:
            previous.close()  # and with it the lock: another process may resume it now
        self.refresh_status()

    # -- sessions and models ---------------------------------------------------------------------
    def list_sessions(self) -> None:
        from mini_letta.sessions.listing import list_sessions, session_table

        summaries = list_sessions(config.home(), self.agent().workspace)
        if not summaries:
            self.console.print("No saved sessions in this folder yet.")
            return
        self.console.print(session_table(summaries, width=self.console.width, home=config.home()))

    def resume(self, session_id: str | None) -> None:
        from mini_letta.app import resume_into
        from mini_letta.repl.session_busy import choose
        from mini_letta.repl.views import resume_recap
        from mini_letta.sessions.lock import SessionBusyError
        from mini_letta.sessions.listing import find_session

        agent = self.agent()
        path = find_session(config.home(), session_id) if session_id else self._pick_session(agent)
        if path is None:
            return
        if agent.session is not None and Path(path) == Path(agent.session.path):
            self.console.print("That is the session you are in.")
            return
        try:
            loaded = resume_into(agent, path)
        except SessionBusyError as busy:
            choice = choose(self.console, busy)
            if choice is None:
                self.console.print("Nothing resumed.")
                return
            loaded = resume_into(agent, path, fork=choice.fork, lock=choice.lock)
        self.outputs.clear()
        self.refresh_status()
        self.console.print(resume_recap(loaded, _last_active(path)))

    def _pick_session(self, agent) -> Path | None:
        from mini_letta.sessions.listing import list_sessions, session_table

        current = Path(agent.session.path) if agent.session is not None else None
        summaries = [s for s in list_sessions(config.home(), agent.workspace) if Path(s.path) != current]
        if not summaries:
            self.console.print("No other saved sessions in this folder yet.")
            return None
        shown = summaries[:RESUME_CHOICES]
        self.console.print(session_table(shown, width=self.console.width, home=config.home(), numbered=True))
        try:
            typed = PromptSession().prompt("Resume which? A number or an id (Enter cancels): ").strip()
        except (KeyboardInterrupt, EOFError):
            typed = ""
        if not typed:
            self.console.print("Nothing resumed.")
            return None
        if typed.isdigit() and 1 <= int(typed) <= len(shown):
            return Path(shown[int(typed) - 1].path)
        from mini_letta.sessions.listing import find_session

        return find_session(config.home(), typed)

    def switch_model(self, provider_name: str | None, model: str | None) -> None:
        from mini_letta.app import switch_provider
        from mini_letta.context import should_compact
        from mini_letta.providers import create_provider

        agent = self.agent()
        current = agent.provider
        if provider_name is None and model is None:
            self.console.print(Text.assemble("Using ", plain(f"{current.name}:{current.model}", "bold"),
                                             f" · window {agent.budget.window:,} tokens, compaction at "
                                             f"{agent.budget.threshold:,}. /model NAME or /provider NAME changes it."))
            return
        name = (provider_name or current.name).lower()
        if name == "demo" and provider_name is None:
            self.console.print("/model does not apply to the offline demo model: it has no other models. "
                               "Use /provider openai, anthropic or ollama (with its key) for a real one.")
            return
        base_url = getattr(current, "base_url", None) if name == current.name else None
        try:
            provider = create_provider(name, model, base_url)
        except AuthenticationError as error:
            if not getattr(error, "key_env", None):
                raise
            self.console.print(plain(f"No API key for {name}: set {error.key_env} in your shell and start mini-letta "
                                     f"again to use it. Still using {current.name}:{current.model}.", "yellow"))
            return
        before = agent.budget.window
        switch_provider(agent, provider, self.options.compact_at)
        self.refresh_status()
        state = agent.context_state()
        change = "" if state.window == before else f" (was {short_tokens(before)})"
        self.console.print(Text.assemble("Now using ", plain(f"{provider.name}:{provider.model}", "bold"),
                                         f" · window {short_tokens(state.window)}{change}, compaction at "
                                         f"{short_tokens(agent.budget.threshold)} · {state.percent_left}% context left"))
        if agent.budget.auto_compact and should_compact(state.tokens, agent.budget.threshold_window):
            self.console.print(plain(f"The conversation ({short_tokens(state.tokens)} tokens) is over the new "
                                     "window's compaction threshold: compacting now.", "yellow"))
            self.compact(None)

    def compact(self, focus: str | None) -> None:
        from mini_letta.repl.events import ReplEvents

        agent = self.agent()
        events = self.events = ReplEvents(self)
        try:
            agent.compact_now(focus, events)
        except MiniLettaError as error:
            self.console.print(plain(str(error), "yellow"))
        except KeyboardInterrupt:
            self.console.print("[yellow]Compaction cancelled; nothing was changed.[/yellow]")
        finally:
            events.close()
            self.events = None
        self.refresh_status()

    def edit_memory(self, label: str) -> None:
        agent = self.agent()
        memory = agent.memory
        if label not in memory.blocks:
            self.console.print(plain(f"No block {label!r}; blocks: {', '.join(memory.blocks)}."))
            return
        value = self.edit_text(memory.blocks[label].value)
        if value is None:
            return
        try:
            memory.set_value(label, value)
        except ValueError as error:
            self.console.print(plain(str(error), "red"))
            return
        self.console.print(plain(f"Saved block {label!r} ({len(value):,}/{memory.blocks[label].limit:,} chars)."))
        self.refresh_status()

    def edit_text(self, initial: str) -> str | None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            try:
                return PromptSession().prompt("new value (Alt-Enter for a new line): ", default=initial,
                                              multiline=False, key_bindings=_input_bindings())
            except (KeyboardInterrupt, EOFError):
                return None
        with tempfile.NamedTemporaryFile("w+", suffix=".md", delete=False) as handle:
            handle.write(initial)
            path = handle.name
        try:
            subprocess.run(f'{editor} "{path}"', shell=True, check=False)
            return Path(path).read_text(encoding="utf-8")
        finally:
            os.unlink(path)

    def run_user_command(self, command: str) -> None:
        """``!command``: run it in the workspace, show its output, and put both in the conversation."""
        from mini_letta.user_command import run_user_command

        if not command:
            self.console.print("Type a shell command after !, e.g. !git status: it runs in the workspace and "
                               "its output goes into the conversation.")
            return
        outcome = run_user_command(self.agent(), command)
        lines = outcome.text.splitlines() or ["(no output)"]
        self.console.print(plain("\n".join(lines[:SHOWN_COMMAND_LINES]), "red" if outcome.is_error else ""))
        hidden = len(lines) - SHOWN_COMMAND_LINES
        if hidden > 0:
            self.console.print(plain(f"… {counted(hidden, 'more line')}: Ctrl-O or /expand "
                                     "shows them all.", "dim"))
        self.outputs.append((f"! {command}", outcome.text))
        del self.outputs[:-MAX_KEPT_OUTPUTS]
        self.console.print(plain("Command and output are now in the conversation; the model reads them "
                                 "with your next message.", "dim"))
        self.refresh_status()

    # -- tool outputs ----------------------------------------------------------------------------
    def remember_output(self, call, outcome) -> None:
        title = self.agent().toolbox.describe(call) if self.agent_if_ready() else call.name
        self.outputs.append((title, outcome.text))
        del self.outputs[:-MAX_KEPT_OUTPUTS]

    def expand(self, which: int = 1) -> None:
        """Show the ``which``-th latest tool output in full, in the pager."""
        if not self.outputs:
            self.console.print("No tool output yet.")
            return
        if not 1 <= which <= len(self.outputs):
            self.console.print(f"There are {len(self.outputs)} recent tool outputs; /expand 1 is the latest.")
            return
        from mini_letta.repl.pager import SystemPager

        title, text = self.outputs[-which]
        with self.console.pager(SystemPager(), styles=True):
            self.console.print(plain(f"⏺ {title}", "cyan"))
            self.console.print(plain(text))

    def percent_left(self) -> int | None:
        agent = self.agent_if_ready()
        return agent.context_state().percent_left if agent is not None else None

    # -- approval --------------------------------------------------------------------------------
    def approve(self, call, summary: str, protected: str | None = None) -> bool:
        """Ask before a write or a command, one key: y, n (or Esc), and "always" for the scope the
        permissions offer (the command's prefix, the file, the workspace), shown before it is chosen.
        ``protected`` (or another always-ask reason of the permissions) says why "always" is not
        offered: a file that changes what runs (toolbox/protected.py)."""
        if self.options.yolo:
            return True
        if self.events is not None:
            self.events.pause()
        from mini_letta.repl.diffs import change_preview
        from mini_letta.repl.one_key import ask_one_key

        toolbox = self.agent().toolbox
        change = change_preview(call, toolbox.ws.resolve)
        if change is not None:
            self.console.print(change)
        self.console.print(approval_request(call, summary))
        reason = protected or toolbox.permissions.always_asks(call)
        scopes = [] if reason else toolbox.permissions.scopes(call)
        if reason:
            self.console.print(plain(f"Asked every time, even after 'always': {reason}.", "yellow"))
        elif not scopes and call.name == "bash":
            self.console.print(plain(f'No "always" for this command: {toolbox.permissions.no_scope_reason(call)}.',
                                     "dim"))
        elif not scopes and call.name == "read_file":
            self.console.print(plain('No "always" for reading outside the workspace: /add-dir DIR opens a folder.',
                                     "dim"))
        # A line for each "always": on one line with yes and no they wrapped mid-phrase at 110 columns.
        choices = "".join(f"[{scope.key}] always for {scope.label}, this session\n" for scope in scopes)
        answers = {"y": "yes", "n": "no", **{scope.key: visible(f"always for {scope.label}") for scope in scopes}}
        with self.turn_keys.paused() if self.turn_keys is not None else contextlib.nullcontext():
            key = ask_one_key(visible(choices + "[y]es · [n]o (Esc): "), answers, on_escape="n")
        for scope in scopes:
            if scope.key == key:
                toolbox.permissions.remember(scope)
        if key != "n" and self.events is not None:
            self.events.resume()  # the command runs now: the spinner says so, with its seconds
        return key != "n"

    def ask_to_go_on(self, steps: int) -> bool:
        """At the turn's limit of model calls: y goes on for as many again, n (or Esc) stops."""
        from mini_letta.repl.one_key import ask_one_key

        if self.events is not None:
            self.events.pause()
        from mini_letta.wording import counted

        self.console.print(plain(f"This turn has made {counted(steps, 'model call')}, its limit (--max-turns "
                                 f"{self.agent().max_steps}).", "yellow"))
        with self.turn_keys.paused() if self.turn_keys is not None else contextlib.nullcontext():
            key = ask_one_key("Go on? [y]es · [n]o (Esc): ", {"y": "yes", "n": "no"}, on_escape="n")
        if key == "y" and self.events is not None:
            self.events.resume()
        return key == "y"

    def allowed_without_asking(self, call, reason: str) -> None:
        """A call a rule allowed: an edit still shows its diff, and every call says which rule."""
        from mini_letta.repl.diffs import change_preview

        if self.events is not None:
            self.events.pause()
        change = change_preview(call, self.agent().toolbox.ws.resolve)
        if change is not None:
            self.console.print(change)
        self.console.print(plain(f"Allowed without asking ({reason}).", "dim"))
        if self.events is not None:
            self.events.resume()

    # -- the status bar --------------------------------------------------------------------------
    def refresh_status(self) -> None:
        self._status_cache = None

    def toolbar(self, width: int | None = None):
        """The bottom bar: "N% context left", model, tokens/window, coloured by level; fields are
        dropped by priority when the terminal is narrow."""
        agent = self.agent_if_ready()
        if agent is None:
            if self._agent_future is not None and self._agent_future.done():
                return [("fg:ansired", "start-up failed: press Enter to see why")]
            return [("fg:ansigray", "starting…")]
        # A summary prepared in the background becomes ready without any key being pressed.
        if self._status_cache is None or agent.ahead.ready != any(f[0] == "ahead" for f in self._status_cache):
            self._status_cache = status_fields(agent)
        if width is None:
            width = get_app().output.get_size().columns
        fragments = []
        for name, text, level in fit_status(self._status_cache, width - 1):
            if fragments:
                fragments.append(("", STATUS_SEPARATOR))
            fragments.append((LEVEL_TOOLBAR[level] if level else "", visible(text)))
        return fragments

    def status_line(self):
        """The status bar as Rich text, for the footer shown during a turn."""
        agent = self.agent_if_ready()
        if agent is None:
            return status_text([])
        self._status_cache = status_fields(agent)
        return status_text(fit_status(self._status_cache, self.console.width - 1))

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> int:
        home = config.private_folder(config.home())
        session = PromptSession(history=RedactingFileHistory(str(home / "history")),
                                completer=ThreadedCompleter(SlashCompleter(host=self)),
                                complete_while_typing=True, key_bindings=_input_bindings(self.expand, rewind=True),
                                bottom_toolbar=self.toolbar, refresh_interval=0.5)
        session.app.after_render += self.start_agent
        self._banner()
        if self.options.pick_session:
            self._guarded(lambda: self.resume(None))
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
            self._report_startup_failure()
            self._show_notices()
            if not line.strip():
                continue
            self._guarded(lambda: self._handle(line.strip()))
            self._show_notices()
            self.refresh_status()
        self._cancel_prepared()
        self.console.print("[dim]Bye. Resume this session with `mini-letta --continue`.[/dim]")
        self._executor.shutdown(wait=False, cancel_futures=True)
        return 0

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

    def _attach_files(self, agent, line: str) -> str:
        """The message with the files it names with ``@`` attached, each said with its size."""
        from mini_letta.attachments import attach_mentions

        attached = attach_mentions(line, agent.workspace, agent.tool_output_chars())
        for problem in attached.problems:
            self.console.print(plain(problem, "yellow"))
        if attached.paths:
            tokens = agent.budget.count_text_calibrated(attached.text) - agent.budget.count_text_calibrated(line)
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

    def _show_notices(self) -> None:
        while self._above_prompt:
            self.console.print(self._above_prompt.pop(0))
        for text in config.take_notices():
            self.console.print(plain(text, "yellow"))

    def _report_startup_failure(self) -> None:
        """Say once, at the next Enter, why the agent could not start (a missing key, a bad flag...)."""
        future = self._agent_future
        if self._startup_reported or future is None or not future.done() or future.exception() is None:
            return
        self._startup_reported = True
        error = future.exception()
        reason = str(error) if isinstance(error, MiniLettaError) else f"{type(error).__name__}: {error}"
        self.console.print(plain(f"mini-letta could not start: {reason}", "red"))
        self.console.print("Fix that and start mini-letta again; /exit leaves. What you typed is in the history.")

    def _banner(self) -> None:
        workspace = Path.cwd()
        self.console.print(Text.assemble(("mini-letta", "bold"), " in ", plain(str(workspace)), " · /help for commands"))
        if choose_provider(self.options) == "demo" and self.options.provider is None:
            self.console.print(f"[yellow]{CONFIGURE_HINT}[/yellow] Type `help` to see what the demo model can do.")
        self._show_notices()  # about the command line, before anything is typed

    def _recap_resumed(self, loaded, path: Path) -> None:
        """Say what -c / -r resumed, above the prompt, once the start-up has loaded it: the prompt
        is drawn first, however long the history (a failure is the start-up's to report)."""
        from mini_letta.repl.views import resume_recap

        self._above_prompt.append(resume_recap(loaded, _last_active(path), session_id=Path(path).stem))

    def _handle(self, line: str) -> None:
        if line.startswith("/"):
            commands.dispatch(self, line)
            return
        if line.startswith("!"):
            self.run_user_command(line[1:].strip())
            return
        self.send(self._attach_files(self.agent(), line))

    def send(self, line: str) -> None:
        """Run a turn with ``line`` as the user's message (typed, or an MCP prompt's text)."""
        from mini_letta.loop.agent import TurnInterrupted
        from mini_letta.cost import spend_line
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


def approval_request(call, summary: str):
    """What the user is asked to allow. A command is shown whole, wrapped and never cut, with its
    controls and easily missed spaces made visible: what runs is exactly what was read."""
    from rich.padding import Padding

    if call.name == "bash":
        try:
            command = call.parse_arguments().get("command")
        except ValueError:
            command = None
        if isinstance(command, str):
            return Group(Text.assemble(("Allow", "bold yellow"), " bash to run this command?"),
                         Padding(Text(visible_command(command), style="bold"), (0, 0, 0, 2)))
    # The summaries say what will happen ("write 1 line to a.py", "run the MCP tool t of the server s"):
    # asked as "Allow mini-letta to …" they read as a question, not "Allow run the MCP tool …".
    return Text.assemble(("Allow", "bold yellow"), " mini-letta to ", plain(summary), "?")


def _input_bindings(on_expand: Callable[[], None] | None = None, rewind: bool = False) -> KeyBindings:
    bindings = KeyBindings()

    if rewind:
        # No timing of ours: prompt_toolkit holds a trailing Esc 0.5 s for the rest of a sequence,
        # then the first Esc 1 s for the second, so both Escs in one read or about a second apart
        # open it (tests/test_turn_keys_pty.py); Esc Esc followed by text is two Escs and the text.
        @bindings.add("escape", "escape", filter=Condition(lambda: not get_app().current_buffer.text))
        def _rewind(event):
            event.app.exit(result="/rewind")

    @bindings.add("escape", "enter")
    def _newline(event):
        event.current_buffer.insert_text("\n")

    if on_expand is not None:
        @bindings.add("c-o")
        def _expand(event):
            # Above the prompt, which keeps what was typed so far.
            run_in_terminal(on_expand)

    return bindings


def _last_active(path: Path) -> str:
    import datetime

    try:
        return datetime.datetime.fromtimestamp(Path(path).stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    except OSError:
        return ""


def run_repl(options: Options) -> None:
    code = Repl(options).run()
    if code:
        raise SystemExit(code)
