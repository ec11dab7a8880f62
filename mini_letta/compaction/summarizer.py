"""L2: asking the model for a structured summary of the older part of the conversation."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mini_letta import resources
from mini_letta.errors import ContextOverflowError
from mini_letta.messages import Message
from mini_letta.compaction.layers import summary_body
from mini_letta.compaction.transcript import clip, middle_truncate, serialise
from mini_letta.compaction.turns import Cut, has_summary

Summarize = Callable[[str, str, int], str]

# The summarizer request carries the system prompt, the instructions and the reply; this margin
# covers message framing the count of one text does not see.
_FRAMING_TOKENS = 64
# The tags that fence off quoted history. A file or tool output that contains one could otherwise
# close the quote early and pass its text off as instructions to the summarizer.
_FENCE_TAGS = re.compile(r"<(/?)\s*(conversation|previous-summary|current-request)\s*>", re.I)


def _quoted(text: str) -> str:
    return _FENCE_TAGS.sub(r"‹\1\2›", text)


class SummaryUnavailable(Exception):
    """The model gave no usable summary; the caller falls back to the extractive layer."""


@dataclass
class SummaryInput:
    system: str
    transcript: str
    previous_summary: str | None
    current_request: str | None
    focus: str | None

    def prompt(self, transcript: str | None = None) -> str:
        history = self.transcript if transcript is None else transcript
        parts = [f"<conversation>\n{_quoted(history)}\n</conversation>"]
        if self.previous_summary is not None:
            parts.append(f"<previous-summary>\n{_quoted(self.previous_summary)}\n</previous-summary>")
        if self.current_request is not None:
            parts.append(f"<current-request>\n{_quoted(self.current_request)}\n</current-request>")
        parts.append(resources.prompt("summarizer_instructions").strip())
        if self.previous_summary is not None:
            parts.append(resources.prompt("summarizer_merge").strip())
        if self.current_request is not None:
            parts.append(resources.prompt("summarizer_turn_prefix").strip())
        if self.focus:
            parts.append(f"Additional focus from the user for this summary: {self.focus.strip()}")
        return "\n\n".join(parts)


def summary_input(messages: list[Message], cut: Cut, focus: str | None = None) -> SummaryInput:
    """What the summarizer is shown for ``cut``: the older messages as a transcript, the previous
    summary separately (to be merged, not summarised again), and the split turn's request."""
    transcript = serialise(cut.summarised(messages))
    current = None
    if cut.kept_turn_start is not None and cut.turn_prefix(messages):
        current = clip(messages[cut.kept_turn_start].text, 4_000)
    previous = summary_body(messages[0]) if has_summary(messages) else None
    return SummaryInput(resources.prompt("summarizer_system").strip(), transcript, previous, current, focus)


def summarise(request: SummaryInput, summarize: Summarize, count: Callable[[Message], int], *,
              input_budget: int, max_output_tokens: int) -> tuple[str, bool]:
    """The model's summary and whether the transcript had to be middle-truncated.

    The input is measured first and its transcript middle-truncated to ``input_budget`` tokens; if
    the provider still rejects it as too long, it is halved once more and retried once. Raises
    :class:`SummaryUnavailable` when the model fails or answers with nothing.
    """
    transcript = request.transcript
    truncated = False
    size = count(Message.user(request.system + "\n\n" + request.prompt(transcript))) + _FRAMING_TOKENS
    if size > input_budget:
        fixed = size - count(Message.user(transcript))
        room = max(0, input_budget - fixed)
        transcript = middle_truncate(transcript, int(len(transcript) * room / max(1, size - fixed) * 0.95))
        truncated = True
    try:
        text = summarize(request.system, request.prompt(transcript), max_output_tokens)
    except ContextOverflowError:
        transcript = middle_truncate(transcript, len(transcript) // 2)
        truncated = True
        try:
            text = summarize(request.system, request.prompt(transcript), max_output_tokens)
        except Exception as exc:
            raise SummaryUnavailable(f"the summarizer failed twice: {exc}") from exc
    except Exception as exc:
        raise SummaryUnavailable(f"the summarizer failed: {exc}") from exc
    if not text or not text.strip():
        raise SummaryUnavailable("the summarizer returned an empty summary")
    return text.strip(), truncated
