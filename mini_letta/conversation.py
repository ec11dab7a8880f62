"""The in-context message list of one session, with creation order and compaction boundary."""

from __future__ import annotations

from dataclasses import dataclass, field

from mini_letta.messages import Message


@dataclass
class Conversation:
    messages: list[Message] = field(default_factory=list)
    next_seq: int = 1
    # Sequence number at which the latest compaction happened. Usage reported on a message with a
    # smaller seq describes a context that no longer exists (kept messages are older than the
    # summary that now precedes them), so list position cannot tell; seq can.
    boundary_seq: int = 0
    # User turns started so far in the whole session (compacted ones included). Each typed message
    # carries its number in ``meta["turn"]``: a summary names the turns it stands for, and
    # conversation_search reports the same numbers from the session file.
    turns: int = 0

    def append(self, message: Message) -> Message:
        message.seq = self.next_seq
        self.next_seq += 1
        if message.role == "user" and message.kind == "normal" and "turn" not in message.meta:
            self.turns += 1
            message.meta["turn"] = self.turns
        self.messages.append(message)
        return message

    def mark_boundary(self) -> int:
        """Start a new compaction epoch; returns its sequence number."""
        self.boundary_seq = self.next_seq
        self.next_seq += 1
        return self.boundary_seq

    def replace(self, messages: list[Message]) -> None:
        """Install a compacted list. New messages in it (seq 0) get sequence numbers now."""
        for message in messages:
            if message.seq == 0:
                message.seq = self.next_seq
                self.next_seq += 1
        self.messages = list(messages)

    def latest_usage_anchor(self) -> int | None:
        """Index of the newest assistant message whose usage still describes this context."""
        for index in range(len(self.messages) - 1, -1, -1):
            message = self.messages[index]
            if message.role == "assistant" and message.usage is not None and not message.usage.is_empty:
                return index if message.seq > self.boundary_seq else None
        return None
