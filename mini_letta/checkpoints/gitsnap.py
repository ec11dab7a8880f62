"""Snapshots of a git work tree that leave the user's repository as it was.

The tree is staged into an index of our own (``GIT_INDEX_FILE``, first seeded with a copy of the
user's index so unchanged files are not hashed again), written as a tree, and wrapped in a commit object
that no ref points to. The user's index, HEAD, branches and stash are never touched; only new
objects are added to the object database. Files that git ignores are not in a snapshot.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# commit-tree needs an identity; a repository without one configured must not make snapshots fail.
_IDENTITY = {"GIT_AUTHOR_NAME": "mini-letta", "GIT_AUTHOR_EMAIL": "checkpoints@mini-letta.invalid",
             "GIT_COMMITTER_NAME": "mini-letta", "GIT_COMMITTER_EMAIL": "checkpoints@mini-letta.invalid"}
MODE_EXECUTABLE = "100755"
MODE_LINK = "120000"


class GitError(Exception):
    """A git command failed; the message is git's own last line."""


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None, data: bytes | None = None) -> bytes:
    full_env = {**os.environ, **_IDENTITY, **(env or {})}
    # Our own commands must not be slowed or stopped by the user's pager or prompts.
    full_env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=full_env, input=data, capture_output=True, check=False)
    except OSError as exc:
        raise GitError(f"git could not be started ({exc.strerror or exc})") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(lines[-1] if lines else f"git {args[0]} failed")
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


class Snapshotter:
    """Snapshots of one work tree through our own index file, ``index`` (kept in the session's
    checkpoint folder and reused, so each snapshot hashes only what changed since the last)."""

    def __init__(self, root: Path, index: Path):
        self.root = Path(root)
        self.index = Path(index)

    def _seed(self) -> None:
        if self.index.exists():
            return
        user_index = Path(os.fsdecode(_git(self.root, "rev-parse", "--git-path", "index").strip()))
        if not user_index.is_absolute():
            user_index = self.root / user_index
        if user_index.exists():
            shutil.copyfile(user_index, self.index)
            os.chmod(self.index, 0o600)

    def tree(self) -> str:
        """The whole work tree as a tree object (ignored files left out)."""
        self._seed()
        env = {"GIT_INDEX_FILE": str(self.index)}
        _git(self.root, "add", "-A", "--", ".", env=env)
        return _git(self.root, "write-tree", env=env).decode().strip()

    def commit(self, tree: str) -> str:
        """A commit object for ``tree`` that no ref points to."""
        return _git(self.root, "commit-tree", tree, "-m", "mini-letta checkpoint").decode().strip()

    def changes(self, before: str, after: str, prefix: str) -> list[tuple[str, Entry | None, Entry | None]]:
        """(path from the root, entry before, entry after) for every file that differs under ``prefix``."""
        args = ["diff-tree", "-r", "-z", "--no-renames", before, after]
        if prefix:
            args += ["--", prefix]
        fields = _git(self.root, *args).split(b"\0")
        found = []
        for index in range(0, len(fields) - 1, 2):
            meta, path = fields[index].decode(), os.fsdecode(fields[index + 1])
            old_mode, new_mode, old_blob, new_blob, _ = meta.lstrip(":").split(" ")
            old = Entry(old_mode, old_blob) if old_mode != "000000" else None
            new = Entry(new_mode, new_blob) if new_mode != "000000" else None
            found.append((path, old, new))
        return found

    def blob(self, sha: str) -> bytes:
        return _git(self.root, "cat-file", "blob", sha)
