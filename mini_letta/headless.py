"""``mini-letta -p PROMPT``: one turn without a terminal UI, as text or one JSON object."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO

from mini_letta import config
from mini_letta.agent import Agent, AgentEvents, TurnInterrupted
from mini_letta.errors import ContextFullError, MiniLettaError
from mini_letta.terminal_text import visible
from mini_letta.toolbox import deny_with, approve_all

PRINT_MODE_ADVICE = ("Send a shorter prompt, start a new session (leave out -c or -r), "
                     "or use a model with a larger context window.")
# The closing sentence of the agent's and the compactor's "context is full" messages.
_REPL_ADVICE = re.compile(r"(?:Use|Run) /\w.*$", re.DOTALL)

PRINT_MODE_DENIAL = ("Denied: writing files and running commands outside the sandbox is disabled in print mode "
                     "(-p) unless mini-letta runs with --yolo. Tell the user what you would have done instead.")


class _StderrNotices(AgentEvents):
    def __init__(self, stream: TextIO, agent: Agent):
        self.stream = stream
        self.agent = agent

    def notice(self, text: str) -> None:
        print(f"mini-letta: {visible(text)}", file=self.stream)

    def retrying(self, text: str) -> None:
        self.notice(text)

    def compaction_finished(self, record) -> None:
        from mini_letta.repl.views import compaction_line

        if record.layers:
            self.notice(compaction_line(record, self.agent.context_state().percent_left))
        if record.note:
            self.notice(record.note)


def for_print_mode(message: str) -> str:
    """A "context is full" message with its advice on REPL commands (/compact, /clear) replaced by
    what can be done with -p."""
    return _REPL_ADVICE.sub(PRINT_MODE_ADVICE, message)


def approver_for(yolo: bool):
    return approve_all if yolo else deny_with(PRINT_MODE_DENIAL)


def run_print(agent: Agent, prompt: str, output_format: str, session_id: str,
              stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:
    """Run ``prompt`` as one turn; returns the process exit code."""
    events = _StderrNotices(stderr, agent)
    for text in config.take_notices():
        events.notice(text)
    error: str | None = None
    result = None
    try:
        result = agent.run_turn(prompt, events)
    except TurnInterrupted:
        error = "interrupted"
    except ContextFullError as exc:
        error = for_print_mode(str(exc))
    except MiniLettaError as exc:
        error = str(exc)
    for text in config.take_notices():  # queued during the turn (e.g. by checkpoints)
        events.notice(text)
    if output_format == "json":
        print(json.dumps(_json_result(agent, result, error, session_id)), file=stdout)
    elif result is not None and error is None:
        # Piped output is the reply as written; on a terminal its control sequences are shown, not obeyed.
        print(visible(result.text) if _is_terminal(stdout) else result.text, file=stdout)
    if error is not None:
        print(f"mini-letta: {visible(error)}", file=stderr)
        return 130 if error == "interrupted" else 1
    return 0


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _json_result(agent: Agent, result, error: str | None, session_id: str) -> dict[str, Any]:
    state = agent.context_state()
    usage = agent.usage_total
    return {
        "type": "result",
        "result": error if error is not None else (result.text if result else ""),
        "is_error": error is not None,
        "stopped": result.stopped if result else "error",
        "session_id": session_id,
        "num_turns": result.steps if result else 0,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "context": {
            "tokens": state.tokens,
            "window": state.window,
            "threshold": state.threshold,
            "percent_left": state.percent_left,
            "level": state.level,
            "window_source": agent.budget.window_info.source,
            "window_guessed": agent.budget.window_info.guessed,
        },
        # Only for a model in the price table: no figure at all rather than a guessed one.
        "total_cost_usd": None if agent.spend.usd is None else round(agent.spend.usd, 6),
        "compactions": [record.to_dict() for record in agent.compactions],
        "provider": agent.provider.name,
        "model": agent.provider.model,
    }
