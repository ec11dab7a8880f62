"""Seed 000's compaction threshold, exactly, and the reply's reserve."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_letta.context import compaction_reserve, compaction_threshold, output_reserve, should_compact


@pytest.mark.parametrize(
    ("window", "threshold"),
    [
        (200_000, 183_616),
        (32_000, 25_600),
        (2_000, 1_600),
        (8_192, 6_554),
        (128_000, 111_616),
        (1_000_000, 983_616),
        (81_920, 65_536),  # 20% is exactly 16,384: both arms of min() agree
    ],
)
def test_threshold_matches_seed_table(window, threshold):
    assert compaction_threshold(window) == threshold


def test_window_of_one_keeps_a_reserve_of_one_and_threshold_zero():
    assert compaction_reserve(1) == 1
    assert compaction_threshold(1) == 0
    assert should_compact(1, 1)
    assert not should_compact(0, 1)


@pytest.mark.parametrize("window", [0, -1, -200_000, math.nan, math.inf, -math.inf, None, "200000", True])
def test_invalid_window_has_no_threshold_and_never_compacts(window):
    assert compaction_threshold(window) is None
    assert should_compact(10**9, window) is False


@pytest.mark.parametrize("window", [200_000, 32_000, 2_000, 8_192])
def test_should_compact_is_strictly_greater_than_threshold(window):
    threshold = compaction_threshold(window)
    assert not should_compact(threshold, window)
    assert should_compact(threshold + 1, window)


def test_fractional_window_uses_the_floor_of_its_reserve():
    # 1000.9 * 0.2 = 200.18 -> reserve 200; threshold of the whole-token window 1000 - 200.
    assert compaction_threshold(1000.9) == 800


@pytest.mark.parametrize(
    ("window", "reserve"),
    [(200_000, 8_192), (65_536, 8_192), (32_768, 4_096), (4_096, 512), (2_000, 256), (1_000, 200), (1, 1)],
)
def test_output_reserve_is_an_eighth_between_256_and_8192_within_the_compaction_reserve(window, reserve):
    assert output_reserve(window) == reserve


@given(st.integers(min_value=1, max_value=10_000_000))
def test_request_at_threshold_plus_full_reply_always_fits(window):
    assert compaction_threshold(window) + output_reserve(window) <= window
    assert output_reserve(window) >= 1
