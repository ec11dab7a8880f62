"""Durable sessions: one append-only JSONL file per session under ``home()/sessions/``.

Line 1 is a header; every later line is one entry (a message, a compaction, a memory edit). Each
entry is written with a single ``write``, so a crash of the process loses at most the entry being
written, and that torn line is skipped on load. The file is fsynced at each durable point: a reply
that ends a step without tool calls (the end of a turn, or its interrupted reply), every entry that
is not a message, and the close; a power cut loses at most the turn under way, and a tool loop pays
one fsync, not two a step. Loading never rewrites a file: the full
history stays on disk while the in-context view is rebuilt from the last compaction.

Entry shapes::

    {"type":"header","format":1,"id","workspace","provider","model","started"}
    {"type":"message","message":{...Message.to_dict()}}
    {"type":"compaction","record":{...},"boundary_seq":N,"summary":{...}|null,
     "kept_ids":[...],"messages":[...]}
    {"type":"memory_edit","label","action","chars"}
    {"type":"window","tokens":N,"source":"learned"}     the server named its window in a rejection
    {"type":"withdrawn","id":"msg_..."}                 a message refused before it was sent
    {"type":"rewind","to":"msg_...","boundary_seq":N,"summary":null,"kept_ids":[...],"messages":[...]}
                                                        /rewind: the context is ``kept_ids`` from now on

A withdrawn message stays in the file (and in the full history) but not in the context a resumed
session sends. After a compaction the context is ``[summary] + kept`` (kept in ``kept_ids`` order); ``messages``
holds the versions of kept messages that changed (e.g. tool results cleared) or were never logged.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import time
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Callable

from mini_letta.sessions import lock as session_lock
from mini_letta.errors import SessionError
from mini_letta.messages import Message
from mini_letta.trust.redact import redact
from mini_letta.sessions.loading import (FORMAT, LoadedSession, entry_lines, fingerprint, os_reason,  # noqa: F401 (re-exported)
                                         load_session, no_header, numbered_turns, read_history)


# Image data (a chance match would corrupt it), our own ids (random-looking, never secret; scanning
# them would load the secret detector for every "hi") and a provider's sealed items (OpenAI's
# reasoning and compaction ``encrypted_content``: high-entropy by design, sent back byte for byte).
_UNREDACTED_KEYS = frozenset({"images", "id", "tool_call_id", "kept_ids", "encrypted_content"})

FileOpener = Callable[[Path, str], IO[bytes]]


def sessions_dir(home: Path) -> Path:
    return Path(home) / "sessions"


def new_session_id() -> str:
    """Sortable by time and short enough to type: ``20261129-155602-a1b2c3``."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def _open_private(path: Path, mode: str) -> IO[bytes]:
    # Sessions hold whole conversations; nobody else on the machine should read them.
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    if mode == "xb":
        flags |= os.O_EXCL
    return os.fdopen(os.open(path, flags, 0o600), "ab")


class SessionWriter:
    """Appends entries to one session file. Every write failure raises :class:`SessionError`."""

    def __init__(self, path: Path, file: IO[bytes], header: dict[str, Any], *, torn_tail: bool = False,
                 lock: session_lock.SessionLock | None = None):
        self.path = Path(path)
        self.header = header
        self._file = file
        # This process is the session's only writer while it holds the lock (sessions/lock.py).
        self.lock = lock
        # A failed or interrupted write may leave half a line; the next entry must start on its own
        # line or it would be lost along with the fragment.
        self._needs_newline = torn_tail
        # Entries written since the last fsync (see the module docstring: the durable points).
        self._unsynced = False
        # What each logged message looked like, so a compaction re-logs only messages that changed.
        self._logged: dict[str, str] = {}

    @property
    def id(self) -> str:
        return str(self.header.get("id", self.path.stem))

    @classmethod
    def create(cls, home: Path, workspace: Path | str, provider: str, model: str, *,
               file_opener: FileOpener = _open_private, fork_of: Path | None = None,
               mode: str | None = None) -> SessionWriter:
        """A new session; ``fork_of``: a session file whose entries the new one starts with
        (``--fork-session``: the same history, then a conversation of its own); ``mode``:
        ``"print"`` for a ``-p`` run, recorded in the header and shown in the listings."""
        from mini_letta import config

        folder = sessions_dir(home)
        history = entry_lines(Path(fork_of)) if fork_of is not None else b""
        try:
            config.private_folder(Path(home))
            folder.mkdir(exist_ok=True, mode=0o700)
        except OSError as exc:
            raise SessionError(f"Cannot create the sessions folder {folder}: {os_reason(exc)}.") from exc
        for _ in range(5):
            session_id = new_session_id()
            path = folder / f"{session_id}.jsonl"
            lock = session_lock.acquire(path)
            try:
                file = file_opener(path, "xb")
            except FileExistsError:
                lock.release()
                continue
            except OSError as exc:
                lock.release()
                raise SessionError(f"Cannot create session file {path}: {os_reason(exc)}.") from exc
            header = {
                "type": "header",
                "format": FORMAT,
                "id": session_id,
                "workspace": str(Path(workspace).resolve()),
                "provider": provider,
                "model": model,
                "started": datetime.now().astimezone().isoformat(timespec="seconds"),
            }
            if fork_of is not None:
                header["forked_from"] = Path(fork_of).stem
            if mode:
                header["mode"] = mode
            writer = cls(path, file, header, lock=lock)
            try:
                writer._write(header)
                writer._write_bytes(history)
            except BaseException:
                writer.close()
                raise
            return writer
        raise SessionError(f"Cannot create a new session file in {folder}: every generated name was taken.")

    @classmethod
    def open_existing(cls, path: Path, *, loaded: LoadedSession | None = None,
                      file_opener: FileOpener = _open_private,
                      lock: session_lock.SessionLock | None = None) -> SessionWriter:
        """Append to a session being resumed; pass its ``load_session`` result so a later
        compaction does not log unchanged messages again, and the lock taken before loading it
        (without one it is taken here: ``SessionBusyError`` while another process has it)."""
        path = Path(path)
        lock = lock or session_lock.acquire(path)
        try:
            with open(path, "rb") as existing:
                first = existing.readline()
                existing.seek(0, os.SEEK_END)
                size = existing.tell()
                torn_tail = False
                if size:
                    existing.seek(size - 1)
                    torn_tail = existing.read(1) != b"\n"
            file = file_opener(path, "ab")
        except OSError as exc:
            lock.release()
            raise SessionError(f"Cannot open session file {path} for writing: {os_reason(exc)}.") from exc
        try:
            header = json.loads(first)
        except (json.JSONDecodeError, UnicodeDecodeError):
            header = {"id": path.stem}
        writer = cls(path, file, header if isinstance(header, dict) else {"id": path.stem}, torn_tail=torn_tail,
                     lock=lock)
        if loaded is not None:
            writer.remember(loaded)
        return writer

    def remember(self, loaded: LoadedSession) -> None:
        """Take note of what the file holds, so a later compaction does not log it again."""
        for message in loaded.logged.values():
            self._logged[message.id] = loaded.fingerprints.get(message.id) or fingerprint(message.to_dict())

    # --- entries --------------------------------------------------------------------------------
    def append_message(self, message: Message) -> None:
        data = message.to_dict()
        ends_a_step = message.role == "assistant" and not message.tool_calls
        self._write({"type": "message", "message": data}, durable=ends_a_step)
        self._logged[message.id] = fingerprint(data)

    def append_compaction(self, record: dict[str, Any], boundary_seq: int, context: list[Message]) -> None:
        """Log a compaction given the whole in-context list it produced.

        A leading summary is stored as ``summary``; the rest by id in ``kept_ids``. Kept messages
        already logged unchanged are not written again; changed or never-logged ones (cleared tool
        results, synthetic interrupted results) go in ``messages`` so a resume rebuilds this list.
        """
        summary = context[0] if context and context[0].kind == "summary" else None
        self._append_context({"type": "compaction", "record": record}, boundary_seq, context, summary)

    def append_rewind(self, to_id: str, boundary_seq: int, context: list[Message]) -> None:
        """Log a rewind to the user message ``to_id``: ``context`` is what stays in the context (the
        history before that message, and a summary of the rest for "summarize from here")."""
        self._append_context({"type": "rewind", "to": to_id}, boundary_seq, context, None)

    def _append_context(self, head: dict[str, Any], boundary_seq: int, context: list[Message],
                        summary: Message | None) -> None:
        kept = context[1:] if summary is not None else list(context)
        changed = []
        fingerprints = {}
        for message in kept:
            data = message.to_dict()
            fingerprints[message.id] = fingerprint(data)
            if self._logged.get(message.id) != fingerprints[message.id]:
                changed.append(data)
        summary_data = summary.to_dict() if summary is not None else None
        self._write({
            **head,
            "boundary_seq": boundary_seq,
            "summary": summary_data,
            "kept_ids": [m.id for m in kept],
            "messages": changed,
        })
        self._logged.update(fingerprints)
        if summary_data is not None:
            self._logged[summary.id] = fingerprint(summary_data)

    def append_memory_edit(self, label: str, action: str, chars: int) -> None:
        self._write({"type": "memory_edit", "label": label, "action": action, "chars": chars})

    def append_window(self, tokens: int, source: str) -> None:
        self._write({"type": "window", "tokens": tokens, "source": source})

    def append_withdrawn(self, message_id: str) -> None:
        self._write({"type": "withdrawn", "id": message_id})

    def close(self) -> None:
        try:
            if self._unsynced:
                os.fsync(self._file.fileno())
            self._file.close()
        except OSError:
            pass  # every entry was written whole; only a power cut now could take the last turn's
        if self.lock is not None:
            self.lock.release()

    def discard(self) -> None:
        """Close and delete the session: a print run that failed before any reply leaves nothing
        that ``-c`` or ``/resume`` could take for a conversation."""
        path = self.path
        self.close()
        for leftover in (path, session_lock.lock_path(path)):
            try:
                leftover.unlink()
            except OSError:
                pass  # already gone, or not ours to delete: it is only a session without replies

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _write(self, entry: dict[str, Any], durable: bool = True) -> None:
        line = json.dumps(redact(entry, keep=_UNREDACTED_KEYS), ensure_ascii=False, separators=(",", ":")) + "\n"
        self._write_bytes(line.encode("utf-8"), durable)

    def _write_bytes(self, data: bytes, durable: bool = True) -> None:
        """One ``write`` of ``data``; with ``durable``, an fsync of it and of every entry before it."""
        if self._needs_newline:
            data = b"\n" + data
        try:
            self._file.write(data)
            self._file.flush()
            if durable:
                os.fsync(self._file.fileno())
            self._unsynced = not durable
        except OSError as exc:
            self._needs_newline = True
            # What happens next is the caller's to say (the agent goes on in memory, a rewind holds
            # in memory only): said here too, it was said twice.
            reason = "the disk is full" if exc.errno == errno.ENOSPC else os_reason(exc)
            raise SessionError(f"Cannot save to session file {self.path}: {reason}.") from exc
        self._needs_newline = False
