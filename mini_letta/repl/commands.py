"""Slash commands: a registry of name → function; each function's docstring is its help text."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from mini_letta.wording import counted

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost


@dataclass
class Command:
    name: str
    handler: Callable[["ReplHost", str], None]
    usage: str

    @property
    def help(self) -> str:
        return (self.handler.__doc__ or "").strip().splitlines()[0]


COMMANDS: dict[str, Command] = {}
ALIASES: dict[str, str] = {"quit": "exit", "tokens": "context"}


def command(name: str, usage: str = ""):
    def register(handler: Callable[["ReplHost", str], None]):
        COMMANDS[name] = Command(name, handler, usage or f"/{name}")
        return handler
    return register


def lookup(name: str) -> Command | None:
    return COMMANDS.get(ALIASES.get(name, name))


def listed(repl: "ReplHost | None") -> list:
    """The commands to offer (completion, /help): the built-in ones, then the MCP servers' prompts."""
    tools = getattr(repl.agent_if_ready() if repl is not None else None, "mcp", None)
    if tools is None:
        return list(COMMANDS.values())
    from mini_letta.mcp.prompts import prompt_commands

    return [*COMMANDS.values(), *prompt_commands(tools)]


def dispatch(repl: "ReplHost", line: str) -> None:
    name, _, argument = line[1:].partition(" ")
    found = lookup(name.strip().lower())
    if found is None:
        from mini_letta.repl.mcp_view import run_prompt_command
        from mini_letta.repl.views import plain

        if run_prompt_command(repl, name.strip(), argument.strip()):
            return
        skills = getattr(repl.agent(), "skills", None)
        if skills is not None and skills.find(name.strip()) is not None:
            repl.send(line)  # the loop brings the skill in ahead of the model's reply
            return
        repl.console.print(plain(f"Unknown command /{name}.", "red"), "Type /help for the list.")
        return
    found.handler(repl, argument.strip())


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
        from mini_letta.repl.views import percent_meaning, plain

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


@command("clear")
def clear_command(repl: "ReplHost", argument: str) -> None:
    """Start a new session with an empty context (the old one stays resumable)."""
    old = repl.agent().session
    repl.new_session()
    old_id = getattr(old, "id", None)
    from mini_letta.repl.views import plain

    # The id of a resumed session was read from its file: data, not markup.
    repl.console.print(plain("Started a new session." + (f" The previous one is `mini-letta --resume {old_id}`."
                                                         if old_id else "")))


@command("compact", "/compact [focus]")
def compact_command(repl: "ReplHost", argument: str) -> None:
    """Summarise older conversation now, optional focus; /compact --preview [focus] shows it first.

    The focus says what the summary must keep, e.g. /compact keep the failing test names."""
    first, _, rest = argument.partition(" ")
    if first == "--preview":
        from mini_letta.repl.compact_preview import run_preview

        run_preview(repl, rest.strip() or None)
        return
    repl.compact(argument or None)


@command("rewind")
def rewind_command(repl: "ReplHost", argument: str) -> None:
    """Go back to one of your messages: restore code, conversation or both, or summarize from there (Esc Esc)."""
    from mini_letta.repl.rewind import run_rewind

    run_rewind(repl)


@command("undo")
def undo_command(repl: "ReplHost", argument: str) -> None:
    """Undo what the last turn changed in files (code only; asks first)."""
    from mini_letta.repl.rewind import run_undo

    run_undo(repl)


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
        repl.edit_memory(words[1])
        return
    repl.console.print(memory_view(agent.memory))


@command("expand", "/expand [n]")
def expand_command(repl: "ReplHost", argument: str) -> None:
    """Show the latest tool output in full, in a pager (Ctrl-O does the same); /expand 2 the one before."""
    if argument and not argument.isdigit():
        repl.console.print("Usage: /expand [n], where n counts back from the latest tool output (1).")
        return
    repl.expand(int(argument or 1))


@command("trust")
def trust_command(repl: "ReplHost", argument: str) -> None:
    """Trust this folder: run the hooks in its .mini-letta/settings.json from now on."""
    from mini_letta import config
    from mini_letta.hooks import WORKSPACE_SETTINGS, load_hooks, trust

    agent = repl.agent()
    trust(config.home(), agent.workspace)
    agent.hooks = load_hooks(config.home(), agent.workspace)
    from mini_letta.repl.views import plain

    repl.console.print(plain(f"Trusted {agent.workspace}: hooks in {WORKSPACE_SETTINGS} run from now on "
                             f"({counted(len(agent.hooks.commands), 'hook command')} loaded in all)."))
    subagents = getattr(agent, "subagents", None)
    if subagents is not None:
        from mini_letta.subagents.catalog import load_catalog

        subagents.catalog.reload(load_catalog(config.home(), agent.workspace))
        for text in subagents.catalog.notices:
            repl.console.print(plain(text, "yellow"))
    from mini_letta.mcp import attach

    if attach(agent, config.home(), agent.workspace) is not None:
        mcp_command(repl, "")
    if agent.skills is not None and agent.skills.catalog.untrusted:
        skills_command(repl, "reload")


@command("skills", "/skills [reload]")
def skills_command(repl: "ReplHost", argument: str) -> None:
    """Show the skills: source, tokens of their line in the list and of their body, invoked; reload reads them again."""
    from mini_letta.app import register_skill_tool
    from mini_letta.repl.views import plain
    from mini_letta.skills.report import skills_report

    agent = repl.agent()
    skills = agent.skills
    if skills is None:
        repl.console.print(plain("Skills are not loaded in this session."))
        return
    if argument == "reload":
        for notice in skills.reload():
            repl.console.print(plain(notice, "yellow"))
        register_skill_tool(agent)
    elif argument:
        repl.console.print(plain(f"Unknown argument {argument!r}: /skills, or /skills reload.", "red"))
        return
    count = agent.budget.counter.count_text
    listed = skills.listing(agent.budget.window, count, compact=agent.compact_floor())
    for line in skills_report(skills.rows(agent.conversation.messages, listed, count), listed):
        repl.console.print(plain(line))


@command("agents")
def agents_command(repl: "ReplHost", argument: str) -> None:
    """List the subagent types the task tool can start: where each comes from, its tools and model."""
    from mini_letta.repl.views import plain
    from mini_letta.subagents.catalog import AGENTS_FOLDER, WORKSPACE_FOLDERS
    from mini_letta.subagents.listing import agents_text

    subagents = getattr(repl.agent(), "subagents", None)
    if subagents is None:
        repl.console.print("Subagents are not available in this session.")
        return
    repl.console.print(plain(agents_text(subagents.catalog)))
    from mini_letta import config

    folders = ", ".join(str(folder) for folder in WORKSPACE_FOLDERS)
    repl.console.print(plain(f"Agent files: {config.home() / AGENTS_FOLDER}, and {folders} of a trusted "
                             "workspace (Claude Code's format).", "dim"))


@command("mcp")
def mcp_command(repl: "ReplHost", argument: str) -> None:
    """Show the MCP servers: status, tools, tokens their definitions cost, deferred or loaded; their prompts."""
    from mini_letta.repl.mcp_view import mcp_view

    repl.console.print(mcp_view(getattr(repl.agent(), "mcp", None)))


@command("sandbox")
def sandbox_command(repl: "ReplHost", argument: str) -> None:
    """Show where commands run: the sandbox mode, what it lets them write, and why when there is none."""
    from mini_letta.repl.views import plain

    sandbox = repl.agent().toolbox.sandbox
    repl.console.print(plain(sandbox.status() if sandbox is not None else "Sandbox: off; every command asks."))


@command("add-dir", "/add-dir [DIR]")
def add_dir_command(repl: "ReplHost", argument: str) -> None:
    """Let the file tools read and write another folder, as the workspace; without DIR, list them."""
    from mini_letta.errors import ConfigError
    from mini_letta.repl.views import plain
    from mini_letta.trust.terminal_text import visible

    toolbox = repl.agent().toolbox
    if not argument.strip():
        added = toolbox.ws.added
        repl.console.print(plain("Added folders: " + ", ".join(visible(str(f)) for f in added) if added else
                                 "No folder added; /add-dir DIR lets the file tools read and write DIR too."))
        return
    folder = Path(argument.strip()).expanduser()
    try:
        added = toolbox.add_dir(folder if folder.is_absolute() else toolbox.workspace / folder)
    except ConfigError as error:
        repl.console.print(plain(str(error), "red"))
        return
    repl.console.print(plain(f"Added {visible(str(added))}: read_file, write_file, edit_file, grep and glob work "
                             "there as in the workspace, with the same approvals; commands in the sandbox may write "
                             "there as in the workspace. /rewind does not cover its files."))


@command("sessions")
def sessions_command(repl: "ReplHost", argument: str) -> None:
    """List the saved sessions of this folder, newest first (/resume picks one)."""
    repl.list_sessions()


@command("resume", "/resume [id]")
def resume_command(repl: "ReplHost", argument: str) -> None:
    """Go on with an earlier session of this folder: pick one from the list, or give its id (a prefix will do)."""
    repl.resume(argument or None)


@command("model", "/model [name]")
def model_command(repl: "ReplHost", argument: str) -> None:
    """Show the model, or switch to another of the same provider; the window and status bar follow."""
    repl.switch_model(None, argument or None)


@command("provider", "/provider [name [model]]")
def provider_command(repl: "ReplHost", argument: str) -> None:
    """Show the provider, or switch to openai, anthropic, ollama or demo (with its default or a given model)."""
    words = argument.split()
    if len(words) > 2:
        repl.console.print("Usage: /provider [name [model]]")
        return
    repl.switch_model(words[0] if words else None, words[1] if len(words) > 1 else None)
