"""How the provider counts what we count: the learned ratio, the served floor, the usage floor.

The local tokenizer is not the provider's (o200k stands in for Claude's), so the ratio
provider/local is learned over the session and applied to what is counted locally. The floor
(system prompt and tool schemas) is where a server's chat template can differ from our count by
far more than a tokenizer ratio: SmolLM2's template under llama.cpp leaves the tool schemas out
entirely. When the server can count the floor itself (llama.cpp's ``/apply-template`` and
``/tokenize``, ``providers/probe.py``), its count is used as is and the ratio is learned from the
messages alone. Otherwise its usage reports tell the floor apart: two replies with the same floor
and messages of different sizes give the ratio for messages (the slope) and the floor as the server
counts it (the intercept, ``usage_floor.py``); from then on one reply is enough for each new floor.
A floor not sent yet is scaled by how the server counted the last one. Before two such replies,
one ratio covers the whole request.

The window learned from a rejection is kept by ``ContextBudget.learn_window`` (``WindowInfo``).
"""

from __future__ import annotations

import math
from typing import Callable, Protocol

from mini_letta.context.tokens import TokenCounter
from mini_letta.context.usage_floor import UsageFloors, floor_digest
from mini_letta.messages import Message, ToolSpec
from mini_letta.settings import SETTINGS


class ServedFloor(Protocol):
    tokens: int  # the server's count of system prompt + tool schemas, as its template renders them
    system_text: int  # the server's count of the system prompt's bare text


FloorCounter = Callable[[str, list[ToolSpec]], "ServedFloor | None"]


def _floor_key(system: str, tools: list[ToolSpec]) -> tuple:
    return (system, [(t.name, t.description, t.parameters) for t in tools])


class Calibration:
    """Our counts turned into the provider's: ``floor`` (local, memoised), ``floor_calibrated`` and
    ``calibrated`` (as the provider counts), and what each reply or rejection teaches
    (``observe_request``, ``observe``, ``calibrate_from`` for a resumed session).

    Reads never write: only ``ask_server``, ``observe_request``, ``observe`` and ``calibrate_from``
    change what it has learned, and the loop calls them from one owner, ``loop/sizing.py``
    ``RequestMeasure`` (``step_size``, ``learn_from_reply``, ``learn_from_rejection``, ``resume``)."""

    def __init__(self, counter: TokenCounter, floor_counter: FloorCounter | None = None):
        self.counter = counter
        # Asks the server to count the floor (the provider's ``served_floor``); None: nobody to ask.
        self.floor_counter = floor_counter
        self.ratio = 1.0
        self.ratio_learned = False
        # (key, tokens, digest) of the last floor counted, replaced as one value: the ahead-of-time
        # thread and the status bar read it while the loop may count another floor. The key is
        # compared with ==, never hashed.
        self._floor_memo: tuple[tuple | None, int, str] = (None, 0, "")
        # ((key, the server's answer), ...): the floors asked, newest first, replaced as one value like
        # ``_floor_memo`` (the usual floor and the compact one sent in a small window, memory edits).
        self._served_memo: tuple[tuple[tuple, ServedFloor | None], ...] = ()
        # Without a server to count the floor, its usage reports show it (``usage_floor.py``).
        self._usage_floors = UsageFloors()
        # True once ``ratio`` was learned net of a floor the server counted (or usage showed).
        self.message_ratio = False
        # The server's floor over ours, from the last floor it counted or usage showed: scales a
        # floor not sent yet (a template that drops the tools shrinks every floor alike).
        self._floor_ratio: float | None = None

    def floor(self, system: str, tools: list[ToolSpec]) -> int:
        """Tokens of system prompt and tool schemas, paid on every request, counted locally; memoised
        by value, since callers rebuild the tool list each time (comparing is far cheaper than
        re-encoding)."""
        return self._floor_entry(system, tools)[1]

    def _floor_entry(self, system: str, tools: list[ToolSpec]) -> tuple[tuple | None, int, str]:
        key, memo = _floor_key(system, tools), self._floor_memo
        if key != memo[0]:
            memo = (key, self.counter.count_system(system) + self.counter.count_tools(tools),
                    floor_digest(system, tools))
            self._floor_memo = memo
        return memo

    def floor_digest(self, system: str, tools: list[ToolSpec]) -> str:
        """Names this floor across processes (kept with each reply, for ``calibrate_from``)."""
        return self._floor_entry(system, tools)[2]

    def served_floor(self, system: str, tools: list[ToolSpec]) -> int | None:
        """The floor as the server counts it: its own count, when it was asked for this floor
        (``ask_server``), else what its usage reports showed for this floor. A read: it asks
        nothing and changes nothing (the status bar and ``/context`` read it while a turn runs)."""
        served = self.served_answer(system, tools)
        if served is not None:
            return served.tokens
        return self._usage_floors.known(self.floor_digest(system, tools))

    def served_answer(self, system: str, tools: list[ToolSpec]) -> ServedFloor | None:
        """The server's count of this floor when it was asked for it (None: not asked, none to ask,
        or no answer). A read."""
        key = _floor_key(system, tools)
        return next((answer for asked, answer in self._served_memo if asked == key), None)

    def ask_server(self, system: str, tools: list[ToolSpec]) -> None:
        """Ask the server to count this floor, once per floor (``loop/sizing.py`` does, before a
        call is sized, and the assembly, before it offers its optional tools). Its first answer,
        before any usage, also sets the tokenizer ratio from its count of the system prompt's text."""
        if self.floor_counter is None:
            return
        key = _floor_key(system, tools)
        if any(asked == key for asked, _ in self._served_memo):
            return
        served = self.floor_counter(system, tools)
        self._served_memo = ((key, served),) + self._served_memo[:SETTINGS.usage_floor_floors - 1]
        if served is not None:
            self._floor_ratio = served.tokens / max(1, self.floor(system, tools))
            if not self.ratio_learned:
                self.observe(served.system_text, self.counter.count_text(system), weight=1.0)

    def floor_counted_by_server(self, system: str, tools: list[ToolSpec]) -> bool:
        """True when ``served_floor`` is the server's own count, False when usage showed it."""
        return self.served_answer(system, tools) is not None

    def calibrated(self, tokens: int) -> int:
        return math.ceil(tokens * self.ratio)

    def count_message(self, message: Message) -> int:
        """One message as the provider would count it (requests we build ourselves: the summary's)."""
        return self.calibrated(self.counter.count_message(message))

    def count_text(self, text: str) -> int:
        return self.calibrated(self.counter.count_text(text))

    def request(self, system: str, tools: list[ToolSpec], messages: list[Message]) -> int:
        """A whole request of ``messages`` as the provider would count it, floor included (the size
        of a candidate list: compaction's ``measure``)."""
        return self.floor_calibrated(system, tools) + self.calibrated(self.counter.count_messages(messages))

    def floor_calibrated(self, system: str, tools: list[ToolSpec]) -> int:
        """The floor as the provider counts it: its own count or what usage showed, else ours
        scaled as the server counted the last floor it saw, else ours calibrated."""
        served = self.served_floor(system, tools)
        if served is not None:
            return served
        if self._floor_ratio is not None:
            return math.ceil(self.floor(system, tools) * self._floor_ratio)
        return self.calibrated(self.floor(system, tools))

    def observe_request(self, reported_prompt_tokens: int, system: str, tools: list[ToolSpec],
                        local_message_tokens: int, *, weight: float = SETTINGS.calibration_smoothing) -> None:
        """Learn the ratio from the provider's size of a whole request: from its messages alone when
        the floor is known as the server counts it (its own count, or shown by usage), else from the
        whole request."""
        answer = self.served_answer(system, tools)
        if answer is not None:  # the server's own count
            self._observe_messages(reported_prompt_tokens - answer.tokens, local_message_tokens, weight)
            return
        self._observe_usage(self.floor_digest(system, tools), self.floor(system, tools), reported_prompt_tokens,
                            local_message_tokens, weight)

    def _observe_messages(self, reported_messages: int, local_messages: int, weight: float) -> None:
        if local_messages >= SETTINGS.min_ratio_sample_tokens:
            self.observe(reported_messages, local_messages, weight=weight)
            self.message_ratio = True

    def _observe_usage(self, digest: str, local_floor: int, reported: int, local_messages: int,
                       weight: float) -> None:
        """One reply from a server that does not count the floor for us: the floor its usage shows
        (``usage_floor.py``), and the ratio from the messages net of it; else from the whole request."""
        served = self._usage_floors.known(digest)
        if served is None:
            inferred = self._usage_floors.infer(digest, reported, local_messages,
                                                self.ratio if self.message_ratio else None,
                                                slope_range=(SETTINGS.calibration_min, SETTINGS.calibration_max))
            if inferred is not None:
                served = inferred.floor
                self._floor_ratio = served / max(1, local_floor)
                if inferred.slope is not None:
                    self.ratio, self.ratio_learned, self.message_ratio = inferred.slope, True, True
            elif self.message_ratio and self._floor_ratio is not None:
                # Usage did not show this floor (an odd reply): keep the ratio one for messages,
                # net of the floor scaled as the last one was.
                served = math.ceil(local_floor * self._floor_ratio)
        if served is None:
            self.observe(reported, local_floor + local_messages, weight=weight)
        else:
            self._observe_messages(reported - served, local_messages, weight)

    def calibrate_from(self, messages: list[Message]) -> None:
        """Start from what a resumed session had learned, replaying its newest replies that recorded
        both the provider's prompt size and our count of the same request (and of its floor, by us
        and, when it was known, as the server counts it): the ratio of the newest, and the floors
        that usage shows, which take two replies with the same floor (``usage_floor.py``)."""
        replies = [m for m in messages if m.usage is not None and not m.usage.is_empty
                   and isinstance(m.meta.get("local_prompt_tokens"), int)]
        for message in replies[-SETTINGS.usage_floor_samples:]:
            assert message.usage is not None
            local, reported = message.meta["local_prompt_tokens"], message.usage.prompt_tokens
            served, floor = message.meta.get("served_floor_tokens"), message.meta.get("floor_tokens")
            digest = message.meta.get("floor_digest")
            if not isinstance(floor, int):
                self.observe(reported, local, weight=1.0)
            elif isinstance(served, int):
                if isinstance(digest, str):
                    self._usage_floors.remember(digest, served)
                self._floor_ratio = served / max(1, floor)
                self._observe_messages(reported - served, local - floor, 1.0)
            elif isinstance(digest, str):
                self._observe_usage(digest, floor, reported, local - floor, 1.0)
            else:
                self.observe(reported, local, weight=1.0)

    def observe(self, reported_prompt_tokens: int, local_prompt_tokens: int, *,
                weight: float = SETTINGS.calibration_smoothing) -> None:
        """Learn provider/local from one request: the provider's size of it and our count of it.
        Replies move the ratio gently; a rejection (``weight`` 1) sets it, since the next request
        must fit by the server's count, not by an average."""
        if reported_prompt_tokens <= 0 or local_prompt_tokens <= 0:
            return
        sample = min(SETTINGS.calibration_max, max(SETTINGS.calibration_min, reported_prompt_tokens / local_prompt_tokens))
        self.ratio += weight * (sample - self.ratio)
        self.ratio_learned = True
