"""A tool call as the editor shows it: title, kind, the files it touches (locations) and, for a
write or an edit, the change as a diff (old and new text, which the editor renders itself)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp.schema import ToolCallLocation

from mini_letta.toolbox.files import matched_edit

KINDS = {"read_file": "read", "write_file": "edit", "edit_file": "edit", "bash": "execute", "grep": "search",
         "glob": "search", "conversation_search": "search", "skill": "read", "task": "think"}
FILE_TOOLS = ("read_file", "write_file", "edit_file")


def arguments(call) -> dict[str, Any]:
    try:
        parsed = call.parse_arguments()
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def kind(name: str) -> str:
    return KINDS.get(name, "other")


def target(call, resolve: Callable[[str], Path]) -> Path | None:
    """The file a file tool's call names, as a full path; None for other tools or a path it refuses."""
    path = arguments(call).get("path")
    if call.name not in FILE_TOOLS or not isinstance(path, str):
        return None
    try:
        return Path(resolve(path))
    except Exception:  # noqa: BLE001 - outside the workspace, a NUL: the tool says why, not this view
        return None


def locations(call, resolve: Callable[[str], Path]) -> list[ToolCallLocation] | None:
    path = target(call, resolve)
    if path is None:
        return None
    offset = arguments(call).get("offset")
    line = offset if call.name == "read_file" and isinstance(offset, int) and offset > 0 else None
    return [ToolCallLocation(path=str(path), line=line)]


def diff(call, resolve: Callable[[str], Path], read_text: Callable[[Path], str | None]):
    """The change a write or an edit makes, as the protocol's diff content; None otherwise (or when
    the edit cannot apply: the tool's own error says why)."""
    from acp import tool_diff_content

    path = target(call, resolve)
    if path is None or call.name not in ("write_file", "edit_file"):
        return None
    args = arguments(call)
    current = read_text(path)
    if call.name == "write_file":
        content = args.get("content")
        return tool_diff_content(str(path), content, current) if isinstance(content, str) else None
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    if old == "":
        return tool_diff_content(str(path), new, current or None)
    if current is None:
        return None
    old, new, count = matched_edit(current, old, new)
    return tool_diff_content(str(path), current.replace(old, new, 1), current) if count == 1 else None


def disk_text(path: Path) -> str | None:
    """A file's text as it is on disk, None when there is none (or it is not text)."""
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
