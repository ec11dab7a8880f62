"""A provider that replays a queue of replies: for tests and simulations, never for users.

Each queued item is one of:
- ``str``: an assistant text reply;
- ``Message``: an assistant message as is (tool calls, usage, ...);
- ``BaseException`` instance: raised when the request arrives;
- ``callable(request) -> str | Message``: computed from the request.

Like a real server, it can refuse requests larger than ``window`` with ``ContextOverflowError`` and
report usage computed by ``count`` so that usage anchoring is exercised. ``floor``, when given,
answers ``served_floor`` as a llama.cpp server does (its own count of system prompt and tools). As vLLM, TGI and OpenAI do,
it counts the prompt *plus* ``max_tokens`` against the window (``reply_counts``), in llama.cpp's
words, so a harness that forgets the reply's room is rejected.
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Callable, Iterable, Iterator, Union

from mini_letta import endings
from mini_letta.errors import ContextOverflowError
from mini_letta.messages import Message, ToolSpec, Usage
from mini_letta.providers.base import Done, Request, StreamEvent, TextDelta, ToolCallStarted
from mini_letta.providers.probe import ServedFloor

_ENDINGS = {"max_tokens": endings.MAX_TOKENS, "length": endings.MAX_TOKENS, "refusal": endings.REFUSAL,
            "content_filter": endings.CONTENT_FILTER}

Reply = Union[str, Message, BaseException, Callable[[Request], Union[str, Message]]]


class ScriptedProvider:
    name = "scripted"

    def __init__(self, replies: Iterable[Reply] = (), *, model: str = "scripted",
                 window: int | None = None, count: Callable[[Request], int] | None = None,
                 default: Reply | None = None, chunk_size: int = 8, reply_counts: bool = True,
                 floor: Callable[[str, list[ToolSpec]], ServedFloor] | None = None):
        self.model = model
        self.replies: deque[Reply] = deque(replies)
        self.requests: list[Request] = []
        self.window = window
        self.served_window_source = "scripted" if window is not None else None
        self.count = count
        self.default = default
        self.chunk_size = chunk_size
        self.reply_counts = reply_counts
        self.overflows = 0
        self.floor = floor
        self.floor_questions = 0

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def served_window(self) -> int | None:
        return self.window

    def served_floor(self, system: str, tools: list[ToolSpec]) -> ServedFloor | None:
        if self.floor is None:
            return None
        self.floor_questions += 1
        return self.floor(system, tools)

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        # Keep a snapshot: the agent mutates its lists after the call (compaction, appends).
        self.requests.append(copy.deepcopy(request))
        prompt_tokens = self.count(request) if self.count else None
        needed = None if prompt_tokens is None else prompt_tokens + (request.max_tokens if self.reply_counts else 0)
        if self.window is not None and needed is not None and needed > self.window:
            self.overflows += 1
            raise ContextOverflowError(
                f"request ({needed} tokens) exceeds the available context size ({self.window} tokens), "
                f"try increasing it", provider=self.name, status=400, limit=self.window, actual=prompt_tokens)
        reply = self._next_reply()
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(request)
        message = Message.assistant(reply) if isinstance(reply, str) else copy.deepcopy(reply)
        if message.usage is None and prompt_tokens is not None:
            output = max(1, len(message.text) // 4)
            message.usage = Usage(input_tokens=prompt_tokens, output_tokens=output)
        message.stop_reason = message.stop_reason or ("tool_use" if message.tool_calls else "end_turn")
        # A scripted Message may name its ending itself, or by either API's stop reason.
        endings.mark(message, message.meta.get("stop_reason") or _ENDINGS.get(message.stop_reason, endings.END))
        for start in range(0, len(message.text), self.chunk_size):
            yield TextDelta(message.text[start:start + self.chunk_size])
        for call in message.tool_calls:
            yield ToolCallStarted(call.id, call.name)
        yield Done(message)

    def _next_reply(self) -> Reply:
        if self.replies:
            return self.replies.popleft()
        if self.default is not None:
            return self.default
        raise AssertionError("ScriptedProvider ran out of replies")
