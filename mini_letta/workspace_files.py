"""Reading a file that a repository (or the user's data folder) put in our way at start-up.

``AGENTS.md``, ``CLAUDE.md``, ``.mini-letta/settings.json`` and ``.mcp.json`` are written by whoever
wrote the repository, and are read before the user has had a chance to look at them. So each is
data, never a reason to fail: it is opened only if it is a regular file (a FIFO would block the
start for ever, ``/dev/zero`` behind a symlink would fill the memory), read up to a size cap, and
parsed defensively. Every problem is said once through the caller's ``say`` and the file is then
treated as absent; a missing file is silently absent.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from mini_letta.notices import Say, quiet


DEFAULT_JSON_CAP_BYTES = 1024 * 1024
# The longest UTF-8 encoding of one character: a cap of N characters reads at most this many times N bytes.
UTF8_MAX_BYTES = 4


def _describe(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _outside(path: Path, within: Path) -> bool:
    try:
        path.resolve().relative_to(within.resolve())
    except ValueError:
        return True
    return False


def _read_capped(path: Path, cap: int, within: Path | str | None, say: Say) -> bytes | None:
    """At most ``cap + 1`` bytes of ``path`` if it is a regular file (so a caller can tell a longer
    file), else None with one notice unless it is simply missing. With ``within``, a path that
    resolves outside that folder (a symlink to ``~/.ssh``) is refused: the repository would
    otherwise choose which of the user's files is sent to the model."""
    try:
        # stat() before open(): opening some devices has effects of its own.
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        say(f"Ignoring {path}: {error.strerror or error}.")
        return None
    if not stat.S_ISREG(mode):
        say(f"Ignoring {path}: it is {_describe(mode)}, not a regular file.")
        return None
    if within is not None and _outside(path, Path(within)):
        say(f"Ignoring {path}: it leads outside {within}.")
        return None
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO since stat(), open() must not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        say(f"Ignoring {path}: {error.strerror or error}.")
        return None
    try:
        opened = os.fstat(fd).st_mode
        if not stat.S_ISREG(opened):
            say(f"Ignoring {path}: it is {_describe(opened)}, not a regular file.")
            return None
        chunks: list[bytes] = []
        left = cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        say(f"Ignoring {path}: {error.strerror or error}.")
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_workspace_text(path: Path | str, cap: int, *, within: Path | str | None = None,
                        say: Say = quiet) -> str | None:
    """The text of ``path`` (UTF-8, undecodable bytes replaced); None when it is missing or not a
    readable regular file. A file over ``cap`` bytes is said and gives its first ``cap`` bytes."""
    path = Path(path)
    data = _read_capped(path, max(0, cap), within, say)
    if data is None:
        return None
    if len(data) > cap:
        say(f"{path} is larger than {cap:,} bytes: only its first {cap:,} bytes are read.")
        data = data[:cap]
    return data.decode("utf-8", errors="replace")


def read_workspace_json(path: Path | str, cap: int = DEFAULT_JSON_CAP_BYTES, *, expect: type = dict,
                        within: Path | str | None = None, say: Say = quiet) -> object | None:
    """The JSON value in ``path`` when it is an ``expect`` (an object by default), else None: missing
    silently; unreadable, larger than ``cap`` bytes, not UTF-8, not JSON or of another shape with one
    ``say`` (none with :func:`quiet`). A cut JSON file means nothing, so an oversized one is refused
    whole."""
    path = Path(path)
    data = _read_capped(path, max(0, cap), within, say)
    if data is None:
        return None
    if len(data) > cap:
        say(f"Ignoring {path}: it is larger than {cap:,} bytes.")
        return None
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        say(f"Ignoring {path}: it is not UTF-8 text.")
        return None
    except ValueError as error:
        say(f"Ignoring {path}: it is not valid JSON ({error}).")
        return None
    except RecursionError:
        say(f"Ignoring {path}: it is nested too deeply to read.")
        return None
    if not isinstance(value, expect):
        wanted = {dict: "a JSON object", list: "a JSON array"}.get(expect, expect.__name__)
        say(f"Ignoring {path}: it must be {wanted}.")
        return None
    return value
