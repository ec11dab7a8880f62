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

import contextlib
import errno
import gc
import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from mini_letta.sessions import lock as session_lock
from mini_letta.errors import SessionError
from mini_letta.sessions.repair import repair
from mini_letta.messages import Message, validity_problems
from mini_letta.trust.redact import redact
from mini_letta.wording import counted

FORMAT = 1

# Image data (a chance match would corrupt it) and our own ids (random-looking, never secret; scanning
# them would load the secret detector for every "hi").
_UNREDACTED_KEYS = frozenset({"images", "id", "tool_call_id", "kept_ids"})

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


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _fingerprint(data: dict[str, Any]) -> str:
    """Of a message's ``to_dict()``: the hash of its JSON in the form a message line holds it, so a
    resume hashes the bytes it read (:func:`_line_fingerprint`) instead of serialising every message
    again. Two forms of the same content that differ in key order differ here too; that only costs a
    message logged again by the next compaction."""
    return _digest(json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8"))


def _digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


_MESSAGE_LINE_START = b'{"type":"message","message":'


def _line_fingerprint(line: bytes) -> str | None:
    """``_fingerprint`` of the message a message line holds, as the writer writes that line."""
    if line.startswith(_MESSAGE_LINE_START) and line.endswith(b"}"):
        return _digest(line[len(_MESSAGE_LINE_START):-1])
    return None


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
        history = _entry_lines(Path(fork_of)) if fork_of is not None else b""
        try:
            config.private_folder(Path(home))
            folder.mkdir(exist_ok=True, mode=0o700)
        except OSError as exc:
            raise SessionError(f"Cannot create the sessions folder {folder}: {_reason(exc)}.") from exc
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
                raise SessionError(f"Cannot create session file {path}: {_reason(exc)}.") from exc
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
            raise SessionError(f"Cannot open session file {path} for writing: {_reason(exc)}.") from exc
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
            self._logged[message.id] = loaded.fingerprints.get(message.id) or _fingerprint(message.to_dict())

    # --- entries --------------------------------------------------------------------------------
    def append_message(self, message: Message) -> None:
        data = message.to_dict()
        ends_a_step = message.role == "assistant" and not message.tool_calls
        self._write({"type": "message", "message": data}, durable=ends_a_step)
        self._logged[message.id] = _fingerprint(data)

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
            fingerprints[message.id] = _fingerprint(data)
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
            self._logged[summary.id] = _fingerprint(summary_data)

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
            reason = "the disk is full" if exc.errno == errno.ENOSPC else _reason(exc)
            raise SessionError(f"Cannot save to session file {self.path}: {reason}.") from exc
        self._needs_newline = False


def _entry_lines(path: Path) -> bytes:
    """The whole lines after the header of a session file (a line still being written is left out)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"Cannot read session file {path}: {_reason(exc)}.") from exc
    start = raw.find(b"\n") + 1
    return raw[start:raw.rfind(b"\n") + 1] if start else b""


# --- loading --------------------------------------------------------------------------------------
@dataclass
class LoadedSession:
    header: dict[str, Any]
    messages_in_context: list[Message]
    all_messages: list[Message]
    compactions: list[dict[str, Any]]
    warnings: list[str]
    next_seq: int
    boundary_seq: int
    path: Path | None = None
    # The latest version on disk of each message, by id (synthetic results are not on disk).
    logged: dict[str, Message] = field(default_factory=dict)
    # User turns in the whole file, so a resumed conversation goes on numbering them.
    turns: int = 0
    # The window a server named when it rejected a request, if one did.
    learned_window: int | None = None
    # The fingerprint (``_fingerprint``) of each message of ``logged`` that was read from a message
    # line of its own, hashed from the bytes read: a resume does not serialise them again.
    fingerprints: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return str(self.header.get("id", ""))


def _no_header(path: Path) -> str:
    return f"Session file {path} has no valid header; it is damaged or not a session."


def _read_entries(path: Path) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]], list[str], dict[int, str]]:
    """Header, (line number, entry) pairs, warnings, and the fingerprint of the message on each
    message line, by line number. Raises SessionError without a valid header."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SessionError(f"Cannot read session file {path}: {_reason(exc)}.") from exc
    lines = raw.split(b"\n")
    ends_cleanly = raw.endswith(b"\n")
    if ends_cleanly:
        lines.pop()
    warnings: list[str] = []
    header: dict[str, Any] | None = None
    entries: list[tuple[int, dict[str, Any]]] = []
    fingerprints: dict[int, str] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict):
                raise ValueError("not an object")
        except (ValueError, UnicodeDecodeError):
            last = number == len(lines)
            if number == 1:
                raise SessionError(_no_header(path)) from None
            if last and not ends_cleanly:
                warnings.append(f"line {number}: incomplete (the session ended while writing it); skipped")
            else:
                warnings.append(f"line {number}: not valid JSON; skipped")
            continue
        if number == 1:
            if entry.get("type") != "header":
                raise SessionError(_no_header(path))
            header = entry
            continue
        entries.append((number, entry))
        fingerprint = _line_fingerprint(line)
        if fingerprint is not None:
            fingerprints[number] = fingerprint
    if header is None:
        raise SessionError(_no_header(path))
    if isinstance(header.get("format"), int) and header["format"] > FORMAT:
        warnings.append(f"written by a newer mini-letta (format {header['format']}); unknown entries skipped")
    return header, entries, warnings, fingerprints


def _message(data: Any, number: int, warnings: list[str]) -> Message | None:
    try:
        message = Message.from_dict(data)
        if message.role not in ("user", "assistant", "tool") or not isinstance(message.seq, int):
            raise ValueError("bad role or seq")
        return message
    except (TypeError, ValueError, AttributeError):
        warnings.append(f"line {number}: malformed message; skipped")
        return None


def load_session(path: Path) -> LoadedSession:
    """Rebuild a session: the in-context view from the last compaction, and the full history."""
    with _collector_paused():
        return _load_session(path)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector runs every few hundred allocations and then walks every live
    object; a load allocates dicts and messages by the thousand and keeps them all, with no cycle
    to find, so each of those walks is wasted and they grow with the file (about 40% of loading
    20,000 messages). Garbage made meanwhile is collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _load_session(path: Path) -> LoadedSession:
    header, entries, warnings, line_fingerprints = _read_entries(path)
    all_messages: list[Message] = []
    by_id: dict[str, Message] = {}
    fingerprints: dict[str, str] = {}
    context: list[Message] = []
    compactions: list[dict[str, Any]] = []
    boundary_seq = 0
    max_seq = 0
    learned_window: int | None = None
    for number, entry in entries:
        kind = entry.get("type")
        if kind == "message":
            message = _message(entry.get("message"), number, warnings)
            if message is None:
                continue
            all_messages.append(message)
            by_id[message.id] = message
            fingerprints.pop(message.id, None)
            if number in line_fingerprints:
                fingerprints[message.id] = line_fingerprints[number]
            context.append(message)
            max_seq = max(max_seq, message.seq)
        elif kind in ("compaction", "rewind"):
            summary = None
            if entry.get("summary") is not None:
                summary = _message(entry["summary"], number, warnings)
                if summary is None:
                    continue
            replacements = {}
            for data in entry.get("messages") or []:
                replacement = _message(data, number, warnings)
                if replacement is not None:
                    replacements[replacement.id] = replacement
            kept = []
            missing = 0
            for kept_id in entry.get("kept_ids") or []:
                message = replacements.get(kept_id) or by_id.get(kept_id)
                if message is None:
                    missing += 1
                else:
                    kept.append(message)
            if missing:
                warnings.append(f"line {number}: compaction keeps {counted(missing, 'message')} not found in the file")
            for message in ([summary] if summary is not None else []) + list(replacements.values()):
                if message.id not in by_id:
                    all_messages.append(message)
                by_id[message.id] = message
                fingerprints.pop(message.id, None)
                max_seq = max(max_seq, message.seq)
            context = ([summary] if summary is not None else []) + kept
            boundary = entry.get("boundary_seq")
            boundary_seq = boundary if isinstance(boundary, int) else max_seq + 1
            if kind == "compaction":
                compactions.append(dict(entry.get("record") or {}, boundary_seq=boundary_seq))
        elif kind == "window":
            tokens = entry.get("tokens")
            if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
                learned_window = tokens
        elif kind == "withdrawn":
            context = [m for m in context if m.id != entry.get("id")]
    next_seq = max(max_seq, boundary_seq) + 1
    context, next_seq, dropped = repair(context, next_seq)
    if dropped:
        warnings.append("the session's history is out of order (two processes wrote to it at once, before sessions "
                        f"were locked); left out of the context so that it can be sent: {'; '.join(dropped)} "
                        "(all still in the file)")
    problems = validity_problems(context)
    if problems:
        warnings.append("the rebuilt history has problems: " + "; ".join(problems))
    turns = max((turn for turn, _ in numbered_turns(all_messages)), default=0)
    return LoadedSession(header, context, all_messages, compactions, warnings, next_seq, boundary_seq,
                         path=Path(path), logged=by_id, turns=turns,
                         learned_window=learned_window, fingerprints=fingerprints)


def numbered_turns(messages: list[Message]) -> list[tuple[int, Message]]:
    """Each message with the user turn it belongs to (0 before the first user message).

    A typed message carries its number in ``meta["turn"]``; files written before turns were
    numbered count the typed messages instead, which gives the same numbers.
    """
    numbered = []
    turn = 0
    for message in messages:
        if message.role == "user" and message.kind == "normal":
            stamped = message.meta.get("turn")
            turn = stamped if isinstance(stamped, int) and stamped > turn else turn + 1
        numbered.append((turn, message))
    return numbered


def read_history(path: Path) -> list[tuple[int, Message]]:
    """Every message logged to the session file, as first written, with its turn number.

    For searching the record while the session goes on: it reads the bytes on disk at this moment
    (no lock: the writer only appends), ignores a line still being written, and skips the changed
    copies a compaction logs (a cleared tool result), so tool outputs are searched in full.
    """
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except OSError as exc:
        raise SessionError(f"Cannot read session file {path}: {_reason(exc)}.") from exc
    messages: list[Message] = []
    seen: set[str] = set()
    for line in raw[:raw.rfind(b"\n") + 1].split(b"\n"):
        try:
            entry = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(entry, dict) or entry.get("type") != "message":
            continue
        message = _message(entry.get("message"), 0, [])
        if message is not None and message.id not in seen:
            seen.add(message.id)
            messages.append(message)
    return numbered_turns(messages)
