"""Slash commands in ``-p``: a prompt that is exactly ``/compact [focus]``, ``/context`` or ``/cost``
runs the command instead of being sent to the model (as ``claude -p "/compact"`` does), so a
headless user can compact a continued session (``mini-letta -c -p "/compact keep the API notes"``)
or read its context and cost. Each returns the fields of the ``--output-format json`` object that
describe its result, and the text printed otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mini_letta.loop.agent import Agent, AgentEvents

# Names that take no argument: "/context please" is a prompt for the model, not the command.
_BARE = {"context", "cost"}


@dataclass
class CommandResult:
    text: str  # what text output prints on stdout
    stopped: str  # the JSON's "stopped": what the command did
    fields: dict[str, Any] = field(default_factory=dict)  # more JSON fields
    is_error: bool = False


def parse(prompt: str) -> tuple[str, str] | None:
    """(name, argument) when ``prompt`` is exactly a known command, else None."""
    text = prompt.strip()
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].partition(" ")
    argument = argument.strip()
    if name == "compact" or (name in _BARE and not argument):
        return name, argument
    return None


def run(agent: Agent, name: str, argument: str, events: AgentEvents) -> CommandResult:
    return {"compact": _compact, "context": _context, "cost": _cost}[name](agent, argument, events)


def _compact(agent: Agent, argument: str, events: AgentEvents) -> CommandResult:
    from mini_letta.repl.views import compaction_line

    if argument.split(" ", 1)[0] == "--preview":
        return CommandResult("/compact --preview needs the REPL (it asks before applying); in -p use /compact.",
                             "error", is_error=True)
    record = agent.compact_now(argument or None, events)
    fields = {"compaction": record.to_dict()}
    if not record.layers:
        return CommandResult(record.note or "Nothing to compact yet.", "nothing_to_compact", fields)
    text = compaction_line(record, agent.context_state().percent_left)
    if record.note:
        text += "\n" + record.note
    # A summary the model wrote but that was not installed (cut at its limit, degenerate, ...) is
    # named: the compaction ran, with the extractive summary in its place.
    stopped = f"summary_{record.summary_rejected}" if record.summary_rejected else "compacted"
    return CommandResult(text, stopped, fields)


def _context(agent: Agent, argument: str, events: AgentEvents) -> CommandResult:
    from mini_letta.repl.views import context_view

    rows = agent.budget.breakdown(agent.system_prompt(), agent.prompt.core_memory(), agent.tool_specs(),
                                  agent.conversation, agent.prompt.skills_list())
    return CommandResult(_render(context_view(agent)), "context", {"breakdown": dict(rows)})


def _cost(agent: Agent, argument: str, events: AgentEvents) -> CommandResult:
    from mini_letta.repl.views import cost_view

    spend = agent.spend
    return CommandResult(_render(cost_view(agent)), "cost",
                         {"calls": spend.calls, "unpriced_calls": spend.unpriced_calls})


def _render(renderable: Any) -> str:
    """A Rich view as plain text (no colours, no control codes): the REPL's view, printed by -p."""
    from io import StringIO

    from rich.console import Console

    out = StringIO()
    Console(file=out, width=100, color_system=None, force_terminal=False, highlight=False).print(renderable)
    return out.getvalue().rstrip()
