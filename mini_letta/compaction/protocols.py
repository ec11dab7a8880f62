"""What compaction is asked, and the two protocols it reaches the rest through: how big a request
is (``Measure``) and the summarizer model (``SummaryModel``). ``loop/sizing.py`` implements both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mini_letta.messages import Message


class Measure(Protocol):
    """How big a request made of some messages is, as the provider counts it."""

    threshold: int
    window: int

    def measure(self, messages: list[Message]) -> int: ...  # the whole request, floor included
    def count(self, message: Message) -> int: ...  # one message, our own count
    def count_text(self, text: str) -> int: ...  # a text, our own count


@dataclass(frozen=True)
class CompactionRequest:
    """What to compact for: the trigger, the target size and what the summarizer may use."""

    trigger: str  # "context_pressure" | "context_overflow" | "manual"
    tokens: int  # the request's size now, by ``measure``
    target: int
    focus: str | None = None
    force_summary: bool = False  # summarise even when clearing alone reaches the target
    drop_limit: int | None = None  # drop the oldest turns while at or over 90% of this
    drop_without_limit: bool = False  # drop them too when the model's summary failed
    shared_allowed: bool = True  # the summary may be asked inside the conversation itself
    undercount: int = 0  # how far ``measure`` falls short of the caller's size
    files: tuple[list[str], list[str]] = ([], [])  # read and modified, besides what the calls say
    recall: bool = False  # the model can call conversation_search
    between_turns: bool = False  # planned ahead: the finished newest turn may be summarised too


class SummaryModel(Protocol):
    """The summarizer: its window, its count of a message, and its two forms of request."""

    window: int

    def count(self, message: Message) -> int: ...  # as the summarizer's provider counts it
    def quoted(self, system: str, prompt: str, max_tokens: int) -> str: ...  # a transcript in one message
    # The conversation itself with the instructions last (read from the provider's cache); None
    # when the summarizer is another model, so this form does not apply.
    in_conversation: Callable[[list[Message], str, int], str] | None
