"""L2: asking the model for a structured summary of the older part of the conversation."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from mini_letta import endings, resources
from mini_letta.errors import ContextOverflowError
from mini_letta.messages import Message
from mini_letta.compaction.layers import summary_body
from mini_letta.compaction.transcript import clip, middle_truncate, serialise, short_call
from mini_letta.compaction.turns import Cut, has_summary
from mini_letta.settings import SETTINGS

Summarize = Callable[[str, str, int], str]

# The tags that fence off quoted history. A file or tool output that contains one could otherwise
# close the quote early and pass its text off as instructions to the summarizer.
_FENCE_TAGS = re.compile(r"<(/?)\s*(conversation|previous-summary|current-request)\s*>", re.I)


def _quoted(text: str) -> str:
    return _FENCE_TAGS.sub(r"‹\1\2›", text)


class SummaryUnavailable(Exception):
    """The model gave no usable summary; the caller falls back to the extractive layer."""


class QuotedFormNeeded(Exception):
    """The conversation-shaped summarizer request gave no summary for a reason the quoted
    transcript avoids (the model called one of the tools it saw): ask in the quoted form."""


@dataclass
class SummaryInput:
    system: str
    transcript: str
    previous_summary: str | None
    current_request: str | None
    focus: str | None
    # The transcript one entry per message, so a history too long for one request can be split
    # between messages (``transcript`` is these joined).
    parts: list[str] = field(default_factory=list)

    def prompt(self, transcript: str | None = None, previous_summary: str | None = None,
               max_tokens: int | None = None) -> str:
        history = self.transcript if transcript is None else transcript
        previous = self.previous_summary if previous_summary is None else previous_summary
        parts = [f"<conversation>\n{_quoted(history)}\n</conversation>"]
        if previous is not None:
            parts.append(f"<previous-summary>\n{_quoted(previous)}\n</previous-summary>")
        if self.current_request is not None:
            parts.append(f"<current-request>\n{_quoted(self.current_request)}\n</current-request>")
        parts.append(resources.prompt("summarizer_instructions").strip())
        if previous is not None:
            parts.append(resources.prompt("summarizer_merge").strip())
        if self.current_request is not None:
            parts.append(resources.prompt("summarizer_turn_prefix").strip())
        if self.focus:
            parts.append(f"Additional focus from the user for this summary: {self.focus.strip()}")
        if max_tokens:
            parts.append(length_line(max_tokens))
        return "\n\n".join(parts)


def length_line(max_tokens: int) -> str:
    """The summary's length limit, in words a model can aim for: it is cut at ``max_tokens``, and a
    summary cut off is not installed (``acceptance.check_ending``)."""
    words = max(SETTINGS.summarizer_min_words, round(max_tokens * SETTINGS.summarizer_words_per_token, -1))
    return resources.prompt("summarizer_length").strip().format(words=f"{words:,.0f}", tokens=f"{max_tokens:,}")


def with_room(ask: Callable[[int], str], max_tokens: int, room: int) -> tuple[str, int]:
    """``ask(max_tokens)``, and the limit it was given. A summary cut at its limit is asked for once
    more with up to twice the limit when the window has ``room`` for it; otherwise (or cut again)
    the rejection stands and the next layer (the extractive summary) runs."""
    try:
        return ask(max_tokens), max_tokens
    except SummaryUnavailable as exc:
        larger = min(2 * max_tokens, room)
        if getattr(exc, "reason", None) != endings.MAX_TOKENS or larger < max_tokens * SETTINGS.summarizer_retry_growth:
            raise
    return ask(larger), larger


def summary_input(messages: list[Message], cut: Cut, focus: str | None = None) -> SummaryInput:
    """What the summarizer is shown for ``cut``: the older messages as a transcript, the previous
    summary separately (to be merged, not summarised again), and the split turn's request."""
    parts = [serialise([message]) for message in cut.summarised(messages)]
    current = None
    if cut.kept_turn_start is not None and cut.turn_prefix(messages):
        current = clip(messages[cut.kept_turn_start].text, SETTINGS.summarizer_request_chars)
    previous = summary_body(messages[0]) if has_summary(messages) else None
    return SummaryInput(resources.prompt("summarizer_system").strip(), "\n\n".join(parts), previous, current,
                        focus, parts)


def _describe(message: Message) -> str:
    if message.text.strip():
        return f"the {'assistant' if message.role == 'assistant' else 'user'} message that begins " \
               f"“{clip(' '.join(message.text.split()), SETTINGS.quote_chars)}”"
    if message.tool_calls:
        return f"your call {clip(short_call(message.tool_calls[0]), SETTINGS.quote_chars)}"
    return f"the {message.role} message"


def shared_prefix(messages: list[Message], cut: Cut) -> list[Message]:
    """The messages a cache-sharing summarizer request carries: the history up to ``cut``, as it
    was sent (a prefix of the requests before it, so the provider reads it from its cache), without
    the tail that stays verbatim: the request is smaller than the one before it."""
    return list(messages[:cut.index])


def shared_instructions(messages: list[Message], cut: Cut, focus: str | None = None,
                        max_tokens: int | None = None) -> str:
    """The final user message of a summarizer request that is the summarised part of the
    conversation itself (``shared_prefix``: same system prompt and tools, so the provider reads it
    from its cache): the rules of the quoted form, what to summarise, and the nine sections."""
    parts = [resources.prompt("summarizer_shared").strip()]
    scope = "Summarize the whole conversation above."
    if cut.index < len(messages):
        scope += " The messages that came after it stay in the context verbatim after your summary."
        if cut.kept_turn_start is not None and cut.turn_prefix(messages):
            scope += (f" The user's current request ({_describe(messages[cut.kept_turn_start])}) also stays; "
                      f"describe the steps already taken for it under \"Current work\".")
    if has_summary(messages):
        scope += (" The first message above is the summary written at an earlier compaction: merge it in, "
                  "keeping everything from it that is still relevant.")
    parts.append(scope)
    # The quoted form's instructions open with a sentence about its <conversation> tags; the
    # sections after it are the same for both forms.
    parts.append("Use exactly these nine sections, as Markdown headings:\n\n"
                 + resources.prompt("summarizer_instructions").strip().split("\n\n", 1)[-1])
    if focus:
        parts.append(f"Additional focus from the user for this summary: {focus.strip()}")
    if max_tokens:
        parts.append(length_line(max_tokens))
    return "\n\n".join(parts)


def cap_tokens(text: str, max_tokens: int, count: Callable[[Message], int]) -> str:
    """``text`` clipped (head and tail kept) until it counts at most ``max_tokens``: a server may
    ignore ``max_tokens``, and a rambling summary must not grow the context it was meant to shrink."""
    for _ in range(4):
        size = count(Message.user(text))
        if size <= max_tokens:
            return text
        text = clip(text, max(1, int(len(text) * max_tokens / size * SETTINGS.cut_undershoot)))
    return text


def summarise(request: SummaryInput, summarize: Summarize, count: Callable[[Message], int], *,
              input_budget: int, max_output_tokens: int) -> tuple[str, bool]:
    """The model's summary and whether part of the history had to be left out.

    ``count`` should be calibrated to the provider's tokenizer; ``input_budget`` is the room for the
    summarizer's request in its model's window (its reply already set aside). A history that fits
    goes in one request. A longer one is summarised in chunks, oldest first, each merged into the
    running summary, so that no request is sent over the window; past ``SETTINGS.summarizer_max_chunks`` chunks the
    middle of the history is left out. A request the provider still rejects as too long is halved
    and retried once. Raises :class:`SummaryUnavailable` when the model fails or answers nothing.
    """
    size = _request_size(request, request.transcript, request.previous_summary, count, max_output_tokens)
    if size <= input_budget:
        return _one_call(request, request.transcript, request.previous_summary, summarize, count,
                         max_output_tokens, input_budget + max_output_tokens - size), False
    # Later chunks carry the running summary as their previous summary: keep room for it.
    room = max(1, input_budget - _request_size(request, "", "x" * 4 * max_output_tokens, count, max_output_tokens))
    chunks, truncated = _chunks(request.parts or [request.transcript], room, count)
    running = request.previous_summary
    for chunk in chunks:
        room_for_reply = input_budget + max_output_tokens - _request_size(request, chunk, running, count,
                                                                          max_output_tokens)
        running = _one_call(request, chunk, running, summarize, count, max_output_tokens, room_for_reply)
    assert running is not None
    return running, truncated


def _request_size(request: SummaryInput, transcript: str, previous: str | None,
                  count: Callable[[Message], int], max_tokens: int | None = None) -> int:
    text = request.system + "\n\n" + request.prompt(transcript, previous, max_tokens)
    return count(Message.user(text)) + SETTINGS.summarizer_framing_tokens


def _chunks(parts: list[str], room: int, count: Callable[[Message], int]) -> tuple[list[str], bool]:
    """Consecutive parts grouped into transcripts of at most ``room`` tokens (a single part larger
    than that is middle-truncated); at most ``SETTINGS.summarizer_max_chunks``, the middle ones dropped beyond that."""
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    truncated = False
    for part in parts:
        tokens = count(Message.user(part))
        if tokens > room:
            part = middle_truncate(part, max(1, int(len(part) * room / tokens * SETTINGS.cut_undershoot)))
            tokens = count(Message.user(part))
            truncated = True
        if current and size + tokens > room:
            chunks.append("\n\n".join(current))
            current, size = [], 0
        current.append(part)
        size += tokens
    if current:
        chunks.append("\n\n".join(current))
    if len(chunks) > SETTINGS.summarizer_max_chunks:
        head = SETTINGS.summarizer_max_chunks // 2
        chunks = chunks[:head] + chunks[len(chunks) - (SETTINGS.summarizer_max_chunks - head):]
        truncated = True
    return chunks, truncated


def _one_call(request: SummaryInput, transcript: str, previous: str | None, summarize: Summarize,
              count: Callable[[Message], int], max_output_tokens: int, room: int) -> str:
    """One summarizer request; ``room`` is what the window leaves for the reply beside it, up to
    which a summary cut at its limit may be asked for again."""
    def ask(limit: int) -> str:
        return summarize(request.system, request.prompt(transcript, previous, limit), limit)

    try:
        text, max_output_tokens = with_room(ask, max_output_tokens, room)
    except ContextOverflowError:
        transcript = middle_truncate(transcript, len(transcript) // 2)
        try:
            text = ask(max_output_tokens)
        except SummaryUnavailable:
            raise
        except Exception as exc:
            raise SummaryUnavailable(f"the summarizer failed twice: {exc}") from exc
    except SummaryUnavailable:
        raise  # already says why (a summary cut at its limit, refused, ...)
    except Exception as exc:
        raise SummaryUnavailable(f"the summarizer failed: {exc}") from exc
    if not text or not text.strip():
        raise SummaryUnavailable("the summarizer returned an empty summary")
    return cap_tokens(text.strip(), max_output_tokens, count)
