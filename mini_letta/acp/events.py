"""What a turn reports, as the editor's session updates: the reply streamed as message chunks, each
tool call and its end, compactions and notices as thought chunks, the context figure as a usage update.

Notices and compactions are the agent's words, not the model's: sent as ``agent_thought_chunk``
they stay out of the reply the editor shows (and copies), yet are seen. The context figure goes as
``usage_update`` (tokens in context, the window), the protocol's own field for it, after every
reply and compaction; "N% context left" is written in each compaction's line, as in the REPL.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import start_tool_call, tool_content, text_block, update_agent_message_text, update_agent_thought_text, \
    update_tool_call
from acp.schema import UsageUpdate

from mini_letta.acp import tool_calls
from mini_letta.loop.agent import AgentEvents
from mini_letta.settings import SETTINGS

COMPACTING = {"manual": "Compacting the conversation…", "context_pressure": "Context is nearly full: compacting…",
              "context_overflow": "The provider said the request is too long: compacting…",
              "model_change": "The new model's window is smaller: compacting…"}


class Context:
    """What the events read of the session: its agent's context figures and how files are read."""

    def __init__(self, agent: Callable[[], Any], read_text: Callable[[Path], str | None]):
        self.agent = agent
        self.read_text = read_text

    def usage(self) -> UsageUpdate:
        agent = self.agent()
        return UsageUpdate(session_update="usage_update", used=max(0, agent.context_tokens()),
                           size=max(0, agent.budget.window))

    def percent_left(self) -> int:
        return self.agent().context_state().percent_left

    def resolve(self, path: str) -> Path:
        return self.agent().toolbox.ws.resolve_anywhere(path)


class AcpEvents(AgentEvents):
    """``send(update)`` delivers one session update (blocking until it is written)."""

    def __init__(self, send: Callable[[Any], None], context: Context):
        self.send = send
        self.context = context
        self.started: set[str] = set()
        self.diffs: dict[str, Any] = {}
        self.running: str | None = None  # the tool call running now (a terminal is shown in it)

    def thought(self, text: str) -> None:
        self.send(update_agent_thought_text(text.rstrip() + "\n"))

    # -- the model -------------------------------------------------------------------------------
    def text(self, delta: str) -> None:
        if delta:
            self.send(update_agent_message_text(delta))

    def retrying(self, text: str) -> None:
        self.thought(text[:1].upper() + text[1:] + ".")

    def tool_call_started(self, call_id: str, name: str) -> None:
        if call_id and call_id not in self.started:
            self.started.add(call_id)
            self.send(start_tool_call(call_id, name, kind=tool_calls.kind(name), status="pending"))

    def assistant_message(self, message) -> None:
        self.send(self.context.usage())

    # -- tools -----------------------------------------------------------------------------------
    def tool_call(self, call, description: str) -> None:
        fields = self.details(call, description)
        self.running = call.id
        if call.id in self.started:
            self.send(update_tool_call(call.id, status="in_progress", **fields))
        else:
            self.started.add(call.id)
            self.send(start_tool_call(call.id, fields.pop("title"), status="in_progress", **fields))

    def details(self, call, description: str) -> dict[str, Any]:
        """Title, kind, locations, the diff of a write or an edit, and the arguments."""
        change = tool_calls.diff(call, self.context.resolve, self.context.read_text)
        if change is not None:
            self.diffs[call.id] = change
        return {"title": description, "kind": tool_calls.kind(call.name),
                "locations": tool_calls.locations(call, self.context.resolve),
                "content": [change] if change is not None else None, "raw_input": tool_calls.arguments(call)}

    def tool_result(self, call, outcome) -> None:
        self.running = None
        room = SETTINGS.acp.shown_output_chars
        shown = outcome.text if len(outcome.text) <= room else \
            outcome.text[:room] + f"\n… ({len(outcome.text) - room:,} more characters)"
        content = [tool_content(text_block(shown))]
        if call.id in self.diffs and not outcome.is_error:
            content.insert(0, self.diffs[call.id])
        self.send(update_tool_call(call.id, status="failed" if outcome.is_error else "completed", content=content,
                                   raw_output={"output": outcome.text, "is_error": outcome.is_error}))

    # -- compaction and notices -------------------------------------------------------------------
    def compaction_started(self, trigger: str) -> None:
        self.thought(COMPACTING.get(trigger, "Compacting…"))

    def compaction_finished(self, record) -> None:
        self.thought(compaction_words(record, self.context.percent_left()))
        self.send(self.context.usage())

    def notice(self, text: str) -> None:
        self.thought(text)


def compaction_words(record, percent_left: int) -> str:
    """The REPL's line for a compaction ("Summarized 37 older messages: 12.3k → 4.8k tokens, 57%
    left"), or why nothing was compacted; with the compaction's note."""
    from mini_letta.repl.views import compaction_line

    if not record.layers:
        return record.note or "Nothing to compact yet."
    line = compaction_line(record, percent_left).replace("% left", "% context left")
    return line + (f"\n{record.note}" if record.note else "")
