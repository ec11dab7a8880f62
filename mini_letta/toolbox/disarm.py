"""Repositories a sandboxed command leaves behind, made unable to run programs outside the sandbox.

A command inside the sandbox may create or change a git repository anywhere under the workspace
(``git init nested``, a submodule's ``.git/modules/<name>/config``, a ``.git`` file whose ``gitdir:``
points elsewhere, a ``commondir`` that borrows another folder's hooks and config); the user's next
``git`` runs outside the sandbox, with the user's rights. ``RepositoryWatch.before`` notes every
repository under the workspace before a command, ``RepositoryWatch.disarm`` afterwards finds those it
created or changed and removes, as git itself reads the config (``git config --list --null``, so
section-line keys, quoting and continuation lines are seen as git sees them):

- the config settings that make git run a program or read other settings (``RUNS_A_PROGRAM``),
  only those the command added when the repository existed before (the user's own stay);
- hooks the command wrote (a hooks folder that is a link: the link);
- a ``commondir`` or ``gitdir:`` pointing out of the workspace (one pointing inside is followed and
  the folder it names cleaned as a repository); config files that are links or git cannot read.

The new ``.git`` entries are found without a walk (:mod:`folder_tree`: inotify's events, else one
``lstat`` per folder compared by ctime): the tree seen last is kept per workspace for the process.
Before a command only the repositories already known are read again (their config and hooks).

What the sandbox mounts read-only for the command (the git folders of the repositories that existed
at the session's first command, the workspace's own hooks and config) cannot change during it, so it
is not read at all (:class:`Fixed`): after the command only its identity is checked (one ``lstat``
each), since a command can rename a folder that holds a mount point and put a repository of its own
where it was.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from mini_letta import safe_git
from mini_letta.toolbox.folder_tree import FolderTree

# Config keys (lower case; ``*`` is any subsection) that make git run a program, or bring in
# settings from another file: git-config(1), gitattributes(5), githooks(5), git-lfs-config(5).
# Whole sections first: every key in them names a program or an include.
RUNS_A_PROGRAM = (
    "alias.*", "include.*", "includeif.*", "filter.*", "credential.*", "difftool.*", "mergetool.*",
    "guitool.*", "hook.*", "sendemail.*", "browser.*", "man.*", "gpg.*", "protocol.*", "trailer.*",
    "instaweb.*", "pager.*",
    "core.fsmonitor", "core.hookspath", "core.sshcommand", "core.pager", "core.editor", "core.askpass",
    "core.gitproxy", "core.alternaterefscommand", "sequence.editor", "diff.external", "diff.tool",
    "diff.guitool", "merge.tool", "merge.guitool", "diff.*.command", "diff.*.textconv", "merge.*.driver",
    "interactive.difffilter", "remote.*.uploadpack", "remote.*.receivepack", "remote.*.vcs",
    "submodule.*.update", "tar.*.command", "web.browser", "help.browser", "imap.tunnel",
    "uploadpack.packobjectshook", "init.templatedir", "lfs.customtransfer.*", "lfs.extension.*",
    "lfs.standalonetransferagent",
)
CONFIG_FILES = ("config", "config.worktree")
HOOKS = "hooks"
_SAMPLE = ".sample"


def runs_a_program(key: str) -> bool:
    """Whether a config key as ``git config --list`` prints it (``section[.subsection].name``) is one."""
    return any(fnmatch.fnmatchcase(key.lower(), pattern) for pattern in RUNS_A_PROGRAM)


def config_entries(text: bytes) -> list[tuple[str, str | None]] | None:
    """(key, value) as git reads ``text`` (None for a key with no value); None if git cannot."""
    done = safe_git.run(Path("/"), "config", "--file", "-", "--list", "--null", data=text)
    if done.returncode != 0:
        return None
    entries = []
    for item in done.stdout.split(b"\0")[:-1]:
        key, newline, value = item.partition(b"\n")
        entries.append((os.fsdecode(key), os.fsdecode(value) if newline else None))
    return entries


def _stat_key(path: Path):
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return (found.st_mode, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


class Fixed:
    """Paths mounted read-only for a command: nothing under them can change while it runs. Noted
    before it by (device, inode); afterwards a path is fixed only while its root still has them."""

    def __init__(self, paths=()):
        self.roots = {str(path): _identity(str(path)) for path in paths}
        self.roots = {root: key for root, key in self.roots.items() if key is not None}
        self._intact: set[str] | None = None

    def check(self) -> None:
        """Look again at the roots (after the command): a root moved or replaced stops being fixed."""
        self._intact = {root for root, key in self.roots.items() if _identity(root) == key}

    def covers(self, path: Path | str) -> bool:
        path = str(path)
        roots = self.roots if self._intact is None else self._intact
        return any(path == root or path.startswith(root + "/") for root in roots)


def _identity(path: str):
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino, stat.S_IFMT(found.st_mode))


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() and not path.is_symlink() else None
    except OSError:
        return None


@dataclass
class _GitFolder:
    """What one git folder held: its key files' stat and config text, its hooks' stat."""

    files: dict[str, object] = field(default_factory=dict)
    configs: dict[str, bytes | None] = field(default_factory=dict)
    hooks: dict[str, object] = field(default_factory=dict)

    @classmethod
    def read(cls, git: Path, fixed: Fixed | None = None) -> _GitFolder:
        """What ``git`` holds; what ``fixed`` covers is not read (it is the same after the command)."""
        fixed = fixed or Fixed()
        names = [name for name in (*CONFIG_FILES, "commondir", HOOKS) if not fixed.covers(git / name)]
        folder = cls({name: _stat_key(git / name) for name in names},
                     {name: _read(git / name) for name in CONFIG_FILES if name in names})
        hooks = git / HOOKS
        if HOOKS in names and hooks.is_dir() and not hooks.is_symlink():
            try:
                folder.hooks = {entry.name: _stat_key(Path(entry.path)) for entry in os.scandir(hooks)}
            except OSError:
                pass
        return folder


def _git_folders_inside(git: Path, depth: int = 0, fixed: Fixed | None = None) -> list[Path]:
    """The repositories a git folder holds: submodules' (``modules/<name>``, names may have
    slashes) and linked worktrees' (``worktrees/<name>``) git folders; none under ``fixed``."""
    found = []
    fixed = fixed or Fixed()
    for place in ("modules", "worktrees"):
        stack = [git / place]
        while stack and depth < 8:
            folder = stack.pop()
            if fixed.covers(folder):
                continue
            try:
                entries = [Path(entry.path) for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            for entry in entries:
                if (entry / "HEAD").exists() or (entry / "config").exists() or (entry / "commondir").exists():
                    found += [entry, *_git_folders_inside(entry, depth + 1, fixed)]
                elif place == "modules":
                    stack.append(entry)
    return found


# One per workspace for the process: each command then costs what changed, not a walk.
_TREES: dict[Path, FolderTree] = {}


@dataclass
class RepositoryWatch:
    """Every repository under the workspace before a command, to disarm those it created or changed."""

    workspace: Path
    # ``.git`` entries (folders or files) and the git folders inside them, with what each held.
    pointers: dict[Path, object] = field(default_factory=dict)
    folders: dict[Path, _GitFolder] = field(default_factory=dict)
    fixed: Fixed = field(default_factory=Fixed)

    @classmethod
    def before(cls, workspace: Path, fixed=()) -> RepositoryWatch:
        """``fixed``: the paths mounted read-only for the command (:class:`Fixed`)."""
        watch = cls(Path(workspace).resolve(), fixed=Fixed(fixed))
        # The folders as the last command left them (the first time: a walk); only the repositories
        # found there are looked at again now. A repository someone else makes between two commands
        # is taken for the next command's.
        known = watch.workspace in _TREES
        watch.pointers, watch.folders = watch._look(refresh=not known)
        return watch

    def _look(self, refresh: bool = True) -> tuple[dict[Path, object], dict[Path, _GitFolder]]:
        tree = _TREES.setdefault(self.workspace, FolderTree())
        pointers, folders = {}, {}
        for git in tree.refresh(self.workspace) if refresh else tree.gits:
            pointers[git] = _stat_key(git)
            if git.is_dir() and not git.is_symlink() and not self.fixed.covers(git):
                for folder in (git, *_git_folders_inside(git, fixed=self.fixed)):
                    folders[folder] = _GitFolder.read(folder, self.fixed)
        return pointers, folders

    def disarm(self) -> list[str]:
        """Disarm what the command created or changed; what was removed, workspace-relative, for the model."""
        self.fixed.check()
        pointers, folders = self._look()
        removed: list[str] = []
        for git, key in pointers.items():
            if self.pointers.get(git) != key and not (git.is_dir() and not git.is_symlink()):
                removed += self._pointer(git)
        for folder, now in folders.items():
            was = self.folders.get(folder)
            if was is None or was != now:
                removed += self._git_folder(folder, was or _GitFolder())
        return removed

    def _name(self, path: Path) -> str:
        try:
            return path.relative_to(self.workspace).as_posix()
        except ValueError:
            return str(path)

    def _inside(self, path: Path) -> bool:
        real = Path(os.path.realpath(path))
        return real == self.workspace or self.workspace in real.parents

    def _pointer(self, git: Path) -> list[str]:
        """A ``.git`` file or link: followed when it leads to a folder in the workspace, else removed."""
        target = None
        if git.is_symlink():
            target = git.resolve()
        else:
            text = (_read(git) or b"").decode("utf-8", "replace").strip()
            if text.startswith("gitdir:"):
                target = (git.parent / text[len("gitdir:"):].strip()).resolve()
        if target is not None and self._inside(target) and target.is_dir():
            return self._git_folder(target, self.folders.get(target) or _GitFolder())
        if target is None and not git.is_symlink():
            return []  # not a pointer git reads
        git.unlink()
        return [f"{self._name(git)} (it pointed out of the workspace)"]

    def _git_folder(self, git: Path, was: _GitFolder, depth: int = 0) -> list[str]:
        removed = []
        hooks = git / HOOKS
        if self.fixed.covers(hooks):
            pass  # mounted read-only for the command: as it was
        elif hooks.is_symlink():
            hooks.unlink()
            removed.append(self._name(hooks))
        elif hooks.is_dir():
            for entry in sorted(hooks.iterdir()):
                if entry.name.endswith(_SAMPLE) or was.hooks.get(entry.name) == _stat_key(entry):
                    continue
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
                removed.append(self._name(entry))
        for name in CONFIG_FILES:
            if not self.fixed.covers(git / name):
                removed += self._config(git / name, was.configs.get(name))
        commondir = git / "commondir"
        if (not self.fixed.covers(commondir) and _stat_key(commondir) is not None
                and was.files.get("commondir") != _stat_key(commondir)):
            text = (_read(commondir) or b"").decode("utf-8", "replace").strip()
            target = (git / text).resolve() if text else None
            if target is not None and self._inside(target) and target.is_dir() and depth < 4:
                removed += self._git_folder(target, self.folders.get(target) or _GitFolder(), depth + 1)
            else:
                commondir.unlink()
                removed.append(f"{self._name(commondir)} (it pointed out of the workspace)")
        return removed

    def _config(self, path: Path, was: bytes | None) -> list[str]:
        if path.is_symlink():
            path.unlink()
            return [self._name(path)]
        text = _read(path)
        if text is None or text == was:
            return []
        entries = config_entries(text)
        if entries is None:
            path.write_bytes(b"")
            return [f"{self._name(path)} (git cannot read it)"]
        kept = set(config_entries(was) or []) if was else set()
        wrong = [(key, value) for key, value in entries if runs_a_program(key) and (key, value) not in kept]
        for key, value in dict.fromkeys(wrong):
            args = ["--fixed-value", "--unset-all", key, value] if value is not None else ["--unset-all", key]
            safe_git.run(Path("/"), "config", "--file", str(path), *args)
        left = config_entries(_read(path) or b"") or []
        if any(runs_a_program(key) and (key, value) not in kept for key, value in left):
            path.write_bytes(b"")  # git would not take one of them out: nothing of it is kept
            return [f"{self._name(path)} (emptied)"]
        return [f"{self._name(path)}: {key}" for key, _ in dict.fromkeys(wrong)]
