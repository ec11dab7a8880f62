"""conversation_search: the model's way back to what compaction took out of its context.

Letta calls this recall memory: the whole session is on disk, so nothing evicted is out of reach.
The search reads the session file as it is at that moment (``session.read_history``; the writer
only appends, so there is no lock to wait for), with the text as it was saved: what redaction
replaced stays replaced. Results are excerpts with turn numbers, newest first, within the same
output cap as every tool result.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mini_letta.settings import SETTINGS
from mini_letta.trust.bounded_regex import BadPattern, compile_bounded
from mini_letta.errors import SessionError
from mini_letta.messages import Message, ToolSpec
from mini_letta.resources import tool_spec
from mini_letta.sessions.store import read_history
from mini_letta.toolbox.outcome import ToolError
from mini_letta.wording import counted

NAME = "conversation_search"


def _searchable(message: Message) -> str:
    """The text a message is searched by; this tool's own calls and results are left out, or every
    search would find the searches before it."""
    if message.role == "tool":
        return "" if message.tool_name == NAME else message.text
    if message.role == "assistant":
        calls = [f"-> {call.name}({call.arguments})" for call in message.tool_calls if call.name != NAME]
        return "\n".join([message.text.strip(), *calls]).strip()
    return message.text if message.kind == "normal" else ""


def _label(turn: int, message: Message) -> str:
    when = datetime.datetime.fromtimestamp(message.created).strftime("%Y-%m-%d %H:%M")
    if message.role == "tool":
        who = f"{message.tool_name or 'tool'} {'error' if message.is_error else 'output'}"
    else:
        who = message.role
    return f"[turn {turn}, {who}, {when}]"


def _excerpt(text: str, start: int, end: int) -> str:
    begin = max(0, start - SETTINGS.tools.recall_context_chars)
    finish = min(len(text), end + SETTINGS.tools.recall_context_chars)
    piece = " ".join(text[begin:finish].split())
    return ("…" if begin else "") + piece + ("…" if finish < len(text) else "")


def _date(value: str | None, name: str) -> datetime.date | None:
    if value is None or not value.strip():
        return None
    try:
        return datetime.date.fromisoformat(value.strip()[:10])
    except ValueError:
        raise ToolError(f"{name} must be a date like 2026-11-30, not {value!r}.") from None


def search_history(history: list[tuple[int, Message]], query: str, *, regex: bool = False,
                   start_turn: int | None = None, end_turn: int | None = None,
                   start_date: str | None = None, end_date: str | None = None, max_chars: int) -> str:
    """Excerpts of the messages in ``history`` matching ``query``, newest first, in ``max_chars``.

    Without ``regex`` every word of the query must occur (any case); when no message has them all,
    messages with the most of them are shown, and the result says so.
    """
    if not query.strip():
        raise ToolError("query is empty; give words or a regex to look for.")
    first_day, last_day = _date(start_date, "start_date"), _date(end_date, "end_date")
    if regex:
        try:
            pattern = compile_bounded(query, ignore_case=True)
        except BadPattern as exc:
            raise ToolError(str(exc)) from None
        except ImportError:
            raise ToolError("regex search needs google-re2, which cannot run here; search by words instead.") from None
        words = []
    else:
        words = list(dict.fromkeys(word.lower() for word in query.split()))
    candidates = []
    for turn, message in history:
        if (start_turn is not None and turn < start_turn) or (end_turn is not None and turn > end_turn):
            continue
        day = datetime.date.fromtimestamp(message.created)
        if (first_day and day < first_day) or (last_day and day > last_day):
            continue
        text = _searchable(message)
        if not text:
            continue
        if regex:
            match = pattern.search(text)
            if match:
                candidates.append((1, turn, message, text, match.start(), match.end()))
            continue
        lowered = text.lower()
        found = [(lowered.find(word), word) for word in words if word in lowered]
        if found:
            position, word = min(found)
            candidates.append((len(found), turn, message, text, position, position + len(word)))
    turns = [turn for turn, _ in history]
    scope = f"turns {start_turn or 1}–{end_turn or max(turns, default=0)}"
    described = f"/{query}/" if regex else repr(query)
    best = max((c[0] for c in candidates), default=0)
    candidates = [c for c in candidates if c[0] == best]
    if not candidates:
        return f"No messages match {described} in {scope} of this session."
    partial = "" if regex or best == len(words) else f" (no message has all the words; these have {best} of {len(words)})"
    lines = [f"{counted(len(candidates), 'message')} {'matches' if len(candidates) == 1 else 'match'} {described} in {scope}{partial}, newest first:"]
    used = len(lines[0])
    budget = max(0, max_chars - SETTINGS.tools.recall_note_chars)
    shown = 0
    for _, turn, message, text, start, end in reversed(candidates):
        line = f"{_label(turn, message)} {_excerpt(text, start, end)}"
        if used + len(line) + 1 > budget and shown:
            break
        line = line[:max(0, budget - used - 1)]
        lines.append(line)
        used += len(line) + 1
        shown += 1
    if shown < len(candidates):
        lines.append(f"[{counted(len(candidates) - shown, 'older match', 'older matches')} not shown; narrow the search with more words, "
                     f"start_turn/end_turn or a date range]")
    return "\n".join(lines)


def recall_tool(session_path: Callable[[], Path | None]) -> tuple[ToolSpec, Callable[[dict[str, Any], int], str]]:
    """The tool's spec and handler; ``session_path()`` names the current session file (it changes
    on /clear), or None when the session is not being saved."""
    data = tool_spec(NAME)

    def handler(args: dict[str, Any], max_chars: int) -> str:
        path = session_path()
        if path is None:
            raise ToolError("There is no session record to search: this session is not being saved.")
        try:
            history = read_history(path)
        except SessionError as exc:
            raise ToolError(str(exc)) from None
        return search_history(history, args["query"], regex=bool(args.get("regex")),
                              start_turn=args.get("start_turn"), end_turn=args.get("end_turn"),
                              start_date=args.get("start_date"), end_date=args.get("end_date"),
                              max_chars=max_chars)

    return ToolSpec(data["name"], data["description"], data["parameters"]), handler
