"""Where mini-letta keeps its files, and reading numeric settings from the environment.

Bad values (non-numeric, zero, negative) are reported once, through :func:`take_notices`, and
ignored: a typo in an environment variable never crashes the program.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

_notices: list[str] = []
_reported: set[tuple[str, str]] = set()


def home() -> Path:
    """The user data folder: ``$MINI_LETTA_HOME``, else the platform's user data dir."""
    override = os.environ.get("MINI_LETTA_HOME")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("mini-letta", appauthor=False))


def notice(text: str) -> None:
    """Queue a one-line message for the user (shown by the CLI or REPL)."""
    _notices.append(text)


def take_notices() -> list[str]:
    """Messages queued since the last call."""
    taken = list(_notices)
    _notices.clear()
    return taken


def env_positive_int(name: str) -> int | None:
    """The value of ``name`` as a positive integer, or None when unset, empty or invalid."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw.replace("_", "").replace(",", ""))
    except ValueError:
        value = math.nan
    if math.isfinite(value) and value >= 1 and value == int(value):
        return int(value)
    if (name, raw) not in _reported:
        _reported.add((name, raw))
        notice(f"Ignoring {name}={raw!r}: it must be a positive whole number of tokens.")
    return None


def env_flag(name: str) -> bool:
    """True when the variable is set to any non-empty value (``CODEAGENT_DISABLE_COMPACT``)."""
    return bool(os.environ.get(name, "").strip())
