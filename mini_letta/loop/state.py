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
    def turns(self) -> int:
        """User turns of the whole session so far: the one counter, kept by the conversation."""
        return self.conversation.turns
