"""Context budget: token counting, window resolution, compaction threshold, levels.

The agent builds one :class:`ContextBudget` per session from :func:`counter_for_model` and
:func:`resolve_window`; compaction receives ``budget.measure`` bound to the current system prompt
and tools.
"""

from mini_letta.context.budget import ContextBudget, ContextState, Level, RequestSize, StepSize
from mini_letta.context.threshold import (
    compaction_reserve,
    compaction_threshold,
    output_reserve,
    should_compact,
)
from mini_letta.context.tokens import (
    IMAGE_TOKENS,
    TokenCounter,
    counter_for_model,
    encoding_for_model,
    estimate_chars,
)
from mini_letta.context.window import WindowInfo, resolve_window

__all__ = [
    "IMAGE_TOKENS",
    "ContextBudget",
    "ContextState",
    "RequestSize",
    "StepSize",
    "Level",
    "TokenCounter",
    "WindowInfo",
    "compaction_reserve",
    "compaction_threshold",
    "counter_for_model",
    "encoding_for_model",
    "estimate_chars",
    "output_reserve",
    "resolve_window",
    "should_compact",
]
