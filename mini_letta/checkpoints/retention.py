"""Old checkpoints are deleted, so that what /rewind keeps does not grow for ever.

Every file the agent changes is kept whole before its first change in a turn, and nothing else ever
deletes a session: over months the checkpoint folders would outgrow the projects they record. At
start-up, the checkpoints of sessions not used for ``MINI_LETTA_CHECKPOINT_DAYS`` days (30 by
default, Claude Code's ``cleanupPeriodDays``) are deleted. The conversation itself stays: such a
session still resumes, only its code can no longer be rewound. A session open in another process
(its lock held) and the one being started are never touched.

Pruning runs in a background thread (``prune_in_background``): it globs and stats the whole sessions
folder and may delete large folders, which start-up must not wait for. A folder is taken away under
the session's lock by renaming it into a trash folder (atomic: the session has all its checkpoints or
none, even when the process ends mid-way), and the trash is deleted after the lock is released;
trash a process left behind is deleted by the next prune.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from pathlib import Path

from mini_letta.notices import Say, quiet
from mini_letta import config
from mini_letta.sessions import lock as session_lock
from mini_letta.checkpoints.store import SUFFIX
from mini_letta.errors import SessionError
from mini_letta.settings import SETTINGS

DAY_SECONDS = 86_400
# Where a folder goes to be deleted: no ``SUFFIX``, so neither prune nor the checkpoints see it.
TRASH_PREFIX = ".checkpoints-trash-"

_log = logging.getLogger(__name__)
_threads: list[threading.Thread] = []


def keep_days(say: Say = quiet) -> int:
    return config.env_positive_int("MINI_LETTA_CHECKPOINT_DAYS", unit="days", say=say) or SETTINGS.checkpoint_retention_days


def last_used(folder: Path) -> float:
    """When the session was last written, or its checkpoints (a rewind writes only those)."""
    times = []
    for path in (folder.with_suffix(".jsonl"), folder / "log.jsonl", folder):
        try:
            times.append(path.stat().st_mtime)
        except OSError:
            continue
    return max(times, default=0.0)


def prune(sessions: Path, *, days: int, current: Path | None = None, now: float | None = None) -> list[Path]:
    """Delete the checkpoint folders in ``sessions`` whose session was last used more than ``days``
    days ago, except ``current``'s and those of sessions open elsewhere; the folders deleted."""
    now = time.time() if now is None else now
    keep = Path(current).with_suffix(SUFFIX) if current is not None else None
    deleted = []
    try:
        folders = sorted(sessions.glob("*" + SUFFIX))
        for trash in sessions.glob(TRASH_PREFIX + "*"):
            shutil.rmtree(trash, ignore_errors=True)
    except OSError:
        return []
    for folder in folders:
        if folder == keep or not folder.is_dir() or now - last_used(folder) < days * DAY_SECONDS:
            continue
        try:
            lock = session_lock.acquire(folder.with_suffix(".jsonl"))
        except SessionError:
            continue  # open in another process (or its lock cannot be taken): not ours to delete
        trash = None
        try:
            trash = Path(tempfile.mkdtemp(prefix=TRASH_PREFIX, dir=sessions))
            folder.rename(trash / folder.name)
            deleted.append(folder)
        except OSError:
            pass  # kept, and tried again at the next start
        finally:
            lock.release()
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
    return deleted


def prune_in_background(sessions: Path, *, days: int, current: Path | None = None) -> threading.Thread:
    """``prune`` in a daemon thread, so start-up does not wait for it; what fails is noted in the
    debug log, never raised (old checkpoints are kept until the next start)."""
    def run() -> None:
        try:
            prune(sessions, days=days, current=current)
        except Exception:
            _log.debug("pruning old checkpoints in %s failed", sessions, exc_info=True)

    thread = threading.Thread(target=run, name="checkpoint-pruning", daemon=True)
    _threads[:] = [t for t in _threads if t.is_alive()] + [thread]
    thread.start()
    return thread


def join() -> None:
    """Wait for the pruning threads started so far (for tests and benchmarks)."""
    for thread in list(_threads):
        thread.join()
