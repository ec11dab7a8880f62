"""Network settings shared by the providers, chosen so a stalled server is noticed and a transient
failure is retried.

Connect timeout 10 s, read timeout 120 s (slow local models pause long between tokens), two
retries, made by our code (``providers/retry.py``: exponential back-off, ``retry-after`` honoured,
each retry reported as a stream event) rather than inside an SDK, which would retry in silence.
``timeout`` sets the read timeout (the connect timeout never exceeds it), which is also the longest
wait between two events of a stream; ``max_retries`` the retry count; ``MINI_LETTA_REPLY_DEADLINE``
the seconds a whole reply may take (30 minutes by default), whatever keeps its connection busy. A
module of its own so that the factory (the package) and the providers it creates both import it,
not each other.
"""

from __future__ import annotations

import math
import os
from typing import Any

from mini_letta.notices import Say, quiet
from mini_letta.settings import SETTINGS


def env_timeout(say: Say = quiet) -> float | None:
    """``MINI_LETTA_TIMEOUT`` as positive seconds, or None (the default) when unset or invalid."""
    return _env_seconds("MINI_LETTA_TIMEOUT", say)


def _env_seconds(name: str, say: Say) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and value > 0:
        return value
    say(_ignored(name, raw, "a positive number of seconds"))
    return None


def env_reply_deadline(say: Say = quiet) -> float | None:
    """``MINI_LETTA_REPLY_DEADLINE`` as positive seconds, or None (the default) when unset or invalid."""
    return _env_seconds("MINI_LETTA_REPLY_DEADLINE", say)


def reply_deadline(say: Say = quiet) -> float:
    """The seconds a whole reply may take: ``MINI_LETTA_REPLY_DEADLINE``, else the setting."""
    from mini_letta.settings import SETTINGS

    return env_reply_deadline(say) or SETTINGS.reply_deadline_seconds


def env_max_retries(say: Say = quiet) -> int | None:
    """``MINI_LETTA_MAX_RETRIES`` as a whole number >= 0, or None (the default) when unset or invalid."""
    raw = os.environ.get("MINI_LETTA_MAX_RETRIES", "").strip()
    if not raw:
        return None
    if raw.isdigit():
        return int(raw)
    say(_ignored("MINI_LETTA_MAX_RETRIES", raw, "a whole number (0 for no retries)"))
    return None


def _ignored(name: str, raw: str, expected: str) -> str:
    return f"Ignoring {name}={raw!r}: it must be {expected}."


def client_timeout(timeout: float | None) -> Any:
    """The providers' timeout (an ``httpx2.Timeout``): read ``timeout`` or 120 s, connect at most 10 s."""
    import httpx2

    read = SETTINGS.providers.read_timeout_seconds if timeout is None else timeout
    return httpx2.Timeout(read, connect=min(SETTINGS.providers.connect_timeout_seconds, read))
