"""Where mini-letta keeps its files, and reading numeric settings from the environment.

Bad values (non-numeric, zero, negative) are said through the caller's ``say`` (a run's
:class:`mini_letta.notices.Notices` says each text once) and ignored: a typo in an environment
variable never crashes the program.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Callable


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


def env_positive_int(name: str, unit: str = "tokens", *, say: Callable[[str], None]) -> int | None:
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
    say(f"Ignoring {name}={raw!r}: it must be a positive whole number of {unit}.")
    return None


def percent(raw: str | None, name: str, *, say: Callable[[str], None]) -> float | None:
    """``raw`` as a percentage in (0, 100] ("85", "85%", "72.5"), or None when unset, empty or
    invalid; an invalid value is said, naming ``name``."""
    text = (raw or "").strip()
    if not text:
        return None
    try:
        value = float(text.removesuffix("%").strip())
    except ValueError:
        value = math.nan
    if math.isfinite(value) and 0 < value <= 100:
        return value
    say(f"Ignoring {name}={text!r}: it must be a percentage of the context window above 0 and at most "
        f"100; compaction fires at the default point.")
    return None


def env_flag(name: str) -> bool:
    """True when the variable is set to any non-empty value (``CODEAGENT_DISABLE_COMPACT``)."""
    return bool(os.environ.get(name, "").strip())
