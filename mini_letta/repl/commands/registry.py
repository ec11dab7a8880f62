"""The slash-command registry: name → function; a function's docstring is its help text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

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
# /help's order; the commands register from several modules.
ORDER = ("help", "exit", "clear", "compact", "rewind", "undo", "context", "cost", "memory", "todos", "bashes", "expand", "trust",
         "skills", "agents", "mcp", "sandbox", "add-dir", "sessions", "resume", "model", "provider")


def command(name: str, usage: str = ""):
    def register(handler: Callable[["ReplHost", str], None]):
        COMMANDS[name] = Command(name, handler, usage or f"/{name}")
        return handler
    return register


def put_in_order() -> None:
    """Once every module has registered: ``COMMANDS`` in /help's order."""
    ranked = sorted(COMMANDS.values(), key=lambda c: ORDER.index(c.name) if c.name in ORDER else len(ORDER))
    COMMANDS.clear()
    COMMANDS.update((c.name, c) for c in ranked)


def lookup(name: str) -> Command | None:
    return COMMANDS.get(ALIASES.get(name, name))


def listed(repl: "ReplHost | None") -> list:
    """The commands to offer (completion, /help): the built-in ones, then the MCP servers' prompts."""
    built_in = list(COMMANDS.values())
    tools = getattr(repl.agent_if_ready() if repl is not None else None, "mcp", None)
    if tools is None:
        return built_in
    from mini_letta.mcp.prompts import prompt_commands

    return [*built_in, *prompt_commands(tools)]


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
