"""Snapshots of a git work tree that leave the user's repository as it was.

The tree is staged into an index of our own (``GIT_INDEX_FILE``, first seeded with a copy of the
user's index so unchanged files are not hashed again) and written as a tree that no ref points to;
after a command, the work tree is staged again and our index compared with that tree
(``diff-index --cached``, no second tree written): five git processes per command. The user's index,
HEAD, branches and stash are never touched; only new objects are added to the object database.
Files that git ignores are not in a snapshot.

Every git here runs through ``safe_git`` (no hooks, fsmonitor, filters, …). A nested repository or
submodule is in a snapshot as the commit it has checked out (one with none yet is left out), and
is never entered: a gitlink in our index would make ``git add`` run ``git status`` inside it, with
its own settings, so our index holds none between snapshots.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from mini_letta import safe_git

# commit-tree needs an identity; a repository without one configured must not make snapshots fail.
_IDENTITY = {"GIT_AUTHOR_NAME": "mini-letta", "GIT_AUTHOR_EMAIL": "checkpoints@mini-letta.invalid",
             "GIT_COMMITTER_NAME": "mini-letta", "GIT_COMMITTER_EMAIL": "checkpoints@mini-letta.invalid"}
MODE_EXECUTABLE = "100755"
MODE_LINK = "120000"
MODE_GITLINK = "160000"
# What ``git add --ignore-errors`` says of a nested repository without a commit (LC_ALL=C), and of
# one it records as a gitlink.
_NO_COMMIT = re.compile(r"^error: '(.*)/' does not have a commit checked out$")
_EMBEDDED = re.compile(r"^warning: adding embedded git repository: (.*)$")


class GitError(Exception):
    """A git command failed; the message is git's own last line."""


def _run(cwd: Path, *args: str, env: dict[str, str] | None = None, data: bytes | None = None,
         filters: tuple[str, ...] = ()):
    try:
        return safe_git.run(cwd, *args, env={**_IDENTITY, **(env or {})}, data=data, filters=filters)
    except OSError as exc:
        raise GitError(f"git could not be started ({exc.strerror or exc})") from None


def _failure(done, command: str) -> GitError:
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return GitError(lines[-1] if lines else f"git {command} failed")


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None, data: bytes | None = None,
         filters: tuple[str, ...] = ()) -> bytes:
    done = _run(cwd, *args, env=env, data=data, filters=filters)
    if done.returncode != 0:
        raise _failure(done, args[0])
    return done.stdout


def work_tree(folder: Path) -> Path | None:
    """The root of the git work tree ``folder`` is in, or None (no git, or not a repository)."""
    try:
        inside = _git(folder, "rev-parse", "--is-inside-work-tree").strip()
        if inside != b"true":
            return None
        return Path(os.fsdecode(_git(folder, "rev-parse", "--show-toplevel").strip())).resolve()
    except GitError:
        return None


@dataclass(frozen=True)
class Entry:
    mode: str
    blob: str


def _stat_key(paths: list[Path]) -> tuple:
    key = []
    for path in paths:
        try:
            found = path.stat()
            key.append((found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns))
        except OSError:
            key.append(None)
    return tuple(key)


@dataclass
class Snapshotter:
    """Snapshots of one work tree through our own index file, ``index`` (kept in the session's
    checkpoint folder and reused, so each snapshot hashes only what changed since the last)."""

    root: Path
    index: Path
    # The filters the repository's config defines, turned off in ``git add``, and the config files
    # they were read from (looked at again when one of them changes).
    _filters: tuple[str, ...] = ()
    _config_files: list[Path] = field(default_factory=list)
    _config_key: tuple | None = None

    def __post_init__(self):
        self.root = Path(self.root)
        self.index = Path(self.index)

    def _seed(self) -> None:
        if self._config_files and self.index.exists():
            return
        said = _git(self.root, "rev-parse", "--git-path", "config", "--git-path", "config.worktree",
                    "--git-path", "index").splitlines()
        config, worktree_config, user_index = (path if path.is_absolute() else self.root / path
                                               for path in (Path(os.fsdecode(line)) for line in said))
        self._config_files = self._config_files or [config, worktree_config]
        if self.index.exists():
            return
        if user_index.exists():
            shutil.copyfile(user_index, self.index)
            os.chmod(self.index, 0o600)
            staged = self._git("ls-files", "--stage", "-z", env=self._env()).split(b"\0")
            gitlinks = [entry.split(b"\t", 1)[1] for entry in staged if entry.startswith(MODE_GITLINK.encode())]
            self._forget(gitlinks)

    def _git(self, *args: str, env: dict[str, str] | None = None, data: bytes | None = None) -> bytes:
        # Every command that may write our index gets the filters turned off: writing it makes git
        # hash again the files it cannot tell from their time stamps, through their filter.
        return _git(self.root, *args, env=env, data=data, filters=self._filters)

    def _forget(self, paths: list[bytes]) -> None:
        """Take gitlinks out of our index, so that the next ``git add`` does not enter them."""
        if paths:
            self._git("update-index", "--force-remove", "-z", "--stdin", env=self._env(),
                      data=b"\0".join(paths) + b"\0")

    def _defined_filters(self) -> tuple[str, ...]:
        key = _stat_key(self._config_files)
        if key != self._config_key:
            self._filters, read_from = safe_git.defined_filters(self.root)
            self._config_files = list(dict.fromkeys(self._config_files[:2] + read_from))
            self._config_key = _stat_key(self._config_files)
        return self._filters

    def _stage(self) -> list[bytes]:
        """The work tree into our index; the nested repositories it took in as gitlinks."""
        self._seed()
        done = _run(self.root, "add", "--ignore-errors", "-A", "--", ".", env=self._env(),
                    filters=self._defined_filters())
        said = [line for line in os.fsdecode(done.stderr).splitlines() if line.strip()]
        others = [line for line in said if line.startswith(("error:", "fatal:")) and not _NO_COMMIT.match(line)]
        if done.returncode != 0 and others:
            raise _failure(done, "add")
        return [os.fsencode(match.group(1)) for match in map(_EMBEDDED.match, said) if match]

    def _env(self) -> dict[str, str]:
        return {"GIT_INDEX_FILE": str(self.index)}

    def tree(self) -> str:
        """The whole work tree as a tree object (ignored files left out)."""
        embedded = self._stage()
        tree = self._git("write-tree", env=self._env()).decode().strip()
        self._forget(embedded)
        return tree

    def changes_since(self, before: str, prefix: str) -> list[tuple[str, Entry | None, Entry | None]]:
        """(path from the root, entry in ``before``, entry now) for every file under ``prefix`` that
        differs in the work tree from the tree ``before`` (our index against it: no tree written)."""
        embedded = self._stage()
        args = ["diff-index", "--cached", "--no-ext-diff", "--no-textconv", "-r", "-z", "--no-renames", before]
        if prefix:
            args += ["--", prefix]
        fields = self._git(*args, env=self._env()).split(b"\0")
        self._forget(embedded)
        found = []
        for index in range(0, len(fields) - 1, 2):
            meta, path = fields[index].decode(), os.fsdecode(fields[index + 1])
            old_mode, new_mode, old_blob, new_blob, _ = meta.lstrip(":").split(" ")
            old = Entry(old_mode, old_blob) if old_mode != "000000" else None
            new = Entry(new_mode, new_blob) if new_mode != "000000" else None
            found.append((path, old, new))
        return found

    def blob(self, sha: str) -> bytes:
        return self._git("cat-file", "blob", sha)
