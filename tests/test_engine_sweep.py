"""The sweep (issue 46, ``tests/sweep_support.py``): windows of 2k to 200k, given or learned, a server
counting 0.8-1.5x ours with or without ``max_tokens``, six summarizers, new and repeated reads. Every
run finishes or stops with a reason that is true; none stops while room could be made."""

from __future__ import annotations

import itertools

import pytest

from sweep_support import READS, RATIOS, SUMMARIZERS, WINDOWS, Case, problem, run


@pytest.mark.parametrize("summarizer, reads", list(itertools.product(SUMMARIZERS, READS)))
def test_every_window_and_server_finishes_or_stops_for_a_true_reason(tmp_path, summarizer, reads):
    wrong = []
    for index, (window, given, ratio, counts) in enumerate(itertools.product(WINDOWS, (True, False), RATIOS,
                                                                            (True, False))):
        workspace = tmp_path / str(index)
        workspace.mkdir()
        outcome = run(Case(window, given, ratio, counts, summarizer, reads), workspace)
        why = problem(outcome)
        if why:
            wrong.append(f"{outcome.case.name}: {why}")
        if reads == "distinct":  # new work every step: it must finish
            assert outcome.stopped == "done" or why, outcome
    assert wrong == []


def test_the_verdict_catches_an_untrue_stop(tmp_path):
    """The sweep's judge is no rubber stamp: a breaker stop on new work and a repetition stop on new
    reads are both wrong."""
    from sweep_support import Outcome

    case = Case(8_000, True, 1.0, True, "good", "distinct")
    assert problem(Outcome(case, "breaker", "…", 3, 3, 0))
    assert problem(Outcome(case, "no_progress", "…", 3, 1, 0))
    assert problem(Outcome(case, "floor", "…", 0, 0, 0, floor=1_000, limit=6_400))
    assert problem(Outcome(Case(8_000, True, 1.0, True, "good", "repeated"), "no_progress", "…", 3, 1, 0)) is None
