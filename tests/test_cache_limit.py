"""The cache-share limit of ``benchmarks/cache_limit.py``: a case worked by hand, and the dynamic
programme against a plain simulation of every tail choice on small random workloads."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

# benchmarks/ is a folder of the repository, not an installed package.
sys.path.append(str(Path(__file__).resolve().parents[1]))
from benchmarks.cache_limit import Limit, Size, share_limit  # noqa: E402


def _four_steps(minimum: int) -> Limit:
    return share_limit([Size(10, 10)] * 4, floor=Size(10, 10), summary=Size(5, 5), instructions=Size(3, 3),
                       threshold=30, window=40, minimum=minimum)


def test_a_case_worked_by_hand():
    # 20 (nothing cached yet) → 30 (reads the 20) → 40 is over 30: the summarizer request carries
    # the 30 sent (30 + 3 + 5 fits 40) and reads it, 33 in all; the compacted request is floor +
    # summary + newest step, 25, read from nowhere (the floor, 10, is under the minimum 15; keeping
    # one more step would be 35, over the threshold) → 35 is over again: the summarizer reads the
    # 25 (28 in all), and the compacted request is 25 again.
    limit = _four_steps(minimum=15)
    assert (limit.input_tokens, limit.read_tokens, limit.requests, limit.compactions) == (161, 75, 6, 2)
    assert limit.share == pytest.approx(75 / 161)


def test_a_floor_at_the_minimum_is_read_by_every_request_after_the_first():
    # As above, but the floor (10) reaches the minimum: both compacted requests read it.
    limit = _four_steps(minimum=10)
    assert (limit.input_tokens, limit.read_tokens) == (161, 95)


def test_keeping_more_than_the_newest_step_is_chosen_when_it_reads_more():
    # 15, 20, 25 (each under the minimum of 21, so nothing is read), 30 (reads the 25), then 35 is
    # over 30. Keeping the newest step makes the compacted request 20 and the next one 25, which
    # reads nothing (20 < 21); keeping two steps makes them 25 and 30, which reads the 25.
    case = dict(floor=Size(10, 10), summary=Size(5, 5), instructions=None, threshold=30, window=100, minimum=21)
    best = share_limit([Size(5, 5)] * 6, **case)
    newest_only = share_limit([Size(5, 5)] * 6, min_freed=0.99, **case)  # a larger tail frees too little
    assert (newest_only.input_tokens, newest_only.read_tokens) == (135, 25)
    assert (best.input_tokens, best.read_tokens, best.compactions) == (145, 50, 1)


def _every_policy(steps, least, floor, summary, instructions, threshold, window, minimum, min_freed) -> float:
    """The best share found by simulating every choice of tail at every forced compaction."""
    floor_read = floor.wire if floor.wire >= minimum else 0
    shares = []

    def cached(size: Size) -> int:
        return size.wire if size.wire >= minimum else 0

    def run(index, kept, summarised, sent, figures):
        if index == len(steps):
            shares.append(figures.share)
            return
        context = floor + summary if summarised else floor
        for step, trimmed in kept:
            context = context + (least[step] if trimmed else steps[step])
        request = context + steps[index]
        if request.tokens > threshold and sent:
            if instructions is not None:
                fitting = [s for s in sent if s.tokens + instructions.tokens + summary.tokens <= window]
                prefix = max(fitting, key=lambda s: s.wire, default=floor)
                figures = figures + Limit(prefix.wire + instructions.wire, max(cached(prefix), floor_read), 1)
            pieces = kept + [(index, False)]
            for tail in [pieces[j:] for j in range(len(pieces))] + [[(index, True)]]:
                compacted = floor + summary
                for step, trimmed in tail:
                    compacted = compacted + (least[step] if trimmed else steps[step])
                if len(tail) > 1 and (compacted.tokens > threshold or compacted.tokens > request.tokens * (1 - min_freed)):
                    continue
                run(index + 1, tail, True, [compacted], figures + Limit(compacted.wire, floor_read, 1, 1))
            return
        read = max(cached(sent[-1]) if sent else 0, floor_read if index else 0)
        run(index + 1, kept + [(index, False)], summarised, sent + [request], figures + Limit(request.wire, read, 1))

    run(0, [], False, [], Limit())
    return max(shares)


@pytest.mark.parametrize("seed", range(3))
def test_the_limit_is_the_best_of_every_tail_choice(seed):
    rng = random.Random(seed)
    for _ in range(100):
        steps = [Size(t, rng.randint(t // 2, 2 * t)) for t in (rng.randint(1, 60) for _ in range(rng.randint(1, 8)))]
        least = None if rng.random() < 0.3 else [Size(rng.randint(0, s.tokens), rng.randint(0, s.wire)) for s in steps]
        floor, summary = Size(rng.randint(1, 40), rng.randint(1, 40)), Size(rng.randint(1, 30), rng.randint(1, 30))
        instructions = None if rng.random() < 0.2 else Size(rng.randint(1, 30), rng.randint(1, 30))
        threshold = rng.randint(60, 200)
        case = dict(floor=floor, summary=summary, instructions=instructions, threshold=threshold,
                    window=threshold + rng.randint(0, 80), minimum=rng.randint(1, 150),
                    min_freed=rng.choice([0.0, 0.05, 0.3]))
        limit = share_limit(steps, least=least, **case)
        assert limit.share == pytest.approx(_every_policy(steps, least or steps, **case), abs=1e-12)
