"""A summary that loops on one passage is stopped while it streams (the wait ends there), not
read to its limit; an ordinary summary streams to its end."""

from __future__ import annotations

import pytest

from mini_letta.compaction.acceptance import SummaryRejected, looping
from mini_letta.loop.sizing import _complete_unless_looping
from mini_letta.messages import Message
from mini_letta.providers.base import Done, Request, TextDelta

# What SmolLM2-135M wrote as a summary against llama-server -c 4096 (743 tokens, about 70 s).
STUCK = "The code includes a loop to calculate the Fibonacci sequence up to the nth Fibonacci number. "
SUMMARY = """## 1. Primary request and intent
The user wants the CSV parser to accept quoted fields.
## 2. Key technical concepts
- None.
## 3. Files and code sections
- src/csvkit/parse.py: split_row() splits on commas; quoted fields are not handled.
- tests/test_parse.py: three tests, one failing (test_quoted_comma).
## 4. Errors and fixes
- None.
## 5. Pending tasks
- None.
## 6. Current work
Reading split_row() to add a small state machine for quotes.
"""


class Streaming:
    name = "fake"

    def __init__(self, pieces, then_done: bool = True):
        self.pieces, self.then_done = pieces, then_done
        self.sent = 0
        self.closed = False

    def stream(self, request):
        try:
            for piece in self.pieces:
                self.sent += 1
                yield TextDelta(piece)
            if self.then_done:
                yield Done(Message.assistant("".join(self.pieces)))
        finally:
            self.closed = True


def chunks(text: str, size: int = 8) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def test_a_looping_summary_is_stopped_early_and_its_stream_closed():
    provider = Streaming(chunks(STUCK * 40))
    with pytest.raises(SummaryRejected) as raised:
        _complete_unless_looping(provider, Request(system="s", messages=[], tools=[], max_tokens=800))
    assert raised.value.reason == "degenerate" and "stopped there" in str(raised.value)
    assert provider.closed
    assert provider.sent * 8 < 8 * len(STUCK)  # fewer than 8 of the 40 repeats were read


def test_an_ordinary_summary_streams_to_its_end():
    provider = Streaming(chunks(SUMMARY * 1))
    reply = _complete_unless_looping(provider, Request(system="s", messages=[], tools=[], max_tokens=800))
    assert reply.text == SUMMARY and provider.closed


def test_what_counts_as_a_loop():
    assert looping(SUMMARY + STUCK * 4)
    assert looping(SUMMARY + (STUCK.replace(" ", "\n  ") * 4))  # the same passage, wrapped otherwise
    assert not looping(SUMMARY + STUCK * 3)
    assert not looping(SUMMARY)
    assert not looping("- None.\n" * 12)  # short repeated lines of a structured summary
    assert not looping("| --- | --- |\n" * 10)
