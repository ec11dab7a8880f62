"""MCP prompts as slash commands, as Claude Code offers them: ``/mcp__<server>__<prompt> arg1 arg2``.

A server that lists prompts (read when it connects, ``client.py``) adds one REPL command per prompt,
completed and listed by ``/help`` like the built-in ones. The words after the command fill the
prompt's declared arguments in order (quotes keep words together; the last argument takes the rest
of the line); ``prompts/get`` answers with messages whose text is sent as the user's message, other
content described in one line as for a tool's result. The prompts are never offered to the model:
they cost nothing in the context until one is used.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mini_letta.mcp.client import McpCallError
from mini_letta.mcp.tools import block_text, tool_name
from mini_letta.trust.terminal_text import visible

if TYPE_CHECKING:
    from mini_letta.mcp.source import McpTools

PREFIX = "mcp__"


class PromptError(Exception):
    """The one sentence the user reads when a prompt command cannot be sent."""


@dataclass(frozen=True)
class PromptCommand:
    name: str  # mcp__server__prompt
    server: str
    prompt: Any  # the server's mcp Prompt, as listed

    @property
    def arguments(self) -> list[Any]:
        return list(self.prompt.arguments or [])

    @property
    def usage(self) -> str:
        words = [f"<{arg.name}>" if arg.required else f"[{arg.name}]" for arg in self.arguments]
        return visible(" ".join([f"/{self.name}", *words]))

    @property
    def help(self) -> str:
        text = (self.prompt.description or self.prompt.title or "").strip()
        first = text.splitlines()[0] if text else f"the prompt {self.prompt.name}"
        return visible(f"{first} (MCP prompt of {self.server})")

    def arguments_from(self, typed: str) -> dict[str, str]:
        """``typed`` mapped in order onto the declared arguments; PromptError names what is wrong."""
        declared = self.arguments
        if not declared:
            if typed.strip():
                raise PromptError(f"/{self.name} takes no arguments.")
            return {}
        try:
            words = _words(typed, len(declared) - 1)
        except ValueError as error:
            raise PromptError(f"/{self.name}: the arguments could not be read ({error}); "
                              f"usage: {self.usage}") from None
        missing = [arg.name for arg in declared[len(words):] if arg.required]
        if missing:
            named = " and ".join(repr(name) for name in missing)
            raise PromptError(f"/{self.name} needs the argument{'s' if len(missing) > 1 else ''} {named}; "
                              f"usage: {self.usage}")
        return {arg.name: word for arg, word in zip(declared, words)}


def _words(typed: str, leading: int) -> list[str]:
    """Up to ``leading`` words read as a shell reads them (quotes keep spaces), then the rest of the
    line as typed: it is free text, where an apostrophe, a backslash or a line break is the user's,
    not quoting. Quotes around the whole rest are taken off, as around a word."""
    lexer = shlex.shlex(typed, posix=True)
    lexer.whitespace_split, lexer.commenters = True, ""  # "#123" is an argument, not a comment
    words: list[str] = []
    while len(words) < leading and (word := lexer.get_token()) is not None:
        words.append(word)
    rest = lexer.instream.read().strip() if len(words) == leading else ""
    if rest[:1] in ("'", '"'):
        try:
            quoted = shlex.split(rest)
        except ValueError:
            quoted = []
        rest = quoted[0] if len(quoted) == 1 else rest
    return [*words, rest] if rest else words


def prompt_commands(tools: McpTools | None) -> list[PromptCommand]:
    """The prompts of the connected servers, as commands (none without servers)."""
    if tools is None:
        return []
    found: dict[str, PromptCommand] = {}
    for state in tools.servers.states:
        if state.status == "connected":
            for prompt in state.prompts:
                name = tool_name(state.name, prompt.name)
                found.setdefault(name, PromptCommand(name, state.name, prompt))
    return list(found.values())


def find(tools: McpTools | None, typed: str) -> PromptCommand | None:
    commands = prompt_commands(tools)
    return (next((command for command in commands if command.name == typed), None)
            or next((command for command in commands if command.name.lower() == typed.lower()), None))


def message_text(result: Any) -> str:
    """The prompt's messages as one user message; each labelled with its role when there are several."""
    messages = list(getattr(result, "messages", None) or [])
    several_roles = len({message.role for message in messages}) > 1
    parts = [(f"[{message.role}]\n" if several_roles else "") + block_text(message.content) for message in messages]
    return "\n\n".join(part for part in parts if part.strip())


def fetch(tools: McpTools, command: PromptCommand, typed: str) -> str:
    """The text to send for ``/command typed``; PromptError when there is none."""
    arguments = command.arguments_from(typed)
    try:
        result = tools.servers.manager.get_prompt(command.server, command.prompt.name, arguments)
    except McpCallError as error:
        raise PromptError(f"/{command.name} failed: {error}") from None
    text = message_text(result)
    if not text.strip():
        raise PromptError(f"/{command.name}: the server's prompt is empty, so nothing was sent.")
    return text
