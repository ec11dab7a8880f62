"""The compaction layers as pure functions over message lists.

Each returns a new list and never mutates the messages it was given: a changed message is a new
object (same id, new content, ``meta`` marks why), so a token cache keyed on id and content sees the
change. Every result passes ``validity_problems`` and keeps the newest user message unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from mini_letta.messages import Message, ToolCall
from mini_letta.compaction.transcript import clip, files_from_calls, short_call
from mini_letta.compaction.turns import Cut, has_summary, newest_user_index, turn_starts
from mini_letta.settings import SETTINGS

SUMMARY_HEADER = "Earlier conversation history was compacted to save context; this is a summary of it."
EXTRACTIVE_NOTE = "(Written without a model, because the summarizer was unavailable: the original requests, files and errors follow.)"


def _calls_by_id(messages: list[Message]) -> dict[str, ToolCall]:
    return {call.id: call for m in messages if m.role == "assistant" for call in m.tool_calls}


def _protected_from(messages: list[Message], count: Callable[[Message], int], keep_recent_tokens: int) -> int:
    """Index from which messages are recent enough to keep whole: the newest ``keep_recent_tokens``,
    and at least the results of the last assistant message (the model has not seen them yet)."""
    protected = len(messages)
    total = 0
    for index in range(len(messages) - 1, -1, -1):
        total += count(messages[index])
        if total > keep_recent_tokens:
            break
        protected = index
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            return min(protected, index)
    return protected


def clear_tool_results(messages: list[Message], count: Callable[[Message], int], *,
                       keep_recent_tokens: int, min_tokens: int = SETTINGS.clear_min_tokens, min_freed: int = 0) -> list[Message]:
    """L1: older tool results larger than ``min_tokens`` become a one-line placeholder.

    All of them at once, and only when together they free at least ``min_freed`` tokens: clearing
    rewrites the conversation from the first cleared result on, so the provider's cached prefix
    is lost from there; one large batch now and then costs far less than a small one every turn.
    """
    calls = _calls_by_id(messages)
    protected = _protected_from(messages, count, keep_recent_tokens)
    freed = 0
    result: list[Message] = []
    for index, message in enumerate(messages):
        if (index < protected and message.role == "tool" and not message.meta.get("cleared")
                and count(message) > min_tokens):
            call = calls.get(message.tool_call_id or "")
            what = short_call(call) if call else (message.tool_name or "tool")
            lines = message.text.count("\n") + 1
            status = "error, " if message.is_error else ""
            placeholder = f"[tool output cleared to save context: {what}, {status}{lines:,} lines]"
            cleared = dataclasses.replace(message, text=placeholder, images=[],
                                          meta={**message.meta, "cleared": True})
            freed += count(message) - count(cleared)
            message = cleared
        result.append(message)
    if freed < min_freed:
        return list(messages)
    return result


def collapse_tool_results(messages: list[Message], count: Callable[[Message], int], *,
                          max_tokens: int) -> list[Message]:
    """L5: a tool result above ``max_tokens`` keeps only its head and tail, with a note."""
    result: list[Message] = []
    for message in messages:
        tokens = count(message) if message.role == "tool" else 0
        if tokens > max_tokens and message.text:
            keep_chars = max(SETTINGS.collapse_min_chars, len(message.text) * max_tokens // tokens)
            head = keep_chars * 2 // 3
            tail = keep_chars - head
            omitted = len(message.text) - keep_chars
            text = (f"{message.text[:head]}\n[... output collapsed to save context: {omitted:,} characters "
                    f"of {len(message.text):,} omitted ...]\n{message.text[len(message.text) - tail:]}")
            if len(text) < len(message.text):
                message = dataclasses.replace(message, text=text, images=[],
                                              meta={**message.meta, "collapsed": True})
        result.append(message)
    return result


def drop_oldest_turns(messages: list[Message], measure: Callable[[list[Message]], int], *,
                      limit: int | None, default_turns: int = SETTINGS.drop_turns_without_limit) -> list[Message]:
    """L4: drop whole turns from the oldest until ``measure`` is under ``SETTINGS.drop_ratio`` of ``limit``
    (``default_turns`` turns when no limit is known).

    The previous summary and the turn holding the newest user message stay. When only that turn is
    left and it is still too big, its oldest tool rounds (an assistant message and its results) go,
    never its last round.
    """
    summary = messages[:1] if has_summary(messages) else []
    starts = turn_starts(messages)
    newest = newest_user_index(messages)
    if newest is None or not starts:
        return list(messages)
    budget = int(limit * SETTINGS.drop_ratio) if limit else None

    def fits(candidate: list[Message], dropped: int) -> bool:
        return measure(candidate) < budget if budget is not None else dropped >= default_turns

    candidate = list(messages)
    dropped = 0
    for start in starts:
        if start >= newest or fits(candidate, dropped):
            break
        candidate = summary + messages[_next_turn(starts, start, len(messages)):]
        dropped += 1
    if fits(candidate, dropped) or budget is None:
        return candidate
    return _drop_oldest_rounds(candidate, measure, budget)


def _next_turn(starts: list[int], start: int, end: int) -> int:
    later = [s for s in starts if s > start]
    return later[0] if later else end


def _drop_oldest_rounds(messages: list[Message], measure: Callable[[list[Message]], int], budget: int) -> list[Message]:
    newest = newest_user_index(messages) or 0
    rounds = [i for i in range(newest + 1, len(messages)) if messages[i].role == "assistant"]
    candidate = messages
    for next_round in rounds[1:]:
        if measure(candidate) < budget:
            break
        candidate = messages[:newest + 1] + messages[next_round:]
    return candidate


def summary_message(body: str, files_read: list[str], files_modified: list[str], *, note: str = "",
                    kept: str = "", **meta) -> Message:
    """The one user-role message that stands for the compacted history.

    ``note`` goes under the header (which turns this is, where to find them) and ``kept`` at the
    end (the audit and the carry-over, see ``compaction/keep.py``).
    """
    parts = [SUMMARY_HEADER] + ([note] if note else []) + ["", body.strip()]
    if files_read:
        parts += ["", "Files read: " + _newest_files(files_read)]
    if files_modified:
        parts += ["", "Files modified: " + ", ".join(files_modified)]
    if kept:
        parts += ["", kept]
    return Message(role="user", kind="summary", text="\n".join(parts), seq=0,
                   meta={"files_read": list(files_read), "files_modified": list(files_modified), **meta})


def _newest_files(files: list[str]) -> str:
    """The newest ``summary_files_listed`` of ``files`` (oldest first), and how many earlier ones."""
    shown = files[-SETTINGS.summary_files_listed:] if SETTINGS.summary_files_listed > 0 else []
    earlier = len(files) - len(shown)
    more = f"{earlier} earlier (find them with conversation_search)" if earlier else ""
    return ", ".join([more] + shown if more else shown)


def summary_body(message: Message) -> str:
    """The summary text of an earlier summary message, without the header and file lists."""
    return message.meta.get("summary_body", message.text)


def head_summary(messages: list[Message]) -> str:
    """The summary text a compacted list starts with; "" when it does not start with one."""
    return summary_body(messages[0]) if messages and messages[0].kind == "summary" else ""


def files_touched(messages: list[Message], extra: tuple[list[str], list[str]]) -> tuple[list[str], list[str]]:
    """Files read and modified: from the previous summary, the tool calls, and ``extra``."""
    read: dict[str, None] = {}
    modified: dict[str, None] = {}
    if has_summary(messages):
        read.update(dict.fromkeys(messages[0].meta.get("files_read", [])))
        modified.update(dict.fromkeys(messages[0].meta.get("files_modified", [])))
    called_read, called_modified = files_from_calls(messages)
    read.update(dict.fromkeys(called_read))
    modified.update(dict.fromkeys(called_modified))
    read.update(dict.fromkeys(extra[0]))
    modified.update(dict.fromkeys(extra[1]))
    return [p for p in read if p not in modified], list(modified)


def rebuild(messages: list[Message], cut: Cut, body: str, files: tuple[list[str], list[str]], *,
            note: str = "", kept: str = "", **meta) -> list[Message]:
    """The compacted list: one summary message, then the kept tail."""
    summary = summary_message(body, files[0], files[1], note=note, kept=kept, summary_body=body, **meta)
    return [summary] + cut.kept(messages)


def extractive_summary(messages: list[Message], cut: Cut, files: tuple[list[str], list[str]], *,
                       user_chars: int = SETTINGS.extractive_sizes[0][0],
                       max_users: int = SETTINGS.extractive_sizes[0][1]) -> str:
    """L3: a summary built without a model from what can be copied verbatim."""
    summarised = cut.summarised(messages)
    sections = [EXTRACTIVE_NOTE]
    if has_summary(messages):
        sections.append("## Previous summary\n" + clip(summary_body(messages[0]), SETTINGS.extractive_previous_summary_chars))
    users = [m.text for m in summarised if m.role == "user"]
    if users:
        first = SETTINGS.extractive_first_users
        shown = users if len(users) <= max_users else users[:first] + users[-(max_users - first):]
        lines = [f"- {clip(text.strip(), user_chars)}" for text in shown]
        if len(users) > max_users:
            lines.insert(first, f"- [... {len(users) - max_users} more user messages omitted ...]")
        sections.append("## User messages (oldest first)\n" + "\n".join(lines))
    if cut.kept_turn_start is not None:
        steps = [short_call(call) for m in cut.turn_prefix(messages) for call in m.tool_calls]
        if steps:
            sections.append("## Steps already taken for the current request\n"
                            + "\n".join(f"- {s}" for s in steps[-SETTINGS.extractive_steps:]))
    if files[0] or files[1]:
        sections.append("## Files\nRead: " + (", ".join(files[0]) or "none")
                        + "\nModified: " + (", ".join(files[1]) or "none"))
    calls = _calls_by_id(messages)
    errors = [m for m in summarised if m.role == "tool" and m.is_error][-SETTINGS.extractive_errors:]
    if errors:
        lines = []
        for m in errors:
            call = calls.get(m.tool_call_id or "")
            lines.append(f"- {short_call(call) if call else m.tool_name or 'tool'}: {clip(m.text.strip(), SETTINGS.extractive_error_chars)}")
        sections.append("## Latest errors\n" + "\n".join(lines))
    replies = [m.text for m in summarised if m.role == "assistant" and m.text.strip()]
    if replies:
        sections.append("## Last assistant reply\n" + clip(replies[-1].strip(), SETTINGS.extractive_last_reply_chars))
    return "\n\n".join(sections)


def keeps_newest_user(before: list[Message], after: list[Message]) -> bool:
    """True when the newest user message of ``before`` is in ``after`` unchanged."""
    index = newest_user_index(before)
    if index is None:
        return True
    original = before[index]
    return any(m.id == original.id and m.text == original.text for m in after)

