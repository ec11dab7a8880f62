"""An MCP tool in mini-letta's terms: its name (``mcp__<server>__<tool>``), its spec, whether it
changes anything, and its result as the text the model reads. Pure functions over the SDK's objects;
``source.py`` offers the tools to the toolbox."""

from __future__ import annotations

import json
import re
from typing import Any

from mini_letta.messages import ToolSpec
from mini_letta.toolbox.outcome import ToolOutcome, human_size

# OpenAI's limit on a function name; Anthropic's is the same.
MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{_UNSAFE.sub('_', tool)}"[:MAX_NAME]


def unique_name(name: str, taken: set[str]) -> str:
    """``name``, or, when another tool has it already (``get.x`` and ``get_x`` both become
    ``get_x``; two long names meet at the 64-character cut), it with the first free ``_2``, ``_3``...
    suffix, cut to fit."""
    number = 1
    candidate = name
    while candidate in taken:
        number += 1
        suffix = f"_{number}"
        candidate = name[:MAX_NAME - len(suffix)] + suffix
    return candidate


def to_spec(server: str, tool: Any) -> ToolSpec:
    schema = tool.input_schema if isinstance(getattr(tool, "input_schema", None), dict) else {}
    schema = {**schema, "type": "object"}
    schema.setdefault("properties", {})
    return ToolSpec(tool_name(server, tool.name), tool.description or tool.title or tool.name, schema)


def read_only(tool: Any) -> bool:
    """Whether the server says the tool changes nothing (``readOnlyHint``; unsaid means it may)."""
    return bool(getattr(getattr(tool, "annotations", None), "read_only_hint", False))


def outcome_from(result: Any) -> ToolOutcome:
    """The text the model reads: text blocks as they are; images, audio, links and embedded binary
    resources as one line each that says what and how big (the model cannot see them here)."""
    parts = [block_text(block) for block in getattr(result, "content", None) or []]
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, indent=2))
    text = "\n".join(parts) if parts else "(the tool returned nothing)"
    return ToolOutcome(text, is_error=bool(getattr(result, "is_error", False)))


def block_text(block: Any) -> str:
    """One content block (of a tool result or a prompt's message) as the model reads it."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        size = len(block.data or "") * 3 // 4
        return f"[{kind}: {block.mime_type}, {human_size(size)}; not shown to the model]"
    if kind == "resource_link":
        return (f"[resource link: {block.name} <{block.uri}>"
                + (f" ({block.mime_type})" if getattr(block, "mime_type", None) else "") + "]")
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource {resource.uri}]\n{text}"
        size = len(getattr(resource, "blob", "") or "") * 3 // 4
        return (f"[resource {resource.uri}: {getattr(resource, 'mime_type', None) or 'binary'}, "
                f"{human_size(size)}; not shown to the model]")
    return f"[{kind or 'unknown'} content; not shown to the model]"
