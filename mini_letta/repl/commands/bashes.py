"""/bashes: the commands the model started in the background (bash with run_in_background), and
``/bashes kill ID`` to stop one (toolbox/background.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from mini_letta.repl.commands.registry import command
from mini_letta.repl.views import plain
from mini_letta.trust.terminal_text import one_line

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost

USAGE = "/bashes [kill <id>]"


@command("bashes", USAGE)
def bashes_command(repl: "ReplHost", argument: str) -> None:
    """List the model's background commands; /bashes kill ID stops one."""
    jobs = repl.agent().toolbox.background
    words = argument.split()
    if words and words[0] == "kill" and len(words) == 2:
        from mini_letta.toolbox.outcome import ToolError

        try:
            outcome = jobs.kill(words[1])
        except ToolError as error:
            repl.console.print(plain(str(error), "red"))
            return
        repl.console.print(plain(outcome.text, "red" if outcome.is_error else "green"))
        return
    if words:
        repl.console.print(plain(f"Usage: {USAGE}", "red"))
        return
    listing = jobs.listing()
    if not listing:
        repl.console.print(plain("No background commands: the model has started none (bash with "
                                 "run_in_background) in this session.", "dim"))
        return
    running = sum(view.state == "running" for view in listing)
    repl.console.print(plain(f"Background commands: {running} of {len(listing)} running", "bold"))
    for view in listing:
        style = "green" if view.state == "running" else "dim"
        repl.console.print(Text.assemble("  ", (view.shell_id, "bold"), "  ", (view.state, style),
                                         f"  {view.seconds:.0f} s  ", one_line(view.command)[:120]))
    if running:
        repl.console.print(plain("Stop one with /bashes kill <id>; all are stopped when you leave.", "dim"))
