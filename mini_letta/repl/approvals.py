"""The questions the agent asks during a turn, one key each: approvals, going on past the turn's
limit of model calls, and plan mode's plan; and the line said for a call a rule allowed."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text

from mini_letta.repl.one_key import ask_one_key
from mini_letta.repl.views import plain
from mini_letta.trust.terminal_text import visible, visible_command

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost


class Approvals:
    def __init__(self, repl: "ReplHost", yolo: bool = False):
        self.repl = repl
        self.yolo = yolo

    @contextlib.contextmanager
    def _asking(self):
        """The footer hidden and the turn's key reader paused while the question reads the terminal."""
        repl = self.repl
        if repl.events is not None:
            repl.events.pause()
        with repl.turn_keys.paused() if repl.turn_keys is not None else contextlib.nullcontext():
            yield

    def approve(self, call, summary: str, protected: str | None = None) -> bool:
        """Ask before a write or a command: y, n (or Esc), and "always" for the scope the
        permissions offer (shown before it is chosen); ``protected`` says why "always" is not offered."""
        if self.yolo:
            return True
        from mini_letta.repl.diffs import change_preview

        repl = self.repl
        if repl.events is not None:
            repl.events.pause()
        toolbox = repl.agent().toolbox
        change = change_preview(call, toolbox.ws.resolve)
        if change is not None:
            repl.console.print(change)
        repl.console.print(approval_request(call, summary))
        _notify(repl, f"mini-letta needs your permission to use {call.name}")
        reason = protected or toolbox.permissions.always_asks(call)
        scopes = [] if reason else toolbox.permissions.scopes(call)
        if reason:
            repl.console.print(plain(f"Asked every time, even after 'always': {reason}.", "yellow"))
        elif not scopes and call.name == "bash":
            repl.console.print(plain(f'No "always" for this command: {toolbox.permissions.no_scope_reason(call)}.',
                                     "dim"))
        elif not scopes and call.name == "read_file":
            repl.console.print(plain('No "always" for reading outside the workspace: /add-dir DIR opens a folder.',
                                     "dim"))
        # A line for each "always": on one line with yes and no they wrapped mid-phrase at 110 columns.
        choices = "".join(f"[{scope.key}] always for {scope.label}, this session\n" for scope in scopes)
        answers = {"y": "yes", "n": "no", **{scope.key: visible(f"always for {scope.label}") for scope in scopes}}
        with self._asking():
            key = ask_one_key(visible(choices + "[y]es · [n]o (Esc): "), answers, on_escape="n")
        for scope in scopes:
            if scope.key == key:
                toolbox.permissions.remember(scope)
        if key != "n" and repl.events is not None:
            repl.events.resume()  # the command runs now: the spinner says so, with its seconds
        return key != "n"

    def ask_to_go_on(self, steps: int) -> bool:
        """At the turn's limit of model calls: y goes on for as many again, n (or Esc) stops."""
        from mini_letta.wording import counted

        repl = self.repl
        with self._asking():
            repl.console.print(plain(f"This turn has made {counted(steps, 'model call')}, its limit (--max-turns "
                                     f"{repl.agent().max_steps}).", "yellow"))
            key = ask_one_key("Go on? [y]es · [n]o (Esc): ", {"y": "yes", "n": "no"}, on_escape="n")
        if key == "y" and repl.events is not None:
            repl.events.resume()
        return key == "y"

    def review_plan(self, plan: str):
        """``exit_plan_mode``: the plan shown as Markdown, then [a] approve with edits auto-accepted,
        [y] approve with each edit asked, [n] (or Esc) keep planning, with a line of feedback."""
        from rich.markdown import Markdown
        from rich.panel import Panel

        from mini_letta.permission_mode import ACCEPT_EDITS, DEFAULT
        from mini_letta.planning import PlanAnswer

        repl = self.repl
        answers = {"a": "yes, auto-accept edits", "y": "yes, approve each edit", "n": "no, keep planning"}
        with self._asking():
            # Markdown renders no Rich markup; controls in the model's text are shown, not obeyed.
            repl.console.print(Panel(Markdown(visible(plan)), title="Plan", title_align="left", border_style="cyan"))
            _notify(repl, "mini-letta has a plan for you to approve")
            key = ask_one_key("Carry out this plan? [a] yes, and auto-accept edits · [y] yes, and approve each "
                              "edit · [n] no, keep planning (Esc): ", answers, on_escape="n")
            feedback = ask_line("What should change? (Enter to say nothing) ") if key == "n" else ""
        if key != "n" and repl.events is not None:
            repl.events.resume()
        return PlanAnswer({"a": ACCEPT_EDITS, "y": DEFAULT}.get(key), feedback)

    def allowed_without_asking(self, call, reason: str) -> None:
        """A call a rule allowed: an edit still shows its diff, and every call says which rule."""
        from mini_letta.repl.diffs import change_preview

        repl = self.repl
        if repl.events is not None:
            repl.events.pause()
        change = change_preview(call, repl.agent().toolbox.ws.resolve)
        if change is not None:
            repl.console.print(change)
        repl.console.print(plain(f"Allowed without asking ({reason}).", "dim"))
        if repl.events is not None:
            repl.events.resume()


def _notify(repl, message: str) -> None:
    """Notification hooks (``permission_prompt``): the user is waited for."""
    hooks = getattr(repl.agent_if_ready(), "hooks", None)
    if hooks is not None:
        hooks.notify("permission_prompt", message)


def ask_line(message: str) -> str:
    """One line typed by the user (a prompt of its own, no history); Ctrl-C interrupts the turn."""
    from prompt_toolkit import PromptSession

    try:
        return PromptSession().prompt(message).strip()
    except EOFError:
        return ""


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
