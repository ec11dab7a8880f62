"""Whether a model's summary may be installed: not cut at its limit, not degenerate.

A summary cut by its output limit ends mid-sentence and loses whatever it was about to say; a
degenerate one (a small model looping on one phrase) spends the window on nothing. Either is
rejected like a summary that is too long, and the next layer (the extractive summary) runs.
Degeneracy is measured, not guessed from words: how much the text compresses (zlib), how many of
its lines repeat, and how many of its word n-grams repeat. Ordinary structured summaries, with
their short repeated headings and "- None." lines, stay well clear of every limit.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter

from mini_letta import endings
from mini_letta.compaction.summarizer import SummaryUnavailable
from mini_letta.messages import Message
from mini_letta.settings import SETTINGS


class SummaryRejected(SummaryUnavailable):
    """A summary the model did write, rejected; ``reason`` names why ("max_tokens", "refusal",
    "content_filter", "cut", "degenerate") for the compaction record."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def check_ending(reply: Message, max_tokens: int) -> None:
    """Raise SummaryRejected when the summarizer's reply did not finish (cut at its limit, refused,
    filtered, cut off): an incomplete summary is never installed as if whole."""
    ending = endings.ending(reply)
    if ending == endings.MAX_TOKENS:
        raise SummaryRejected(ending, f"the model's summary was cut at its {max_tokens:,}-token limit")
    if ending in endings.INCOMPLETE:
        raise SummaryRejected(ending, f"the model's summary did not finish ({endings.describe(ending)})")


def looping(text: str) -> bool:
    """Whether ``text`` ends in one passage of at least ``SETTINGS.loop_min_chars`` characters and
    ``SETTINGS.loop_min_words`` different words said ``SETTINGS.loop_repeats`` times in a row
    (whitespace aside; a table's rule or "- None." lines are not a passage): checked while a summary
    streams."""
    repeats = SETTINGS.loop_repeats
    tail = " ".join(text[-SETTINGS.loop_check_every_chars * SETTINGS.loop_tail_checks:].split())
    for period in range(SETTINGS.loop_min_chars, len(tail) // repeats + 1):
        block = tail[-period:]
        if (all(tail[-(k + 1) * period:-k * period] == block for k in range(1, repeats))
                and len(set(block.split())) >= SETTINGS.loop_min_words):
            return True
    return False


def _words(text: str) -> list[str]:
    return re.findall(r"\w+(?:'\w+)?", text.lower())


def _lines(text: str) -> Counter:
    lines = (" ".join(_words(line)) for line in text.splitlines())
    return Counter(line for line in lines if len(line.split()) >= SETTINGS.acceptance_line_words)


def _grams(text: str) -> Counter:
    words = _words(text)
    return Counter(tuple(words[i:i + SETTINGS.acceptance_ngram]) for i in range(len(words) - SETTINGS.acceptance_ngram + 1))


def _excess(summary: Counter, source: Counter) -> float:
    """The share of ``summary``'s items that are repeats the source does not explain: a summary that
    lists the user's messages repeats what they repeated, a looping one repeats what nobody said."""
    total = sum(summary.values())
    if not total:
        return 0.0
    return sum(max(0, n - max(1, source.get(item, 0))) for item, n in summary.items()) / total


def _compression(text: str) -> float:
    raw = text.encode("utf-8")
    return len(zlib.compress(raw, 9)) / max(1, len(raw))


def repetition(text: str, source: str = "") -> dict[str, float]:
    """The three measures of ``text``: its compression ratio (relative to the source's, when there is
    one: text made of a repetitive conversation compresses as well as it does), and the shares of
    its lines and word n-grams that repeat beyond what ``source`` repeats."""
    ratio = _compression(text)
    if len(source) >= SETTINGS.acceptance_min_chars:
        ratio /= _compression(source)
    return {"compression_ratio": ratio, "repeated_lines": _excess(_lines(text), _lines(source)),
            "repeated_ngrams": _excess(_grams(text), _grams(source))}


def degeneracy(text: str, source: str = "") -> str | None:
    """Why ``text`` is degenerate, in words; None when it reads as an ordinary summary of ``source``
    (the text it summarises)."""
    if len(text) < SETTINGS.acceptance_min_chars:
        return None
    measured = repetition(text, source)
    if measured["compression_ratio"] < (SETTINGS.acceptance_min_relative_compression if len(source) >= SETTINGS.acceptance_min_chars
                                        else SETTINGS.acceptance_min_compression_ratio):
        return f"it repeats itself (it compresses {1 / measured['compression_ratio']:.0f}-fold)"
    if measured["repeated_lines"] > SETTINGS.acceptance_max_repeated_lines:
        return f"{measured['repeated_lines']:.0%} of its lines are repeats"
    if measured["repeated_ngrams"] > SETTINGS.acceptance_max_repeated_ngrams:
        return f"{measured['repeated_ngrams']:.0%} of its {SETTINGS.acceptance_ngram}-word phrases are repeats"
    return None


def source_text(messages: list[Message]) -> str:
    """What a summary of ``messages`` may quote: every text and tool call's arguments."""
    parts = []
    for message in messages:
        parts.append(message.text)
        parts += [call.arguments for call in message.tool_calls]
    return "\n".join(parts)


def check(summary: str, messages: list[Message]) -> None:
    """Raise SummaryRejected when the model's ``summary`` of ``messages`` may not be installed (the
    one call before a model's summary is installed)."""
    problem = degeneracy(summary, source_text(messages))
    if problem:
        raise SummaryRejected("degenerate", f"the model's summary was degenerate: {problem}")
