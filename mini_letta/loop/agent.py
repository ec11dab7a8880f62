"""The agent: a session's state and the parts a turn is assembled from. It orchestrates nothing.

A turn runs in ``loop/turn.py``, compaction is planned by ``compaction/plan.py`` and installed by
``loop/compacting.py``; the Agent holds the parts they share (the model in use, the prompt, the
sizing, the journal, the ledger, the compaction) and gives the REPL and the headless runner one
object to hold. It builds none of them: ``loop/parts.py`` ``build_parts`` does, in order, and
``app.assemble`` hands them over (``Agent(parts=...)``) before it offers the tools. ``reset``
(``/clear``, ``/resume``) starts the same parts afresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mini_letta.compaction.record import CompactionRecord
from mini_letta.context import ContextState
from mini_letta.conversation import Conversation
from mini_letta.loop.parts import AgentParts
from mini_letta.loop.prompt import CACHE_BREAK
from mini_letta.loop.turn import (AgentEvents, Turn, TurnInterrupted,
                                 TurnResult)
from mini_letta.messages import Message, ToolSpec
from mini_letta.settings import SETTINGS

__all__ = ["CACHE_BREAK", "Agent", "AgentEvents", "ContextPoint", "TurnInterrupted",
           "TurnResult"]


@dataclass
class ContextPoint:
    """One row of the per-turn usage history shown by /context."""

    turn: int
    tokens: int
    window: int
    compacted: bool
    manual: bool = False  # a /compact between turns, after turn ``turn``


class Agent:
    """One session's agent over the parts ``loop/parts.py`` built (``app.assemble`` builds them and
    offers the tools); it stores what it is given and builds nothing."""

    def __init__(self, *, parts: AgentParts, max_steps: int = SETTINGS.loop.max_turns, checkpoints: Any = None,
                 mcp: Any = None):
        self.state = parts.state
        self.toolbox = parts.toolbox
        self.workspace = parts.workspace
        self.say = parts.say  # the run's notice channel (notices.Notices.say): what the user is told between turns
        # skills.SkillSet, or None: it answers with values and never calls back here.
        self.skills = parts.skills
        self.model = parts.model
        self.ledger = parts.ledger
        self.journal = parts.journal
        self.prompt = parts.prompt
        self.sizing = parts.sizing
        self.compacting = parts.compacting
        self.max_steps = max_steps
        self.checkpoints = checkpoints  # checkpoints.Checkpoints, or None: nothing recorded
        # subagents.runner.Runner (the task tool's), made with this agent by app.assemble; None: no task tool.
        self.subagents: Any = None
        self.mcp = mcp  # mcp.source.McpTools (its servers' tools, a source the toolbox asks), or None
        self.history: list[ContextPoint] = []

    def reset(self, session: Any, conversation: Conversation | None = None) -> None:
        """Start afresh (``/clear``), or go on with another session's ``conversation`` (``/resume``):
        new session record, same provider and memory."""
        self.state.session = session
        self.state.conversation = conversation or Conversation()
        self.ledger.reset()
        self.history = []
        self.journal.failed = False
        self.compacting.start_afresh()

    # -- state, read through the part that owns it ----------------------------------------------
    provider = property(lambda self: self.model.provider, lambda self, value: setattr(self.model, "provider", value))
    budget = property(lambda self: self.model.budget, lambda self, value: setattr(self.model, "budget", value))
    summarizer_model = property(lambda self: self.model.summarizer_model,
                                lambda self, value: setattr(self.model, "summarizer_model", value))
    hooks = property(lambda self: self.compacting.hooks, lambda self, value: setattr(self.compacting, "hooks", value))
    session = property(lambda self: self.state.session, lambda self, value: setattr(self.state, "session", value))
    conversation = property(lambda self: self.state.conversation,
                            lambda self, value: setattr(self.state, "conversation", value))
    turns = property(lambda self: self.state.turns)
    memory = property(lambda self: self.prompt.memory)
    instructions = property(lambda self: self.prompt.instructions)
    spend = property(lambda self: self.ledger.spend)
    ahead = property(lambda self: self.compacting.ahead)  # the summary prepared while the user types
    # The compactions of this session that changed something, oldest first.
    compactions = property(lambda self: self.compacting.records)

    # -- the request's parts ----------------------------------------------------------------------
    def system_prompt(self) -> str:
        return self.prompt.system()

    def tool_specs(self) -> list[ToolSpec]:
        return self.prompt.tools()

    def context_tokens(self) -> int:
        """The current request size: provider usage first, local counts for what came after."""
        return self.sizing.size(self.conversation)

    def context_state(self) -> ContextState:
        return self.budget.state(self.context_tokens())

    def tool_output_chars(self) -> int:
        """What one output may keep now, in characters, as the toolbox applies it: for what the
        user adds without a tool call (``!command``, ``@path``)."""
        return self.sizing.tool_output_limit(self.conversation)

    def tool_output_tokens(self) -> int:
        """The same room in tokens, as the provider counts them (dense text holds more per character)."""
        return self.sizing.tool_output_limit(self.conversation, tokens=True)

    # -- what the REPL and the headless runner ask for ---------------------------------------------
    def run_turn(self, text: str, events: AgentEvents | None = None) -> TurnResult:
        before = len(self.compactions)
        try:
            return Turn(self, events or AgentEvents()).run(text)
        finally:
            self.history.append(ContextPoint(self.turns, self.context_tokens(), self.budget.window,
                                             len(self.compactions) > before))

    def compact_now(self, focus: str | None = None, events: AgentEvents | None = None) -> CompactionRecord:
        """``/compact [focus]``: always allowed, whatever the automatic setting."""
        step = self.sizing.step_size(self.conversation)
        record = self.compacting.make_room(events or AgentEvents(), step, "manual", focus=focus).record
        assert record is not None  # a manual compaction always has its record, "nothing to compact" too
        if record.layers:  # /context marks every compaction, this one too
            self.history.append(ContextPoint(self.turns, self.context_tokens(), self.budget.window, True, manual=True))
        return record

    def prepare_compaction(self) -> bool:
        """While the user types: prepare the automatic compaction in the background (``Compacting``)."""
        return self.compacting.prepare_ahead(self.context_tokens())

    def preview_compaction(self, focus: str | None = None, events: AgentEvents | None = None):
        """``/compact --preview``: the manual plan, not installed (a record when nothing to do)."""
        return self.compacting.preview(events or AgentEvents(), self.context_tokens(), focus)

    def apply_compaction(self, plan, summary: str | None = None, events: AgentEvents | None = None) -> CompactionRecord:
        """Install a previewed plan, with the user's edited ``summary`` when given; ValueError
        (nothing changed) when the conversation moved on since the preview."""
        return self.compacting.apply(events or AgentEvents(), plan, summary)

    def add_user_context(self, text: str) -> None:
        """What the user supplied without asking the model (``!command`` and its output), into the
        conversation and the session: counted now, read by the model with the next message."""
        self.journal.append(None, Message.user(text))
