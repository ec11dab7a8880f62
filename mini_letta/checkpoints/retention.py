"""Old checkpoints are deleted, so that what /rewind keeps does not grow for ever.

Every file the agent changes is kept whole before its first change in a turn, and nothing else ever
deletes a session: over months the checkpoint folders would outgrow the projects they record. At
start-up, the checkpoints of sessions not used for ``MINI_LETTA_CHECKPOINT_DAYS`` days (30 by
default, Claude Code's ``cleanupPeriodDays``) are deleted. The conversation itself stays: such a
session still resumes, only its code can no longer be rewound. A session open in another process
(its lock held) and the one being started are never touched; the folder is deleted under the
session's lock, so nobody resumes it half-deleted.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from mini_letta import config, session_lock
from mini_letta.checkpoints.store import SUFFIX
from mini_letta.errors import SessionError

DEFAULT_DAYS = 30
DAY_SECONDS = 86_400


def keep_days() -> int:
    return config.env_positive_int("MINI_LETTA_CHECKPOINT_DAYS", unit="days") or DEFAULT_DAYS


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
    except OSError:
        return []
    for folder in folders:
        if folder == keep or not folder.is_dir() or now - last_used(folder) < days * DAY_SECONDS:
            continue
        try:
            lock = session_lock.acquire(folder.with_suffix(".jsonl"))
        except SessionError:
            continue  # open in another process (or its lock cannot be taken): not ours to delete
        try:
            shutil.rmtree(folder, ignore_errors=True)
            if not folder.exists():
                deleted.append(folder)
        finally:
            lock.release()
    return deleted
