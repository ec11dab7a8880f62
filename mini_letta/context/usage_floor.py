"""The floor (system prompt and tool schemas) as a server counts it, read off its usage reports.

A server that cannot count the floor for us (no ``/tokenize``: a LiteLLM proxy, a hosted API) still
reports the size of every request. For two replies with the same floor, the difference in size is
the difference in messages: the slope of the line through them is the server's tokens per token of
ours in messages, and its intercept is the floor as the server counts it. That matters where one
ratio for the whole request is wrong for each part: SmolLM2's template drops the tool schemas, so a
whole-request ratio of 0.5 undercounts prose by half, and the summarizer's request, which has no
tools, was rejected for it (2,221 tokens where we counted 1,810).

Floors are told apart by a digest of their text, kept with each reply, so a resumed session (each
``-p -c`` turn is a new process) replays the replies it has.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from mini_letta.messages import ToolSpec
from mini_letta.settings import SETTINGS


def floor_digest(system: str, tools: list[ToolSpec]) -> str:
    """Names one floor across processes (stored with each reply as ``floor_digest``)."""
    schemas = json.dumps([[t.name, t.description, t.parameters] for t in tools], sort_keys=True)
    return hashlib.sha256(f"{system}\0{schemas}".encode()).hexdigest()[:16]


@dataclass
class Inference:
    floor: int
    slope: float | None  # the message ratio, when this inference measured it


@dataclass
class UsageFloors:
    samples: list[tuple[str, int, int]] = field(default_factory=list)  # digest, our message tokens, reported
    floors: list[tuple[str, int]] = field(default_factory=list)  # digest, the floor as usage showed it

    def known(self, digest: str) -> int | None:
        return next((floor for known, floor in reversed(self.floors) if known == digest), None)

    def infer(self, digest: str, reported: int, messages: int, message_ratio: float | None, *,
              slope_range: tuple[float, float]) -> Inference | None:
        """Read the floor off one reply: ``reported`` less its messages at ``message_ratio`` when
        that is known, else the intercept of the line through an earlier reply with the same floor
        and messages far enough apart (its slope within ``slope_range``). Records the reply either
        way; None while usage cannot tell."""
        result: Inference | None = None
        if message_ratio is not None:
            result = Inference(reported - round(messages * message_ratio), None)
        else:
            earlier = next(((local, tokens) for known, local, tokens in reversed(self.samples)
                            if known == digest and abs(messages - local) >= SETTINGS.usage_floor_min_slope_sample_tokens), None)
            if earlier is not None:
                slope = (reported - earlier[1]) / (messages - earlier[0])
                if slope_range[0] <= slope <= slope_range[1]:
                    result = Inference(round(reported - slope * messages), slope)
        self.samples = self.samples[-(SETTINGS.usage_floor_samples - 1):] + [(digest, messages, reported)]
        if result is None or not 0 < result.floor <= reported:
            return None
        self.remember(digest, result.floor)
        return result

    def remember(self, digest: str, floor: int) -> None:
        self.floors = [(known, f) for known, f in self.floors if known != digest][-(SETTINGS.usage_floor_floors - 1):]
        self.floors.append((digest, floor))
