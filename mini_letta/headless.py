"""``mini-letta -p PROMPT``: one turn without a terminal UI, as text or one JSON object."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO

from mini_letta import endings, headless_commands
from mini_letta.notices import Notices
from mini_letta.loop.agent import Agent, AgentEvents, TurnInterrupted
from mini_letta.planning import STOPPED_AT_PLAN, KeepPlan
from mini_letta.skills.skillset import invoked_names
from mini_letta.todos.items import latest as latest_todos
from mini_letta.errors import ContextFullError, MiniLettaError, StreamBrokenError
from mini_letta.trust.terminal_text import visible
from mini_letta.toolbox import deny_with, approve_all

PRINT_MODE_ADVICE = ("Run mini-letta -c -p \"/compact\" to summarise the conversation (it works with automatic "
                     "compaction off), send a shorter prompt, start a new session (leave out -c or -r), "
                     "or use a model with a larger context window.")
# The exit code of a turn whose answer is incomplete (cut by the reply limit, refused, filtered,
# cut off): not an error of mini-letta's (1), but not an answer a script should take as whole.
INCOMPLETE_EXIT = 3
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


class _CommandNotices(_StderrNotices):
    """For a slash command: its result is the output, so the compaction is not told twice."""

    def compaction_finished(self, record) -> None:
        pass


def for_print_mode(message: str) -> str:
    """A "context is full" message with its advice on REPL commands (/compact, /clear) replaced by
    what can be done with -p."""
    return _REPL_ADVICE.sub(PRINT_MODE_ADVICE, message)


def approver_for(yolo: bool):
    return approve_all if yolo else deny_with(PRINT_MODE_DENIAL)


def run_print(agent: Agent, prompt: str, output_format: str, session_id: str,
              stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr, *, discard_unanswered: bool = False,
              notices: Notices | None = None, plan: KeepPlan | None = None) -> int:
    """Run ``prompt`` as one turn; returns the process exit code. ``discard_unanswered``: a new
    session whose turn failed before any reply is deleted (JSON ``session_id`` null), so that
    ``-c`` and ``/resume`` never offer it. ``notices``: the run's channel, printed on stderr before
    the turn and after it."""
    notices = notices or Notices()
    events = _StderrNotices(stderr, agent)
    for text in notices.take():
        events.notice(text)
    command = headless_commands.parse(prompt)
    if command is not None:
        return _run_command(agent, *command, output_format, session_id, stdout, stderr)
    error: str | None = None
    stopped = "error"
    result = None
    try:
        result = agent.run_turn(prompt, events)
    except TurnInterrupted:
        error = "interrupted"
    except ContextFullError as exc:
        error, stopped = for_print_mode(str(exc)), exc.reason
    except StreamBrokenError as exc:
        error, stopped = str(exc), endings.CUT
    except MiniLettaError as exc:
        error = str(exc)
    for text in notices.take():  # said during the turn (e.g. by checkpoints)
        events.notice(text)
    if result is not None and plan is not None and plan.plan is not None:
        result.text = plan.plan
    replied = any(m.role == "assistant" for m in agent.conversation.messages)
    if error is not None and not replied and discard_unanswered and agent.session is not None:
        agent.session.discard()
        session_id = ""
    if output_format == "json":
        print(json.dumps(_json_result(agent, result, error, session_id, stopped)), file=stdout)
    elif result is not None and error is None:
        # Piped output is the reply as written; on a terminal its control sequences are shown, not obeyed.
        print(visible(result.text) if _is_terminal(stdout) else result.text, file=stdout)
    if error is not None:
        print(f"mini-letta: {visible(error)}", file=stderr)
        return 130 if error == "interrupted" else 1
    incomplete = result is not None and (result.stopped in endings.INCOMPLETE or result.stopped == "max_turns")
    return INCOMPLETE_EXIT if incomplete else 0


def _run_command(agent: Agent, name: str, argument: str, output_format: str, session_id: str,
                 stdout: TextIO, stderr: TextIO) -> int:
    """``-p "/compact [focus]"``, ``-p /context``, ``-p /cost``: run it, print what it did."""
    try:
        done = headless_commands.run(agent, name, argument, _CommandNotices(stderr, agent))
    except MiniLettaError as exc:
        done = headless_commands.CommandResult(str(exc), "error", is_error=True)
    if output_format == "json":
        payload = _json_result(agent, None, done.text if done.is_error else None, session_id)
        payload.update({"command": name, "result": done.text, "is_error": done.is_error, "stopped": done.stopped,
                        **done.fields})
        print(json.dumps(payload), file=stdout)
    elif not done.is_error:
        print(visible(done.text), file=stdout)
    if done.is_error:
        print(f"mini-letta: {visible(done.text)}", file=stderr)
        return 1
    return 0


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _json_result(agent: Agent, result, error: str | None, session_id: str,
                 stopped: str = "error") -> dict[str, Any]:
    """``stopped``: what to report when there is no result (a reply cut off by the network: "cut")."""
    state = agent.context_state()
    usage = agent.ledger.usage
    return {
        "type": "result",
        "result": error if error is not None else (result.text if result else ""),
        "is_error": error is not None or (result is not None and (result.stopped in endings.INCOMPLETE
                                                                  or result.stopped == "max_turns")),
        "stopped": result.stopped if result else stopped,
        # The ending in plain words when the answer is incomplete ("Reply cut at the 812-token reply limit...").
        "stop_detail": result.stop_detail if result else "",
        "session_id": session_id or None,
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
        # The skills this session invoked, read from its conversation (so also after -c).
        "skills_invoked": invoked_names(agent.conversation.messages),
        # The task list as the latest todo_write left it (so also after -c and compactions).
        "todos": [todo.to_dict() for todo in latest_todos(agent.conversation.messages)],
        # Each subagent's steps, tokens, compactions and cost (its cost is in total_cost_usd too).
        "subagents": [run.to_json() for run in getattr(getattr(agent, "subagents", None), "runs", [])],
        "provider": agent.provider.name,
        "model": agent.provider.model,
        # default, acceptEdits or plan, as the turn left it; "plan": the plan the model handed in.
        "permission_mode": agent.toolbox.permissions.mode.name,
        **({"plan": result.text} if result is not None and result.stopped == STOPPED_AT_PLAN else {}),
    }
