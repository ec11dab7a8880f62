"""/help, /exit, /context, /cost, /memory and /expand (Ctrl-O): views of the session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_letta.repl.commands.registry import command, listed
from mini_letta.repl.views import plain

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost

MAX_KEPT_OUTPUTS = 20

@command("help")
def help_command(repl: "ReplHost", argument: str) -> None:
    """Show the commands and keys."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(show_header=False, box=None, padding=(0, 2))
    for entry in listed(repl):
        table.add_row(f"[bold]{escape(entry.usage)}[/bold]", escape(entry.help))
    repl.console.print(table)
    repl.console.print("[dim]Enter sends · Alt-Enter new line · Esc or Ctrl-C cancels a reply (Ctrl-C twice at an "
                       "empty prompt exits) · Esc Esc at an empty prompt rewinds · Ctrl-O shows the latest tool "
                       "output in full · Ctrl-D exits[/dim]")
    repl.console.print("[dim]@path attaches a file (Tab completes the path) · !command runs a shell command yourself "
                       "and puts its output in the conversation[/dim]")
    agent = repl.agent_if_ready()
    if agent is not None:
        from mini_letta.repl.views import percent_meaning

        repl.console.print(plain(percent_meaning(agent.budget.auto_compact, agent.budget.threshold), "dim"))
        repl.console.print(plain("In the status bar, window: served = the server said its size; set = "
                                 "CODEAGENT_MAX_CONTEXT_TOKENS; learned = from a server's rejection; published = the "
                                 "model's published size; guessed = not known, assumed (the size shows as ~…?).",
                                 "dim"))
    if repl.agent_if_ready() is not None and repl.agent_if_ready().provider.name == "demo":
        repl.console.print("[dim]Demo model: type `help` (without the slash) to see what it can do.[/dim]")


@command("exit")
def exit_command(repl: "ReplHost", argument: str) -> None:
    """Leave mini-letta (the session stays resumable with --continue)."""
    repl.running = False


@command("context")
def context_command(repl: "ReplHost", argument: str) -> None:
    """Show where the context tokens go, and the usage of recent turns."""
    from mini_letta.repl.views import context_view

    repl.console.print(context_view(repl.agent()))


@command("cost")
def cost_command(repl: "ReplHost", argument: str) -> None:
    """Show the tokens and cost of this session's model calls, and how much came from the prompt cache."""
    from mini_letta.repl.views import cost_view

    repl.console.print(cost_view(repl.agent()))


@command("memory", "/memory [edit <label>]")
def memory_command(repl: "ReplHost", argument: str) -> None:
    """Show the core memory blocks and their sizes; /memory edit <label> changes one."""
    from mini_letta.repl.views import memory_view

    agent = repl.agent()
    words = argument.split()
    if words and words[0] == "edit":
        if len(words) != 2:
            repl.console.print("Usage: /memory edit <label>")
            return
        edit_memory(repl, words[1])
        return
    repl.console.print(memory_view(agent.memory))


def edit_memory(repl: "ReplHost", label: str) -> None:
    from mini_letta.repl.editing import edit_text

    memory = repl.agent().memory
    if label not in memory.blocks:
        repl.console.print(plain(f"No block {label!r}; blocks: {', '.join(memory.blocks)}."))
        return
    value = edit_text(memory.blocks[label].value)
    if value is None:
        return
    try:
        memory.set_value(label, value)
    except ValueError as error:
        repl.console.print(plain(str(error), "red"))
        return
    repl.console.print(plain(f"Saved block {label!r} ({len(value):,}/{memory.blocks[label].limit:,} chars)."))
    repl.refresh_status()


@command("expand", "/expand [n]")
def expand_command(repl: "ReplHost", argument: str) -> None:
    """Show the latest tool output in full, in a pager (Ctrl-O prints it above the prompt); /expand 2 the one before."""
    if argument and not argument.isdigit():
        repl.console.print("Usage: /expand [n], where n counts back from the latest tool output (1).")
        return
    expand(repl, int(argument or 1))


def expand(repl: "ReplHost", which: int = 1) -> None:
    """Show the ``which``-th latest tool output in full, in the pager."""
    outputs = repl.outputs
    if not outputs:
        repl.console.print("No tool output yet.")
        return
    if not 1 <= which <= len(outputs):
        repl.console.print(f"There are {len(outputs)} recent tool outputs; /expand 1 is the latest.")
        return
    from mini_letta.repl.pager import SystemPager

    title, text = outputs[-which]
    with repl.console.pager(SystemPager(), styles=True):
        repl.console.print(plain(f"⏺ {title}", "cyan"))
        repl.console.print(plain(text))


def print_latest(repl: "ReplHost") -> None:
    """Ctrl-O: the latest output in full, printed above the prompt, which keeps what was typed.
    No pager: one would take the keys typed next for the prompt."""
    if not repl.outputs:
        repl.console.print("No tool output yet.")
        return
    title, text = repl.outputs[-1]
    repl.console.print(plain(f"⏺ {title}", "cyan"))
    repl.console.print(plain(text))
    repl.console.print(plain("(the latest output in full; /expand pages it)", "dim"))


def keep_output(repl: "ReplHost", title: str, text: str) -> None:
    """Keep a tool's or a command's full output for Ctrl-O and /expand (the latest few)."""
    repl.outputs.append((title, text))
    del repl.outputs[:-MAX_KEPT_OUTPUTS]
