"""Network settings shared by the providers, chosen so a stalled server is noticed and a transient
failure is retried.

Connect timeout 10 s, read timeout 120 s (slow local models pause long between tokens), two
retries, made by our code (``providers/retry.py``: exponential back-off, ``retry-after`` honoured,
each retry reported as a stream event) rather than inside an SDK, which would retry in silence.
``timeout`` sets the read timeout (the connect timeout never exceeds it); ``max_retries`` the retry
count. A module of its own
so that the factory (the package) and the providers it creates both import it, not each other.
"""

from __future__ import annotations

from mini_letta.notices import Say, quiet

import math
import os
from typing import Any

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 120.0
MAX_RETRIES = 2


def env_timeout(say: Say = quiet) -> float | None:
    """``MINI_LETTA_TIMEOUT`` as positive seconds, or None (the default) when unset or invalid."""
    raw = os.environ.get("MINI_LETTA_TIMEOUT", "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and value > 0:
        return value
    say(_ignored("MINI_LETTA_TIMEOUT", raw, "a positive number of seconds"))
    return None


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

    read = READ_TIMEOUT if timeout is None else timeout
    return httpx2.Timeout(read, connect=min(CONNECT_TIMEOUT, read))
