"""``!command``: the user runs a shell command in the workspace; command and output join the conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_letta.repl.commands.basic import keep_output
from mini_letta.repl.views import plain
from mini_letta.wording import counted

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost

SHOWN_COMMAND_LINES = 40


def run_user_command(repl: "ReplHost", command: str) -> None:
    from mini_letta.user_command import run_user_command as run

    if not command:
        repl.console.print("Type a shell command after !, e.g. !git status: it runs in the workspace and "
                           "its output goes into the conversation.")
        return
    outcome = run(repl.agent(), command)
    lines = outcome.text.splitlines() or ["(no output)"]
    repl.console.print(plain("\n".join(lines[:SHOWN_COMMAND_LINES]), "red" if outcome.is_error else ""))
    hidden = len(lines) - SHOWN_COMMAND_LINES
    if hidden > 0:
        repl.console.print(plain(f"… {counted(hidden, 'more line')}: Ctrl-O or /expand shows them all.", "dim"))
    keep_output(repl, f"! {command}", outcome.text)
    repl.console.print(plain("Command and output are now in the conversation; the model reads them "
                             "with your next message.", "dim"))
    repl.refresh_status()
