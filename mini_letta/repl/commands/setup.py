"""/trust, /skills, /agents, /mcp, /sandbox and /add-dir: what this folder lets mini-letta load and touch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mini_letta.repl.commands.registry import command
from mini_letta.wording import counted

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost


@command("trust")
def trust_command(repl: "ReplHost", argument: str) -> None:
    """Trust this folder: run the hooks in its .mini-letta/settings.json from now on."""
    from mini_letta import config
    from mini_letta.hooks import WORKSPACE_SETTINGS, trust

    agent = repl.agent()
    trust(config.home(), agent.workspace)
    agent.hooks.reload(config.home(), agent.workspace, agent.say)
    from mini_letta.repl.views import plain

    repl.console.print(plain(f"Trusted {agent.workspace}: hooks in {WORKSPACE_SETTINGS} run from now on "
                             f"({counted(len(agent.hooks.commands), 'hook command')} loaded in all)."))
    subagents = getattr(agent, "subagents", None)
    if subagents is not None:
        from mini_letta.subagents.catalog import load_catalog

        subagents.catalog.reload(load_catalog(config.home(), agent.workspace))
        for text in subagents.catalog.notices:
            repl.console.print(plain(text, "yellow"))
    # Waited for here: the table below is what /trust answers.
    if agent.mcp is not None and agent.mcp.restart(wait=True):
        mcp_command(repl, "")
    # Read again whatever the start saw: a skill written into the folder since is offered too.
    if agent.skills is not None:
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
    listed = skills.listing(agent.budget.window, count, compact=agent.prompt.compact_floor())
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
