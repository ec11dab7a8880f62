"""Where checkpoints live: file contents by their sha256, and an append-only log of what changed.

One folder per session, next to its file (``sessions/<id>.checkpoints/``), so it goes wherever the
session goes. Modes are private (0700 folders, 0600 files): the contents are the user's code. The
folder also holds ``index``, the git index of our own that command snapshots are staged in.

Everything is written before the change it records, in that order, but not fsynced: if mini-letta
dies at any point, the record of a change is on file before the change is. Only a power cut can lose
it, and then it can equally lose the change itself, which the tools do not fsync either; an fsync
takes about 8 ms on this machine's disk, two per write would break the 10 ms budget on their own.

The log is JSONL, one entry a line, in the order things happened::

    {"t":"checkpoint","message":"msg_…","turn":N,"time":1733…}   a user message was sent
    {"t":"before","path":"src/a.py","by":"write_file","state":STATE}   the file before a change
    {"t":"after","path":"src/a.py","by":"write_file","state":STATE}    what the change left
    {"t":"snapshot","tree":"<sha1>","message":"msg_…"}               git tree before a command

A ``STATE`` is ``{"sha": "<sha256>", "x": true|false, "link": true?}`` or ``null`` for "absent".
A tool's change has a ``before`` only when it is the turn's first change to that file; a command's
and a restore's changes always have one. Every ``before`` state's content is in ``objects/``; an
``after`` state's content is added at the next message (``Checkpoints.settle``) or by the restore
that overwrites it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mini_letta.errors import MiniLettaError

SUFFIX = ".checkpoints"


class CheckpointError(MiniLettaError):
    """The checkpoint folder cannot be read or written; the message says which and why."""


def folder_for(session_path: Path) -> Path:
    return Path(session_path).with_suffix(SUFFIX)


@dataclass(frozen=True)
class FileState:
    """What a path held: its content's sha256, whether it was executable, whether it was a symlink
    (then the content is the link's target)."""

    sha: str
    executable: bool = False
    link: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"sha": self.sha, "x": self.executable}
        if self.link:
            data["link"] = True
        return data

    @classmethod
    def from_dict(cls, data: Any) -> FileState | None:
        if not isinstance(data, dict) or not isinstance(data.get("sha"), str):
            return None
        return cls(data["sha"], bool(data.get("x")), bool(data.get("link")))


def state_dict(state: FileState | None) -> dict[str, Any] | None:
    return state.to_dict() if state is not None else None


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_state(path: Path) -> tuple[FileState | None, bytes | None]:
    """The state of ``path`` now and its bytes; (None, None) when nothing is there.

    Raises OSError for what cannot be recorded (a folder, a FIFO, an unreadable file)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None, None
    except NotADirectoryError:
        return None, None
    if stat.S_ISLNK(info.st_mode):
        data = os.fsencode(os.readlink(path))
        return FileState(digest(data), link=True), data
    if not stat.S_ISREG(info.st_mode):
        raise IsADirectoryError(f"{path} is not a regular file") if stat.S_ISDIR(info.st_mode) \
            else OSError(f"{path} is not a regular file")
    with open(path, "rb") as handle:
        data = handle.read()
    return FileState(digest(data), bool(info.st_mode & stat.S_IXUSR)), data


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


class Store:
    """The objects and the log of one session's checkpoints."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.objects = self.folder / "objects"
        self.log_path = self.folder / "log.jsonl"
        self._ready = False
        self._log: Any = None  # the log, opened once: an open per entry cost a millisecond here

    def ensure(self) -> None:
        if not self._ready:
            self.objects.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.folder, 0o700)
            self._ready = True

    def _object_path(self, sha: str) -> Path:
        # One flat folder: a fan-out of subfolders cost a mkdir (a millisecond here) per new object.
        return self.objects / sha

    def has(self, sha: str) -> bool:
        return self._object_path(sha).exists()

    def put(self, data: bytes, sha: str | None = None) -> str:
        """Keep ``data`` (once: the same content is stored one time); returns its sha256.

        Written straight under its name (a temporary name and a rename cost another millisecond
        per write here); an object cut short by a crash is told by its size and written again, and
        ``get`` checks the hash of what it reads."""
        self.ensure()
        sha = sha or digest(data)
        target = self._object_path(sha)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if target.stat().st_size == len(data):
                return sha
            fd = os.open(target, os.O_WRONLY | os.O_TRUNC)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return sha

    def get(self, sha: str) -> bytes:
        data = self._object_path(sha).read_bytes()
        if digest(data) != sha:
            raise OSError(f"the saved copy {sha[:12]} is damaged")
        return data

    def append(self, entry: dict[str, Any]) -> None:
        self.append_many([entry])

    def append_many(self, entries: list[dict[str, Any]]) -> None:
        """All of ``entries`` in one write."""
        if not entries:
            return
        if self._log is None:
            self.ensure()
            self._log = open(self.log_path, "ab", buffering=0, opener=_private)
        line = "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in entries).encode()
        self._log.write(line)

    def entries(self) -> list[dict[str, Any]]:
        """Every whole entry of the log, oldest first (a torn last line is skipped)."""
        try:
            raw = self.log_path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise CheckpointError(f"Cannot read the checkpoints in {self.folder}: {exc.strerror or exc}.") from None
        found = []
        for line in raw.split(b"\n"):
            try:
                entry = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(entry, dict):
                found.append(entry)
        return found
