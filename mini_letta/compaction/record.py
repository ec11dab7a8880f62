"""What one compaction did, as saved with the session and shown to the user."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from mini_letta.messages import Message


def is_prefix(prefix: list[Message], messages: list[Message]) -> bool:
    """Whether ``messages`` still starts with exactly these message objects (nothing replaced)."""
    return len(prefix) <= len(messages) and all(a is b for a, b in zip(prefix, messages))


@dataclass
class CompactionRecord:
    trigger: str  # "context_pressure" | "context_overflow" | "manual"
    messages_before: int
    messages_after: int
    tokens_before: int  # the whole request, floor included
    tokens_after: int
    duration_ms: int
    layers: list[str]  # empty when there was nothing to compact
    focus: str | None = None
    summary_chars: int = 0
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    # One line for the user when something worth knowing happened (a fallback, nothing to do).
    note: str = ""
    # The audit (compaction/audit.py): items that had to survive, how many the summary itself kept,
    # and how many the audit put back because neither the summary nor the carry-over had them.
    must_keep: int = 0
    kept_by_model: int = 0
    restored_by_audit: int = 0
    # The user rewrote the summary before it was applied (``/compact --preview``, then ``e``).
    edited: bool = False
    # The summary was prepared ahead of time, while the user typed (``compaction/ahead.py``).
    prepared: bool = False
    # Why the model's summary was not used, when it was not: "failed", or how a written one was
    # rejected ("max_tokens", "refusal", "content_filter", "cut", "degenerate"; compaction/acceptance.py).
    summary_rejected: str = ""

    def to_dict(self) -> dict:
        return asdict(self)
