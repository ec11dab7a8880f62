"""Which context window a model has (seed 004's order).

1. ``CODEAGENT_MAX_CONTEXT_TOKENS`` (a positive whole number);
2. a ``[1m]`` suffix on the model name: 1,000,000;
3. the window the server reports serving the model with. For a local server this is the real
   limit even when small (Ollama serves at ``OLLAMA_CONTEXT_LENGTH``, often 4k), so unlike seed
   004 it is trusted at any size;
4. the longest key of ``mini_letta/data/model_windows.json`` contained in the model name;
5. 200,000.

Then ``CODEAGENT_MODEL_LIMIT`` replaces the result, and ``CODEAGENT_AUTO_COMPACT_WINDOW`` caps the
window that the compaction threshold is computed from (it never raises it). Bad values of these
variables are reported once and ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from mini_letta.config import env_positive_int
from mini_letta.context.threshold import compaction_threshold
from mini_letta.resources import data

DEFAULT_WINDOW = 200_000
ONE_MILLION = 1_000_000
ONE_MILLION_SUFFIX = "[1m]"


@dataclass(frozen=True)
class WindowInfo:
    """``window``: the limit a request must fit in. ``model_limit``: what the server or the table
    says the model has, None when unknown (default or an override decided). ``auto_compact_window``:
    the window the compaction threshold is computed from (≤ ``window``)."""

    window: int
    source: str
    model_limit: int | None
    auto_compact_window: int

    @property
    def threshold(self) -> int:
        return compaction_threshold(self.auto_compact_window) or 0


@lru_cache(maxsize=1)
def _table() -> tuple[tuple[str, int], ...]:
    windows = data("model_windows.json")["windows"]
    # Longest key first, so the first match is the most specific family.
    return tuple(sorted(((k.lower(), int(v)) for k, v in windows.items()), key=lambda kv: -len(kv[0])))


def table_window(model: str) -> tuple[str, int] | None:
    """The (key, window) of the longest table key found in ``model``, if any."""
    name = model.lower()
    for key, window in _table():
        if key in name:
            return key, window
    return None


def resolve_window(model: str, served_window: int | None = None) -> WindowInfo:
    served = served_window if isinstance(served_window, int) and served_window > 0 else None
    match = table_window(model)
    model_limit = served if served is not None else (match[1] if match else None)

    env_window = env_positive_int("CODEAGENT_MAX_CONTEXT_TOKENS")
    if env_window is not None:
        window, source = env_window, "CODEAGENT_MAX_CONTEXT_TOKENS"
    elif model.strip().lower().endswith(ONE_MILLION_SUFFIX):
        window, source = ONE_MILLION, "model name suffix [1m]"
    elif served is not None:
        window, source = served, "served by the provider"
    elif match is not None:
        window, source = match[1], f"built-in table ({match[0]})"
    else:
        window, source = DEFAULT_WINDOW, "default"

    override = env_positive_int("CODEAGENT_MODEL_LIMIT")
    if override is not None:
        window, source = override, "CODEAGENT_MODEL_LIMIT"

    cap = env_positive_int("CODEAGENT_AUTO_COMPACT_WINDOW")
    auto_compact_window = min(window, cap) if cap is not None else window
    return WindowInfo(window=window, source=source, model_limit=model_limit, auto_compact_window=auto_compact_window)
