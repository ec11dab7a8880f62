"""Layered compaction: pure functions over message lists; ``plan`` returns a result as data.

Layers (cheapest first): L1 ``clear_tool_results``, L2 ``summarize`` (model), L3 ``extractive``
(no model, when L2 fails), L4 ``drop_oldest`` (overflow), L5 ``collapse`` (one huge tool result).
"""

from mini_letta.compaction.record import CompactionRecord
from mini_letta.compaction.layers import (
    clear_tool_results, collapse_tool_results, drop_oldest_turns, extractive_summary, rebuild, summary_message,
)
from mini_letta.compaction.summarizer import SummaryUnavailable, summarise, summary_input
from mini_letta.compaction.transcript import middle_truncate, serialise
from mini_letta.compaction.turns import Cut, candidate_cuts, choose_cut

__all__ = [
    "CompactionRecord", "Cut", "SummaryUnavailable", "candidate_cuts", "choose_cut",
    "clear_tool_results", "collapse_tool_results", "drop_oldest_turns", "extractive_summary", "middle_truncate",
    "rebuild", "serialise", "summarise", "summary_input", "summary_message",
]
