"""Reading a session file (``store.py`` writes it): the header, the entries, the context a resumed
session sends, the numbered history. A torn last line is skipped; a damaged file is a SessionError
with one sentence; loading never rewrites the file."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from mini_letta.errors import SessionError
from mini_letta.messages import Message, validity_problems
from mini_letta.sessions.repair import repair
from mini_letta.wording import counted

FORMAT = 1


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def fingerprint(data: dict[str, Any]) -> str:
    """Of a message's ``to_dict()``: the hash of its JSON in the form a message line holds it, so a
    resume hashes the bytes it read (:func:`_line_fingerprint`) instead of serialising every message
    again. Two forms of the same content that differ in key order differ here too; that only costs a
    message logged again by the next compaction."""
    return _digest(json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8"))


def _digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


_MESSAGE_LINE_START = b'{"type":"message","message":'


def _line_fingerprint(line: bytes) -> str | None:
    """``fingerprint`` of the message a message line holds, as the writer writes that line."""
    if line.startswith(_MESSAGE_LINE_START) and line.endswith(b"}"):
        return _digest(line[len(_MESSAGE_LINE_START):-1])
    return None


def entry_lines(path: Path) -> bytes:
    """The whole lines after the header of a session file (a line still being written is left out)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"Cannot read session file {path}: {os_reason(exc)}.") from exc
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
    # The fingerprint (``fingerprint``) of each message of ``logged`` that was read from a message
    # line of its own, hashed from the bytes read: a resume does not serialise them again.
    fingerprints: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return str(self.header.get("id", ""))


def no_header(path: Path) -> str:
    return f"Session file {path} has no valid header; it is damaged or not a session."


def _read_entries(path: Path) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]], list[str], dict[int, str]]:
    """Header, (line number, entry) pairs, warnings, and the fingerprint of the message on each
    message line, by line number. Raises SessionError without a valid header."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SessionError(f"Cannot read session file {path}: {os_reason(exc)}.") from exc
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
                raise SessionError(no_header(path)) from None
            if last and not ends_cleanly:
                warnings.append(f"line {number}: incomplete (the session ended while writing it); skipped")
            else:
                warnings.append(f"line {number}: not valid JSON; skipped")
            continue
        if number == 1:
            if entry.get("type") != "header":
                raise SessionError(no_header(path))
            header = entry
            continue
        entries.append((number, entry))
        fingerprint = _line_fingerprint(line)
        if fingerprint is not None:
            fingerprints[number] = fingerprint
    if header is None:
        raise SessionError(no_header(path))
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
        raise SessionError(f"Cannot read session file {path}: {os_reason(exc)}.") from exc
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
