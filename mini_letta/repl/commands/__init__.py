"""Slash commands, each with its body: the registry, and the modules that fill it (in /help order)."""

from mini_letta.repl.commands import basic, compact, rewind, setup, sessions, model, tasks  # noqa: F401  (they register)
from mini_letta.repl.commands import bashes  # noqa: F401  (it registers)
from mini_letta.repl.commands.registry import (ALIASES, COMMANDS, Command, command, dispatch, listed, lookup,
                                               put_in_order)

put_in_order()

__all__ = ["ALIASES", "COMMANDS", "Command", "command", "dispatch", "listed", "lookup"]
