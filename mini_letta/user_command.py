"""``!command`` in the REPL: the user runs a shell command in the workspace without the model.

The user typed it, so nothing asks for approval. Its output is shown, and command and output go
into the conversation as the user's message (the model reads them with the next request): capped
like a tool's output (characters while it runs, then the tokens the context has room for), and
saved through the session file's redaction like everything else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_letta.settings import SETTINGS
from mini_letta.toolbox import shell
from mini_letta.toolbox.outcome import ToolOutcome, fit_tokens

if TYPE_CHECKING:
    from mini_letta.loop.agent import Agent

PREFIX = "!"


def run_user_command(agent: Agent, command: str) -> ToolOutcome:
    """Run ``command`` in the workspace and put it, with its output, into the conversation."""
    outcome = shell.run_bash(command, agent.workspace, SETTINGS.tools.shell_timeout_seconds, agent.tool_output_chars())
    state = agent.context_state()
    limit = agent.budget.tool_output_token_limit(state.level, state.tokens)
    output = fit_tokens(outcome.text, limit, agent.budget.calibration.count_text)
    agent.add_user_context(conversation_text(command, output))
    return ToolOutcome(output, outcome.is_error)


def conversation_text(command: str, output: str) -> str:
    """How the model reads it: who ran what, then the output, clearly quoted."""
    return (f"I ran this command myself in the workspace:\n<command>\n{command}\n</command>\n"
            f"Its output:\n<output>\n{output}\n</output>")
