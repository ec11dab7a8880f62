"""The best prompt-cache share a compaction policy can reach on a workload: an upper bound.

``share_limit`` is pure; ``bench_cache`` feeds it the workload of its own session (the same turns,
the same message sizes, the same floor and summary) and prints it beside the measured share.

The model, for a prefix cache like Anthropic's (a prefix is cached only when it reaches
``minimum`` tokens, and a request reads only a prefix that an earlier request wrote):

- The session is a sequence of *steps*: what each chat request adds to the one before it (the
  user's message, a tool call with its result, the answer with the next message). Each step has a
  size as the threshold and window count it (``tokens``) and as the cache counts it (``wire``).
- Between compactions every request reads the whole previous request from the cache when that
  request reached ``minimum`` (as if a breakpoint ended every request and nothing before the newest
  step were ever rewritten); otherwise the floor, when it reaches ``minimum`` on its own.
- A compaction runs when the next request would pass ``threshold`` (seed 000's rule), never
  earlier. The summary is new each time (rewritten), and so is the tail kept after it: the
  compacted request reads only the floor. The policy chooses the tail: the least part of the
  newest step (``least``: its user message, the answer before it summarised), the whole newest
  step, or more of the newest steps, as long as the compacted request is under the threshold and
  at least ``min_freed`` smaller than the request it replaces. Every choice at every compaction
  is tried (dynamic programming over the tails, the best ratio by Dinkelbach's method).
- Each compaction's summarizer request is the cache-sharing one at its best: the largest request
  sent since the previous compaction that leaves room in ``window`` for the instructions and the
  summary, read whole from the cache, plus the instructions (new). ``instructions=None``: the
  workload has no summarizer requests.

A real policy reads no more: it cannot compact later than the threshold forces, cache a prefix
under ``minimum``, read a summary or a tail it has just placed after a new summary, or share more
with the summarizer than a request already sent. Left out: compacting before the threshold forces
it (a policy could then raise the share by sending more summarizer requests read from the cache,
spending tokens to do it); clearing old tool results in place (a compaction without a summary),
and clearing them inside a kept tail of several steps, which makes that tail smaller than this
model counts it. The steps are the workload as one session sent it: tool outputs already cut to
the room that session left them, the summary at its mean size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate


@dataclass(frozen=True)
class Size:
    tokens: int  # as the threshold and the window count it
    wire: int  # as the cache counts it

    def __add__(self, other: "Size") -> "Size":
        return Size(self.tokens + other.tokens, self.wire + other.wire)


@dataclass(frozen=True)
class Limit:
    input_tokens: int = 0
    read_tokens: int = 0
    requests: int = 0
    compactions: int = 0

    @property
    def share(self) -> float:
        return self.read_tokens / self.input_tokens if self.input_tokens else 0.0

    def __add__(self, other: "Limit") -> "Limit":
        return Limit(self.input_tokens + other.input_tokens, self.read_tokens + other.read_tokens,
                     self.requests + other.requests, self.compactions + other.compactions)


def share_limit(steps: Sequence[Size], *, floor: Size, summary: Size, instructions: Size | None,
                threshold: int, window: int, minimum: int, min_freed: float = 0.0,
                least: Sequence[Size] | None = None) -> Limit:
    """The upper bound of the module docstring for ``steps`` (one chat request each). ``least[i]``:
    the part of step ``i`` a compaction must keep when it is the newest (its user message, when
    the answer before it may be summarised; by default the whole step)."""
    graph = _graph(steps, list(steps) if least is None else list(least), floor, summary, instructions,
                   threshold, window, minimum, min_freed)
    best, ratio = _solve(graph, 0.0), -1.0
    while best.share > ratio + 1e-12:  # Dinkelbach: each policy found has a strictly better ratio
        ratio = best.share
        best = _solve(graph, ratio)
    return best


# A state: the compacted request kept steps ``start..compacted`` (``trimmed``: of step ``start`` only
# its least part); ``None`` is the start of the session. Figures are (input, read, requests, compactions).
State = tuple[int, int, bool] | None
Figures = tuple[int, int, int, int]


def _graph(steps: Sequence[Size], least: Sequence[Size], floor: Size, summary: Size, instructions: Size | None,
           threshold: int, window: int, minimum: int, min_freed: float
           ) -> list[tuple[State, Figures, list[tuple[Figures, State]]]]:
    """Every state, later ones first: the figures of its requests up to the next forced compaction
    (the summarizer's included) and the compacted requests it may go on with, each with its state."""
    n = len(steps)
    tokens = [0, *accumulate(s.tokens for s in steps)]
    wire = [0, *accumulate(s.wire for s in steps)]
    floor_read = floor.wire if floor.wire >= minimum else 0  # once a first request has written it
    whole = floor + summary

    def head(start: int, trimmed: bool) -> Size:
        """Floor and summary, less the part of step ``start`` left out (``trimmed``)."""
        if not trimmed:
            return whole
        return Size(whole.tokens - steps[start].tokens + least[start].tokens,
                    whole.wire - steps[start].wire + least[start].wire)

    def request(top: Size, start: int, last: int) -> Size:
        return Size(top.tokens + tokens[last + 1] - tokens[start], top.wire + wire[last + 1] - wire[start])

    def cycle(top: Size, start: int, compacted: int) -> tuple[Figures, int]:
        """The requests after ``compacted`` up to the next forced compaction (its index, or n)."""
        total = read = requests = 0
        base_tokens, base_wire = top.tokens - tokens[start], top.wire - wire[start]
        index = compacted + 1
        previous = base_wire + wire[index] if index - 1 >= max(start, compacted) else 0
        while index < n and (index == 0 or base_tokens + tokens[index + 1] <= threshold):
            sent = base_wire + wire[index + 1]
            total += sent
            read += max(previous if previous >= minimum else 0, floor_read if index > 0 else 0)
            requests += 1
            previous = sent
            index += 1
        if index < n and instructions is not None:
            room = window - instructions.tokens - summary.tokens - base_tokens
            fitting = [i for i in range(max(start, compacted, 0), index) if tokens[i + 1] <= room]
            prefix = base_wire + wire[fitting[-1] + 1] if fitting else floor.wire
            total += prefix + instructions.wire
            read += max(prefix if prefix >= minimum else 0, floor_read)
            requests += 1
        return (total, read, requests, 0), index

    def tails(compaction: int, first: int, first_trimmed: bool, replaced: Size) -> list[tuple[Figures, State]]:
        """The compacted requests at step ``compaction``: the least part of that step, or steps
        ``start..compaction`` for a ``start`` not before ``first`` (of which only the least part
        when it was left so at the previous compaction)."""
        options: list[tuple[Figures, State]] = []
        for start in range(compaction, first - 1, -1):
            for trimmed in ((True, False) if start == compaction else (start == first and first_trimmed,)):
                sent = request(head(start, trimmed), start, compaction)
                if start < compaction and (sent.tokens > threshold or sent.tokens > replaced.tokens * (1 - min_freed)):
                    return options  # keeping more only grows it
                options.append(((sent.wire, floor_read, 1, 1), (start, compaction, trimmed)))
        return options

    graph: list[tuple[State, Figures, list[tuple[Figures, State]]]] = []
    for compacted in range(n - 1, -1, -1):
        for trimmed in (True, False):
            for start in range(compacted, -1, -1):
                top = head(start, trimmed)
                if start < compacted and request(top, start, compacted).tokens > threshold:
                    break
                figures, forced = cycle(top, start, compacted)
                options = tails(forced, start, trimmed, request(top, start, forced)) if forced < n else []
                graph.append(((start, compacted, trimmed), figures, options))
    figures, forced = cycle(floor, 0, -1)
    graph.append((None, figures, tails(forced, 0, False, request(floor, 0, forced)) if forced < n else []))
    return graph


def _solve(graph: list[tuple[State, Figures, list[tuple[Figures, State]]]], ratio: float) -> Limit:
    """The figures of the policy maximising read − ratio × input over ``graph``."""
    best: dict[State, Figures] = {}
    for state, own, options in graph:
        if options:
            chosen = max(((a + c, b + d, e + f, g + h) for (a, b, e, g), next_state in options
                          for c, d, f, h in (best[next_state],)), key=lambda x: x[1] - ratio * x[0])
            own = (own[0] + chosen[0], own[1] + chosen[1], own[2] + chosen[2], own[3] + chosen[3])
        best[state] = own
    return Limit(*best[None])
