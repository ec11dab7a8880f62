"""Turning messages into plain text for the summarizer, and trimming text to a size.

The summarizer reads a transcript rather than the messages themselves: given real turns it tends to
continue the conversation or call tools instead of describing it (pi serialises for this reason).
"""

from __future__ import annotations

import json

from mini_letta.messages import Message, ToolCall
from mini_letta.wording import counted
from mini_letta.settings import SETTINGS


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its head and tail."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[... {omitted:,} characters omitted ...]\n{text[len(text) - tail:]}"


def middle_truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters by removing its middle: the start of the history holds
    the original request, its end the current work; both matter more than the middle."""
    if len(text) <= limit:
        return text
    note = "\n\n[... {:,} characters from the middle of the history omitted to fit the summarizer ...]\n\n"
    room = max(0, limit - len(note.format(len(text))))
    head = room // 2
    tail = room - head
    return text[:head] + note.format(len(text) - room) + text[len(text) - tail:]


def describe_call(call: ToolCall, limit: int = SETTINGS.transcript_tool_argument_chars) -> str:
    return f"{call.name}({clip(call.arguments.strip(), limit)})"


def short_call(call: ToolCall) -> str:
    """A call as a placeholder names it: the tool and its path or command, not every argument."""
    try:
        arguments = call.parse_arguments()
    except ValueError:
        return f"{call.name} {clip(call.arguments.strip(), SETTINGS.quote_chars)}".strip()
    for key in ("path", "file_path", "command", "pattern", "query", "url"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return f"{call.name} {clip(value, SETTINGS.quote_long_chars)}"
    rest = json.dumps(arguments, ensure_ascii=False) if arguments else ""
    return f"{call.name} {clip(rest, SETTINGS.quote_chars)}".strip()


def serialise(messages: list[Message]) -> str:
    """A plain transcript: ``[user] …``, ``[assistant] … -> tool(args)``, ``[tool result] …``."""
    lines: list[str] = []
    for message in messages:
        images = f" [{counted(len(message.images), 'image')}]" if message.images else ""
        if message.role == "user":
            label = "[earlier summary]" if message.kind == "summary" else "[user]"
            lines.append(f"{label} {message.text}{images}")
        elif message.role == "assistant":
            parts = [message.text.strip()] if message.text.strip() else []
            parts += [f"-> {describe_call(call)}" for call in message.tool_calls]
            lines.append("[assistant] " + "\n".join(parts) if parts else "[assistant] (no text)")
        else:
            label = "[tool error" if message.is_error else "[tool result"
            name = f" {message.tool_name}" if message.tool_name else ""
            lines.append(f"{label}{name}] {clip(message.text, SETTINGS.transcript_tool_result_chars)}{images}")
    return "\n\n".join(lines)


def files_from_calls(messages: list[Message]) -> tuple[list[str], list[str]]:
    """Paths the tool calls in ``messages`` read and modified, in first-seen order.

    The tool's name decides: names with "read"/"view" read, names with "write"/"edit"/"patch" modify.
    """
    read: dict[str, None] = {}
    modified: dict[str, None] = {}
    for message in messages:
        for call in message.tool_calls:
            try:
                arguments = call.parse_arguments()
            except ValueError:
                continue
            path = arguments.get("path") or arguments.get("file_path")
            if not isinstance(path, str) or not path:
                continue
            name = call.name.lower()
            if any(word in name for word in ("write", "edit", "patch", "create")):
                modified[path] = None
            elif any(word in name for word in ("read", "view", "open")):
                read[path] = None
    return list(read), list(modified)
