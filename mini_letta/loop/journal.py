"""Saving the session as it happens: every message, compaction, withdrawal and learned window.

One owner for the session file's writes. A write that fails (a full disk, a removed folder) is said
once; the conversation goes on in memory. Where a write has no events to say it with (a memory
edit inside a tool), the sentence waits for the next write that has them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mini_letta.conversation import Conversation
from mini_letta.errors import SessionError
from mini_letta.loop.state import SessionState
from mini_letta.messages import Message


class Journal:
    def __init__(self, state: SessionState):
        self.state = state
        self.failed = False
        self._unsaid: str | None = None

    def append(self, events, message: Message) -> None:
        """Into the conversation and the session file."""
        self.state.conversation.append(message)
        self._write(events, lambda session: session.append_message(message))

    def withdraw(self, events, message: Message) -> None:
        """Out of the context, kept in the session record (a message that could not be sent)."""
        conversation = self.state.conversation
        conversation.messages = [m for m in conversation.messages if m.id != message.id]
        self._write(events, lambda session: session.append_withdrawn(message.id))

    def save_compaction(self, events, record: Any, conversation: Conversation) -> None:
        self._write(events, lambda session: session.append_compaction(
            record.to_dict(), conversation.boundary_seq, list(conversation.messages)))

    def remember_window(self, events, limit: int) -> None:
        """A window learned from a rejection, so a resumed session starts with it."""
        self._write(events, lambda session: session.append_window(limit, "learned"))

    def memory_edit(self, label: str, action: str, chars: int) -> None:
        self._write(None, lambda session: session.append_memory_edit(label, action, chars))

    def _write(self, events, write: Callable[[Any], Any]) -> None:
        session = self.state.session
        if session is not None:
            try:
                write(session)
            except SessionError as error:
                if not self.failed:
                    self.failed = True
                    self._unsaid = f"{error} The session continues in memory but is no longer being saved."
        if self._unsaid and events is not None:
            text, self._unsaid = self._unsaid, None
            events.notice(text)
