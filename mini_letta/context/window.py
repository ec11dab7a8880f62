"""Which context window a model has (seed 004's order).

1. ``CODEAGENT_MAX_CONTEXT_TOKENS`` (a positive whole number);
2. a ``[1m]`` suffix on the model name: 1,000,000;
3. the window the server reports serving the model with. For a local server this is the real
   limit even when small (Ollama serves at ``OLLAMA_CONTEXT_LENGTH``, often 4k), so unlike seed
   004 it is trusted at any size;
4. the longest key of ``mini_letta/data/model_windows.json`` contained in the model name;
5. 200,000.

Then ``CODEAGENT_MODEL_LIMIT`` replaces the result, and ``CODEAGENT_AUTO_COMPACT_WINDOW`` caps the
window that the compaction threshold is computed from (it never raises it).
``CODEAGENT_AUTO_COMPACT_PCT`` (or ``--compact-at``, which wins) puts the threshold at a percentage
of that window instead of the default (``compaction_trigger``). Bad values of these variables are
reported once and ignored.

A window from rule 5, or from the table for a server of the user's own (a custom base URL), is a
guess: ``WindowInfo.guessed`` says so and the status bar shows it as ``~200k?``. During a session
a rejection that names the server's limit replaces the window (``learned``), whatever rule gave it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import lru_cache

from mini_letta.notices import Say, quiet
from mini_letta.config import env_positive_int, percent
from mini_letta.context.threshold import compaction_trigger
from mini_letta.resources import data
from mini_letta.settings import SETTINGS

ONE_MILLION = 1_000_000
ONE_MILLION_SUFFIX = "[1m]"


@dataclass(frozen=True)
class WindowInfo:
    """``window``: the limit a request must fit in. ``model_limit``: what the server or the table
    says the model has, None when unknown (default or an override decided). ``auto_compact_window``:
    the window the compaction threshold is computed from (≤ ``window``). ``compact_percent``: the
    user's trigger point as a percentage of it, None for the default formula; ``compact_percent_from``
    the setting that chose it (``--compact-at`` or ``CODEAGENT_AUTO_COMPACT_PCT``), for messages."""

    window: int
    source: str
    model_limit: int | None
    auto_compact_window: int
    guessed: bool = False
    compact_percent: float | None = None
    compact_percent_from: str = ""

    @property
    def threshold(self) -> int:
        return compaction_trigger(self.window, self.auto_compact_window, self.compact_percent)

    def learned(self, limit: int) -> WindowInfo:
        """This window after a server rejected a request and named ``limit`` as its window."""
        # Quietly: resolve_window read the same variable and said what was wrong with it.
        cap = env_positive_int("CODEAGENT_AUTO_COMPACT_WINDOW", say=quiet)
        return replace(self, window=limit, source=LEARNED_SOURCE, model_limit=limit, guessed=False,
                       auto_compact_window=min(limit, cap) if cap is not None else limit)


LEARNED_SOURCE = "learned from the server's rejection"


def split_one_million_suffix(model: str) -> tuple[str, bool]:
    """The model id to send and whether the name asked for the 1M-token window (``name[1m]``):
    the suffix is ours, no API knows it."""
    stripped = model.strip()
    if stripped.lower().endswith(ONE_MILLION_SUFFIX):
        return stripped[: -len(ONE_MILLION_SUFFIX)].rstrip(), True
    return model, False


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


def resolve_window(model: str, served_window: int | None = None, *, served_source: str | None = None,
                   custom_server: bool = False, compact_at: str | None = None, say: Say = quiet) -> WindowInfo:
    """``served_source`` names where a served window came from ("llama.cpp /props n_ctx");
    ``custom_server`` is true for a base URL of the user's own, where the table is only a guess;
    ``compact_at`` is the raw ``--compact-at`` value, if given; a bad setting is said through ``say``."""
    served = served_window if isinstance(served_window, int) and served_window > 0 else None
    match = table_window(model)
    model_limit = served if served is not None else (match[1] if match else None)

    guessed = False
    env_window = env_positive_int("CODEAGENT_MAX_CONTEXT_TOKENS", say=say)
    if env_window is not None:
        window, source = env_window, "CODEAGENT_MAX_CONTEXT_TOKENS"
    elif model.strip().lower().endswith(ONE_MILLION_SUFFIX):
        window, source = ONE_MILLION, "model name suffix [1m]"
    elif served is not None:
        window, source = served, f"served by the server ({served_source})" if served_source else "served by the provider"
    elif match is not None:
        window, source = match[1], f"built-in table ({match[0]})"
        guessed = custom_server
    else:
        window, source = SETTINGS.default_window, "default"
        guessed = True

    override = env_positive_int("CODEAGENT_MODEL_LIMIT", say=say)
    if override is not None:
        window, source, guessed = override, "CODEAGENT_MODEL_LIMIT", False

    cap = env_positive_int("CODEAGENT_AUTO_COMPACT_WINDOW", say=say)
    auto_compact_window = min(window, cap) if cap is not None else window
    chosen, chosen_by = ((percent(compact_at, "--compact-at", say=say), "--compact-at") if compact_at is not None
                         else (None, ""))
    if chosen is None:
        chosen_by = "CODEAGENT_AUTO_COMPACT_PCT"
        chosen = percent(os.environ.get(chosen_by), chosen_by, say=say)
    return WindowInfo(window=window, source=source, model_limit=model_limit, auto_compact_window=auto_compact_window,
                      guessed=guessed, compact_percent=chosen, compact_percent_from=chosen_by if chosen is not None else "")
