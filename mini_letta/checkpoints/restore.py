"""Putting files back as they were at a checkpoint.

The state of a file at a checkpoint is the ``before`` of the first change to it recorded after that
checkpoint (nothing recorded: it has not changed since). What mini-letta left in a file is the
``after`` of the last change to it; a file whose content now differs from that was changed by
someone else, and so was one whose ``before`` at a later change differs from what the change ahead
of it left (the user edited it between two turns, and the agent changed it again on top): either is
named so that it is not overwritten without its own yes.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_letta.checkpoints.store import CheckpointError, FileState, Store, read_state, state_dict


RESTORE = "rewind"  # the ``by`` of a restore's own entries


class NoCheckpoint(Exception):
    """The message has no checkpoint (sent before checkpoints were kept, or not saved)."""


@dataclass
class Item:
    path: str
    target: FileState | None  # None: the file did not exist
    current: FileState | None
    left: FileState | None  # what mini-letta's last change left
    problem: str = ""  # why it cannot be restored (a folder is there now, …)
    # Someone else changed it between two of mini-letta's changes since the checkpoint.
    edited_between: bool = False

    @property
    def changed_by_someone_else(self) -> bool:
        return self.current != self.left or self.edited_between

    @property
    def action(self) -> str:
        if self.target is None:
            return "delete"
        return "create" if self.current is None else "restore"


@dataclass
class Plan:
    message_id: str
    items: list[Item] = field(default_factory=list)
    # Commands since the checkpoint whose changes git could not snapshot: not in ``items``.
    unrecorded: int = 0

    @property
    def safe(self) -> list[Item]:
        return [i for i in self.items if not i.problem and not i.changed_by_someone_else]

    @property
    def contested(self) -> list[Item]:
        return [i for i in self.items if not i.problem and i.changed_by_someone_else]

    @property
    def blocked(self) -> list[Item]:
        return [i for i in self.items if i.problem]


def checkpoint_index(entries: list[dict[str, Any]], message_id: str) -> int:
    for index, entry in enumerate(entries):
        if entry.get("t") == "checkpoint" and entry.get("message") == message_id:
            return index
    raise NoCheckpoint(message_id)


def snapshots_failed_since(entries: list[dict[str, Any]], start: int) -> int:
    """How many commands after entry ``start`` git could not snapshot (what they changed is unknown)."""
    return sum(1 for entry in entries[start + 1:] if entry.get("t") == "snapshot-failed")


def paths_changed_since(entries: list[dict[str, Any]], start: int) -> list[str]:
    """Workspace-relative paths with a change recorded after entry ``start``, first changed first."""
    seen: dict[str, None] = {}
    for entry in entries[start + 1:]:
        if entry.get("t") == "after" and isinstance(entry.get("path"), str):
            seen.setdefault(entry["path"])
    return list(seen)


def plan(store: Store, workspace: Path, message_id: str) -> Plan:
    """What restoring the files to the checkpoint of ``message_id`` would change (nothing yet)."""
    entries = store.entries()
    start = checkpoint_index(entries, message_id)
    targets: dict[str, FileState | None] = {}
    # What the latest change since the checkpoint left in each file, to compare with what the next
    # change found there.
    last_after: dict[str, FileState | None] = {}
    edited_between: set[str] = set()
    for entry in entries[start + 1:]:
        path = entry.get("path")
        if not isinstance(path, str):
            continue
        state = FileState.from_dict(entry.get("state"))
        if entry.get("t") == "before":
            targets.setdefault(path, state)
            if entry.get("by") == RESTORE:
                edited_between.discard(path)  # the user saw it and chose to restore over it
            elif path in last_after and last_after[path] != state:
                edited_between.add(path)
        elif entry.get("t") == "after":
            last_after[path] = state
    left: dict[str, FileState | None] = {}
    for entry in entries:
        if entry.get("t") == "after" and entry.get("path") in targets:
            left[entry["path"]] = FileState.from_dict(entry.get("state"))
    result = Plan(message_id, unrecorded=snapshots_failed_since(entries, start))
    for path, target in targets.items():
        problem, current = "", None
        if not _inside(Path(workspace), path):
            problem = "it is outside the workspace (a folder on its way leads out of it)"
        else:
            try:
                current, _ = read_state(Path(workspace) / path)
            except OSError as exc:
                problem = f"it cannot be read ({exc.strerror or exc})"
        if current == target and not problem:
            continue
        if target is not None and not store.has(target.sha):
            problem = "its saved content is missing from the checkpoint folder"
        result.items.append(Item(path, target, current, left.get(path, current), problem, path in edited_between))
    return result


def _inside(workspace: Path, path: str) -> bool:
    """Whether writing ``path`` stays in the workspace: a folder replaced by a link since must not
    send a restore elsewhere."""
    relative = Path(path)
    if relative.is_absolute() or ".." in relative.parts:
        return False
    return (workspace / relative).parent.resolve().is_relative_to(workspace.resolve())


def apply(store: Store, workspace: Path, items: list[Item], by: str = RESTORE) -> list[str]:
    """Restore ``items``; returns one sentence per problem (a file that could not be restored).

    Each file's present content is recorded first (one write for all of them), so the restore
    can itself be undone by rewinding to a later message."""
    workspace = Path(workspace)
    befores = []
    for item in items:
        try:
            state, data = read_state(workspace / item.path)
            if state is not None and not store.has(state.sha):
                store.put(data, state.sha)
        except OSError:
            state = item.current
        befores.append({"t": "before", "path": item.path, "by": by, "state": state_dict(state)})
    try:
        store.append_many(befores)
    except OSError as exc:
        # Without this record the restore could not be undone in turn: nothing is changed.
        raise CheckpointError(f"No file was restored: the checkpoint log in {store.folder} cannot be written "
                              f"({exc.strerror or exc}).") from None
    failures, afters = [], []
    for item in items:
        try:
            _write(store, workspace / item.path, item.target)
        except OSError as exc:
            failures.append(f"Could not restore {item.path}: {exc.strerror or exc}.")
        try:
            state, _ = read_state(workspace / item.path)
        except OSError:
            state = None
        afters.append({"t": "after", "path": item.path, "by": by, "state": state_dict(state)})
    try:
        store.append_many(afters)
    except OSError as exc:
        failures.append(f"Could not save the record of what was restored ({exc.strerror or exc}): a later "
                        "rewind will ask before changing these files again.")
    return failures


def _write(store: Store, target: Path, state: FileState | None) -> None:
    if state is None:
        if target.is_symlink() or target.exists():
            target.unlink()
        return
    data = store.get(state.sha)
    if target.is_symlink() or (state.link and target.exists()):
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if state.link:
        os.symlink(os.fsdecode(data), target)
        return
    # Overwritten in place and then cut to length: truncating first would free the file's blocks
    # only to allocate them again, which made a restore of 500 files of 100 kB take twice as long.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.ftruncate(fd, len(data))
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        # As git does: an executable file is executable for whoever may read it.
        wanted = mode | ((mode & 0o444) >> 2) if state.executable else mode & ~0o111
        if wanted != mode:
            os.fchmod(fd, wanted)
    finally:
        os.close(fd)
