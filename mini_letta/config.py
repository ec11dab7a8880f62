"""Where mini-letta keeps its files, and reading numeric settings from the environment.

Bad values (non-numeric, zero, negative) are reported once, through :func:`take_notices`, and
ignored: a typo in an environment variable never crashes the program.
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path

_notices: list[str] = []
_said: set[str] = set()
_notices_lock = threading.Lock()
_reported: set[tuple[str, str]] = set()


def home() -> Path:
    """The user data folder: ``$MINI_LETTA_HOME``, else the platform's user data dir."""
    override = os.environ.get("MINI_LETTA_HOME")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("mini-letta", appauthor=False))


def private_folder(path: Path) -> Path:
    """``path`` created if needed, readable only by the user (sessions, memory and the input history
    hold whole conversations); returns it."""
    missing = []
    folder = Path(path)
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):  # mkdir(parents=True) would give the parents the default mode
        folder.mkdir(mode=0o700, exist_ok=True)
    return path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file only the user can read (0600, also when it already existed)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        os.fchmod(file.fileno(), 0o600)
        file.write(text)


def notice(text: str) -> None:
    """Queue a one-line message for the user (shown by the CLI or REPL). The same text is said once
    per process: two readers of one settings file find the same problem, one before and one after
    the first was shown."""
    with _notices_lock:
        if text not in _said:
            _said.add(text)
            _notices.append(text)


def take_notices() -> list[str]:
    """Messages queued since the last call; two threads taking at once never both get one."""
    with _notices_lock:
        taken = list(_notices)
        _notices.clear()
    return taken


def reset_notices() -> None:
    """Forget what was queued and said (a test's process runs many sessions)."""
    with _notices_lock:
        _notices.clear()
        _said.clear()


def has_notices() -> bool:
    return bool(_notices)


def env_positive_int(name: str, unit: str = "tokens") -> int | None:
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
        notice(f"Ignoring {name}={raw!r}: it must be a positive whole number of {unit}.")
    return None


def percent(raw: str | None, name: str) -> float | None:
    """``raw`` as a percentage in (0, 100] ("85", "85%", "72.5"), or None when unset, empty or
    invalid; an invalid value is reported once, naming ``name``."""
    text = (raw or "").strip()
    if not text:
        return None
    try:
        value = float(text.removesuffix("%").strip())
    except ValueError:
        value = math.nan
    if math.isfinite(value) and 0 < value <= 100:
        return value
    if (name, text) not in _reported:
        _reported.add((name, text))
        notice(f"Ignoring {name}={text!r}: it must be a percentage of the context window above 0 and at most "
               f"100; compaction fires at the default point.")
    return None


def env_flag(name: str) -> bool:
    """True when the variable is set to any non-empty value (``CODEAGENT_DISABLE_COMPACT``)."""
    return bool(os.environ.get(name, "").strip())
