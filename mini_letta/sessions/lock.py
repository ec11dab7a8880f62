"""One writer per session: an exclusive advisory lock held while a process has the session open.

Two processes appending to one session file interleave two conversations; every later request then
has a shape the APIs reject. So the process that opens a session (new, ``-c``, ``-r``, ``/resume``)
takes ``fcntl.flock`` on ``<id>.lock`` beside the session file and keeps it until it closes the
session. The lock belongs to the open file, so the OS releases it when the process exits or dies
(a ``kill -9`` leaves no stale lock). The lock file names its holder (pid, since when) for the
message a second process shows; a holder that closes cleanly deletes the file.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from mini_letta.errors import SessionError


def lock_path(session_path: Path) -> Path:
    return Path(session_path).with_suffix(".lock")


class SessionBusyError(SessionError):
    """Another process has the session open; ``holder`` is what it wrote about itself."""

    def __init__(self, session_path: Path, holder: dict[str, Any]):
        self.session_path = Path(session_path)
        self.holder = holder
        super().__init__(f"Session {self.session_path.stem} is open in {describe_holder(holder)}; nothing "
                         "was sent. Wait until it ends, or add --fork-session to go on in a new session that "
                         "starts from the same history.")


def describe_holder(holder: dict[str, Any]) -> str:
    """``another mini-letta process (pid 4242, open since 15:02:11)``, with what the lock file says."""
    pid, since = holder.get("pid"), holder.get("since")
    details = []
    if isinstance(pid, int):
        details.append(f"pid {pid}")
    if isinstance(since, str):
        try:
            started = datetime.fromisoformat(since)
        except ValueError:
            started = None
        if started is not None:
            same_day = started.date() == datetime.now(started.tzinfo).date()
            details.append("open since " + started.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M"))
    return "another mini-letta process" + (f" ({', '.join(details)})" if details else "")


class SessionLock:
    """The held lock of one session; :meth:`release` (or the process's end) lets others in."""

    def __init__(self, path: Path, descriptor: int):
        self.path = path
        self._descriptor: int | None = descriptor

    def release(self) -> None:
        if self._descriptor is None:
            return
        # Deleted while still held: a process that opened the old file finds it gone once it gets the
        # lock and tries again on a new one (see _lock), so the delete never lets two writers in.
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self._descriptor)
        self._descriptor = None
        atexit.unregister(self.release)


def acquire(session_path: Path) -> SessionLock:
    """Take the session's lock at once, or raise :class:`SessionBusyError` naming its holder."""
    return _lock(Path(session_path), wait=False)


def wait_for(session_path: Path) -> SessionLock:
    """Take the session's lock, waiting while another process holds it. Ctrl-C stops the wait
    (``KeyboardInterrupt``: the signal interrupts the blocked call)."""
    return _lock(Path(session_path), wait=True)


def _lock(session_path: Path, wait: bool) -> SessionLock:
    path = lock_path(session_path)
    while True:
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise SessionError(f"Cannot lock session {session_path.stem} ({path}): {exc.strerror or exc}.") from exc
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = _holder(descriptor)
            os.close(descriptor)
            raise SessionBusyError(session_path, holder) from None
        except BaseException:
            os.close(descriptor)
            raise
        if _still_there(descriptor, path):
            break
        os.close(descriptor)  # the holder deleted this file while we waited: lock the current one
    record = json.dumps({"pid": os.getpid(), "since": datetime.now().astimezone().isoformat(timespec="seconds")})
    try:
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, record.encode("utf-8"), 0)
    except OSError:
        pass  # the lock holds without its description; a second process then names no pid
    lock = SessionLock(path, descriptor)
    # The OS would release it at exit anyway; releasing it ourselves also deletes the lock file.
    atexit.register(lock.release)
    return lock


def _still_there(descriptor: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(descriptor)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _holder(descriptor: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(descriptor, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
