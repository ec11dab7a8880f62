"""When to compact, and how much room the reply keeps (seed 000, exact).

The reserve is the room kept free below the window: 16,384 tokens, or 20% of a small window.
Compaction runs *before* a request whose estimate is strictly greater than the threshold, because
some client layers shrink ``max_tokens`` to squeeze a near-full request in: it then stops mid-answer
with a ``length`` finish that no overflow handler ever sees.

``CODEAGENT_AUTO_COMPACT_PCT`` (or ``--compact-at``) moves the threshold to a percentage of the
window, lower or higher than this default, but never above the window less the reply's room, so a
request at the threshold still leaves a whole reply room (``compaction_trigger``).

A window that is not a positive finite number (unknown, 0, negative, NaN, infinity) has no
threshold: ``compaction_threshold`` returns None and ``should_compact`` is False, so a missing
window never triggers a compaction loop. Callers resolve a real window first (``resolve_window``
always yields one).
"""

from __future__ import annotations

import math
from mini_letta.settings import SETTINGS


def _valid_window(window: object) -> bool:
    if isinstance(window, bool) or not isinstance(window, (int, float)):
        return False
    return math.isfinite(window) and window > 0


def compaction_reserve(window: float) -> int | None:
    """Tokens kept free below ``window``: ``min(16384, max(1, floor(window * 0.2)))``."""
    if not _valid_window(window):
        return None
    return min(SETTINGS.compaction_reserve_tokens, max(1, math.floor(window * SETTINGS.small_window_reserve_ratio)))


def compaction_threshold(window: float) -> int | None:
    """The largest request (in tokens) sent without compacting first; None for an invalid window."""
    reserve = compaction_reserve(window)
    if reserve is None:
        return None
    return max(0, math.floor(window) - reserve)


def should_compact(tokens: int, window: float) -> bool:
    """True when a request of ``tokens`` is strictly larger than the threshold of ``window``."""
    threshold = compaction_threshold(window)
    return threshold is not None and tokens > threshold


def output_reserve(window: float) -> int:
    """Tokens kept for the reply (the request's ``max_tokens``); at least 1 for any window."""
    if not _valid_window(window):
        return SETTINGS.output_reserve_max
    reserve = min(SETTINGS.output_reserve_max, max(SETTINGS.output_reserve_min, math.floor(window) // SETTINGS.output_reserve_fraction))
    return max(1, min(reserve, compaction_reserve(window) or 1))


def compaction_trigger(window: int, auto_compact_window: int, percent: float | None = None) -> int:
    """The threshold actually used: the seed formula on the (possibly capped) window, or ``percent``
    of it when the user chose one, clamped to ``window - output_reserve(window)``."""
    base = min(window, auto_compact_window)
    if percent is None:
        return compaction_threshold(base) or 0
    if not _valid_window(base):
        return 0
    return max(0, min(math.floor(base * percent / 100), math.floor(window) - output_reserve(window)))
