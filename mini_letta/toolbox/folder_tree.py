"""The workspace's folders as last seen, to find the ``.git`` entries a command made anywhere in it
without a walk (:mod:`disarm`).

Where inotify can be used (Linux, the ``inotify_simple`` package, watches to spare), every folder is
watched for entries created, removed or moved, and after a command only the folders that had such
an event are listed again: the cost is that of what changed, not of the workspace's size. The
kernel queues the events while the command runs, in any mount namespace (a watch is on the inode),
so all of them are there when it has ended. If the queue overflowed, or without inotify, each
folder is compared by its ``st_ctime`` instead (one ``lstat`` per folder: a command can set a
file's times back, not its ctime) and only the folders that changed are listed.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

try:
    from inotify_simple import INotify, flags
except (ImportError, OSError, AttributeError):  # not Linux, or no libc inotify
    INotify = flags = None

# Folders looked at per command, at most (about 0.3 s at load 7): past them, in a workspace as big
# as a home folder, the deepest repositories are not found.
MAX_FOLDERS = 50_000
# Watched with inotify only up to this many folders (a watch costs the kernel ~1 KB, and the user's
# watches are shared with every program: an editor, a file indexer); past it, the ctime walk.
MAX_WATCHED = 20_000
# Trees watched with inotify at once in one process (each holds one of the user's 128 instances).
MAX_WATCHED_TREES = 4
_ENTRY_EVENTS = ("CREATE", "DELETE", "MOVED_FROM", "MOVED_TO", "DELETE_SELF", "MOVE_SELF")
_watched_trees: list[FolderTree] = []


def _mask() -> int:
    mask = flags.ONLYDIR | flags.DONT_FOLLOW
    for name in _ENTRY_EVENTS:
        mask |= getattr(flags, name)
    return mask


@dataclass
class FolderTree:
    """The folders under one root: ctime, sub-folders, and whether a ``.git`` is there (paths as
    strings: building ``Path`` objects cost more than the ``lstat`` calls)."""

    folders: dict[str, tuple[int, tuple[str, ...], bool]] = field(default_factory=dict)
    gits: list[Path] = field(default_factory=list)  # the ``.git`` entries the last look found
    _inotify: object = field(default=None, repr=False)
    _watches: dict[int, str] = field(default_factory=dict, repr=False)  # watch descriptor: folder
    _gave_up: bool = field(default=False, repr=False)  # too many folders, or no watches left
    # Commands of subagents side by side share the tree: one look at a time.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def refresh(self, root: Path) -> list[Path]:
        """Look again; the ``.git`` entries found."""
        with self._lock:
            changed = self._changed_folders()
            if changed is None:
                self._walk(str(root))
            elif changed:
                self._relist(str(root), changed)
            return self.gits

    # -- with inotify ----------------------------------------------------------------------------
    def _changed_folders(self) -> dict[str, bool] | None:
        """The folders that had an entry event since the last look (True: one new there, to be
        walked whole); None: walk (no inotify, or the queue overflowed)."""
        if self._inotify is None:
            return None
        changed: dict[str, bool] = {}
        try:
            events = list(self._inotify.read(timeout=0))
        except OSError:
            self.close()
            return None
        for event in events:
            if event.mask & flags.Q_OVERFLOW:
                return None
            if event.mask & flags.IGNORED:
                self._watches.pop(event.wd, None)
                continue
            folder = self._watches.get(event.wd)
            if folder is None:
                continue
            changed.setdefault(folder, False)
            if event.name and event.mask & flags.ISDIR and event.mask & (flags.CREATE | flags.MOVED_TO):
                changed[f"{folder}/{event.name}"] = True  # made or moved in: its content is new too
        return changed

    def _relist(self, root: str, changed: dict[str, bool]) -> None:
        """List the changed folders again, walk the folders new under them, forget those gone."""
        folders, gone = self.folders, False
        queue = deque(changed.items())
        while queue and len(folders) < MAX_FOLDERS:
            folder, new = queue.popleft()
            if not new and folder not in folders:
                continue  # an event of a folder forgotten since
            try:
                found = os.lstat(folder)
            except OSError:
                gone = folders.pop(folder, None) is not None or gone
                continue
            if not stat.S_ISDIR(found.st_mode):
                gone = folders.pop(folder, None) is not None or gone
                continue
            if new and not self._watch(folder):
                return self._walk(root)  # no more watches: the ctime walk from now on
            listed, known = self._list(folder), folders.get(folder)
            gone = gone or (known is not None and not set(known[1]) <= set(listed[0]))
            folders[folder] = (found.st_ctime_ns, *listed)
            queue.extend((f"{folder}/{name}", True) for name in listed[0]
                         if new or f"{folder}/{name}" not in folders)
        if gone:  # what was under a folder removed or moved away is forgotten with it
            self._keep_reachable(root)
        else:
            self.gits = [Path(folder, ".git") for folder, known in folders.items() if known[2]]

    def _watch(self, folder: str) -> bool:
        if self._inotify is None:
            return True
        if len(self._watches) >= MAX_WATCHED:
            self._give_up()
            return False
        try:
            self._watches[self._inotify.add_watch(folder, _mask())] = folder
        except OSError:  # ENOSPC: the user's watches are used up (or the folder is gone)
            if not os.path.isdir(folder):
                return True
            self._give_up()
            return False
        return True

    def _give_up(self) -> None:
        self._gave_up = True
        self.close()

    def close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
        self._inotify, self._watches = None, {}
        if self in _watched_trees:
            _watched_trees.remove(self)

    def _start_watching(self) -> None:
        if INotify is None or self._inotify is not None or self._gave_up or len(self.folders) > MAX_WATCHED:
            return
        while len(_watched_trees) >= MAX_WATCHED_TREES:
            _watched_trees[0].close()
        try:
            self._inotify = INotify()
        except OSError:  # EMFILE: the user's instances are used up
            return
        _watched_trees.append(self)

    # -- without -----------------------------------------------------------------------------------
    def _walk(self, root: str) -> None:
        """Look at every folder (listing only those whose ctime changed); watch each one."""
        self._start_watching()
        if self._inotify is not None:
            self._watches = {}
        seen: dict[str, tuple[int, tuple[str, ...], bool]] = {}
        queue = deque([root])  # breadth first: past the cap, the deepest folders are left out
        lstat, is_folder, known_folders = os.lstat, stat.S_ISDIR, self.folders
        while queue and len(seen) < MAX_FOLDERS:
            folder = queue.popleft()
            if self._inotify is not None and not self._watch(folder):  # before the listing: what
                return self._walk(root)  # comes after it is an event; no watches left: without
            try:
                found = lstat(folder)
            except OSError:
                continue
            if not is_folder(found.st_mode):
                continue
            known = known_folders.get(folder)
            if known is None or known[0] != found.st_ctime_ns:
                known = (found.st_ctime_ns, *self._list(folder))
            seen[folder] = known
            queue.extend(f"{folder}/{name}" for name in known[1])
        self.folders = seen
        self.gits = [Path(folder, ".git") for folder, known in seen.items() if known[2]]

    def _keep_reachable(self, root: str) -> None:
        """Forget the folders no longer under ``root``; note the ``.git`` entries of the rest."""
        reachable: dict[str, tuple[int, tuple[str, ...], bool]] = {}
        queue = deque([root])
        while queue and len(reachable) < MAX_FOLDERS:
            folder = queue.popleft()
            known = self.folders.get(folder)
            if known is None:
                continue
            reachable[folder] = known
            queue.extend(f"{folder}/{name}" for name in known[1])
        self.folders = reachable
        self.gits = [Path(folder, ".git") for folder, known in reachable.items() if known[2]]

    @staticmethod
    def _list(folder: str) -> tuple[tuple[str, ...], bool]:
        subfolders, has_git = [], False
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name == ".git":
                        has_git = True
                    elif entry.is_dir(follow_symlinks=False):
                        subfolders.append(entry.name)
        except OSError:
            pass
        return tuple(subfolders), has_git
