"""``mini-letta rewind``: the /rewind list and restore for scripts, on a saved session.

Nothing is asked: ``--to N`` restores the files mini-letta changed and rewinds the conversation;
a file changed since by someone else is named and left as it is unless ``--force``
(``--overwrite-changed``). Whatever could not be restored makes the exit code 1.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Callable

from mini_letta.checkpoints.restore import NoCheckpoint, apply
from mini_letta.checkpoints.rewind import code_plan, context_before, failed_snapshots_note, rewind_points
from mini_letta.checkpoints.store import Store, folder_for
from mini_letta.errors import ConfigError
from mini_letta.sessions.store import SessionWriter, load_session, read_history
from mini_letta.sessions.lock import SessionLock, acquire
from mini_letta.trust.terminal_text import one_line, preview
from mini_letta.wording import counted

Say = Callable[[str], None]


def point_line(point) -> str:
    """One rewind point as `mini-letta rewind --list` and the editor's `/rewind` show it."""
    when = datetime.datetime.fromtimestamp(point.time).strftime("%Y-%m-%d %H:%M") if point.time else "-"
    if not point.in_context:
        files = "in the summary: files only" + ("" if point.has_checkpoint else ", no checkpoint")
    elif not point.has_checkpoint:
        files = "no checkpoint"
    else:
        files = f"{counted(len(point.files), 'file')} changed since" + (": " + ", ".join(point.files) if point.files else "")
    if point.snapshots_failed:
        files += "; " + failed_snapshots_note(point.snapshots_failed)
    return f"{point.number:>3}  {when}  {preview(one_line(point.message.text), 60)}  ({one_line(files)})"


def run(path: Path, workspace: Path, *, list_only: bool, to: int | None, code_only: bool,
        overwrite_changed: bool, say: Say) -> int:
    """The exit code: 0 done, 1 when a file was left as it is or could not be restored."""
    if list_only or to is None:
        return _run(path, workspace, list_only=True, to=None, code_only=code_only,
                    overwrite_changed=overwrite_changed, say=say, lock=None)
    # A session open in another process is changed by that process only: a rewind from here would race
    # with its next turn. Taken before reading, so SessionBusyError (naming it) comes before any restore.
    lock = acquire(path)
    try:
        return _run(path, workspace, list_only=False, to=to, code_only=code_only,
                    overwrite_changed=overwrite_changed, say=say, lock=lock)
    finally:
        lock.release()


def _run(path: Path, workspace: Path, *, list_only: bool, to: int | None, code_only: bool,
         overwrite_changed: bool, say: Say, lock: SessionLock | None) -> int:
    loaded = load_session(path)
    # A session given by id may be another folder's: its files are restored there.
    workspace = Path(loaded.header.get("workspace") or workspace)
    store = Store(folder_for(path))
    points = rewind_points(loaded.messages_in_context, store, read_history(path))
    if list_only or to is None:
        if not points:
            say("No message of yours is in this session's context yet.")
        for point in points:
            say(point_line(point))
        return 0
    if not 1 <= to <= len(points):
        raise ConfigError(f"--to {to}: this session has messages 1 to {len(points)} (see `mini-letta rewind --list`).")
    point = points[to - 1]
    code = 0
    try:
        plan = code_plan(store, workspace, point)
    except NoCheckpoint:
        plan = None
        say(f"Message {to} has no checkpoint: no files were restored.")
        code = 1
    if plan is not None:
        chosen = plan.safe + (plan.contested if overwrite_changed else [])
        for item in plan.contested if not overwrite_changed else []:
            say(f"Left {one_line(item.path)} as it is: it was changed since by someone else "
                "(--force restores it too).")
            code = 1
        for item in plan.blocked:
            say(f"Cannot restore {one_line(item.path)}: {item.problem}.")
            code = 1
        failures = apply(store, workspace, chosen)
        for failure in failures:
            say(one_line(failure))
            code = 1
        if plan.unrecorded:
            say(f"Not all could be restored: {failed_snapshots_note(plan.unrecorded)}.")
            code = 1
        done = len(chosen) - len(failures)
        restored = counted(done, "other file" if failures else "file")
        say(f"Restored {restored} as {'it was' if done == 1 else 'they were'} at message {to}.")
    if not code_only and not point.in_context:
        say(f"Message {to} was compacted into the summary: the conversation stays as it is (only files can go "
            "back that far).")
        code = 1
    elif not code_only:
        kept = context_before(loaded.messages_in_context, point.message)
        with SessionWriter.open_existing(path, loaded=loaded, lock=lock) as writer:
            writer.append_rewind(point.message.id, loaded.boundary_seq, kept)
        say(f"The conversation is back to before message {to}; `mini-letta --continue` goes on from there. "
            f"The message was: {one_line(point.message.text)}")
    return code
