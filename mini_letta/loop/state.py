"""The session in use, shared by the loop and the REPL: one owner for the writer and the messages.

``/clear`` and ``/resume`` replace what it holds; whoever needs the current session file (the
conversation_search tool, checkpoints) reads ``path`` when it needs it, so it follows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_letta.conversation import Conversation


@dataclass
class SessionState:
    session: Any = None  # sessions.store.SessionWriter; None: the session is not saved
    conversation: Conversation = field(default_factory=Conversation)

    @property
    def path(self) -> Path | None:
        """The session file now in use (a new one after /clear or /resume)."""
        return getattr(self.session, "path", None)

    @property
    def cache_key(self) -> str | None:
        """The session's id: every request of a session shares it (a prompt-cache routing key)."""
        return getattr(self.session, "id", None)

    @property
    def turns(self) -> int:
        """User turns of the whole session so far: the one counter, kept by the conversation."""
        return self.conversation.turns


@dataclass
class ModelInUse:
    """The provider and context budget the session talks to now (``/model`` replaces both), and the
    summarizer model when it is another. Every part that needs them reads them here."""

    provider: Any
    budget: Any
    summarizer_model: str | None = None

    @property
    def own_summarizer(self) -> bool:
        return not self.summarizer_model or self.summarizer_model == self.provider.model


class Ledger:
    """What the session's model calls cost, the summarizer's included (``/cost``, ``-p`` JSON)."""

    def __init__(self, prices: Any):
        from mini_letta.cost import Spend
        from mini_letta.messages import Usage

        self.spend = Spend(prices)
        self.usage = Usage()

    def add(self, model: str, usage: Any) -> None:
        self.spend.add(model, usage)
        if usage is not None:
            self.usage = self.usage + usage

    def reset(self) -> None:
        self.__init__(self.spend.table)
