"""Each message's wire form, converted and serialised once, for every request it is sent in.

A long session sends the same messages again with every model call: at 1,000 messages, converting
and serialising them all is most of the time from a tool result to the next request on the wire
(``python -m benchmarks.bench_turn``). A message does not change once it is in the conversation:
clearing and compaction put new :class:`~mini_letta.messages.Message` objects in its place
(``dataclasses.replace``, the summary), and the conversation's ``replace`` swaps the list. So the
wire form is kept per message *object*, and a request joins the kept fragments.

An entry holds the message itself (so its ``id()`` cannot be reused by another object while the
entry lives) and is only used for that same object with the same ``text``, ``tool_calls`` and
``images`` objects: a field reassigned in place converts it again. A compaction's new messages are
other objects, so they miss and are converted; the replaced ones are forgotten when the cache
holds more than twice what the last request sent.
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

from mini_letta.messages import Message

Wire = TypeVar("Wire")

# Entries beyond twice the last request's messages (plus this) are dropped at once.
_SLACK = 256


class WireCache(Generic[Wire]):
    """``convert(message)`` made once per message object; thread-safe (a summary prepared in the
    background may be sent beside a turn's request)."""

    def __init__(self, convert: Callable[[Message], Wire]):
        self._convert = convert
        self._entries: dict[int, tuple[Message, object, object, object, Wire]] = {}
        self._lock = threading.Lock()
        self.conversions = 0  # how many messages were converted (not taken from the cache)

    def forms(self, messages: list[Message]) -> list[Wire]:
        """The wire form of each of ``messages``, in order."""
        with self._lock:
            entries = self._entries
            forms: list[Wire] = []
            for message in messages:
                entry = entries.get(id(message))
                if (entry is None or entry[0] is not message or entry[1] is not message.text
                        or entry[2] is not message.tool_calls or entry[3] is not message.images):
                    form = self._convert(message)
                    self.conversions += 1
                    entries[id(message)] = (message, message.text, message.tool_calls, message.images, form)
                    forms.append(form)
                else:
                    forms.append(entry[4])
            if len(entries) > 2 * len(messages) + _SLACK:
                # What compaction replaced (and a summarizer's one-off messages) goes.
                self._entries = {id(m): entries[id(m)] for m in messages}
            return forms

    def __len__(self) -> int:
        return len(self._entries)
