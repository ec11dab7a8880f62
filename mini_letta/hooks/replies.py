"""What a hook answered, read as Claude Code reads it, and the tool names its matchers see.

Exit code 0: stdout may be JSON with ``continue`` (false ends the turn, ``stopReason`` said to the
user), ``systemMessage`` (said to the user), ``suppressOutput``, ``decision`` (``block``; the older
``approve``) with ``reason``, and ``hookSpecificOutput`` with ``permissionDecision`` (allow, deny,
ask), ``permissionDecisionReason`` and ``additionalContext``; stdout that is not JSON is context
for UserPromptSubmit and SessionStart, as in Claude Code. Exit code 2 blocks, its stderr the
reason. Any other code is a failure the user is told about, and changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

BLOCK_EXIT_CODE = 2
# Our tools under the names Claude Code users write in matchers and read in ``tool_name``.
CLAUDE_NAMES = {"bash": "Bash", "write_file": "Write", "edit_file": "Edit", "read_file": "Read", "grep": "Grep",
                "glob": "Glob", "task": "Task", "todo_write": "TodoWrite", "exit_plan_mode": "ExitPlanMode",
                "bash_output": "BashOutput", "kill_bash": "KillBash"}
FILE_TOOLS = ("write_file", "edit_file", "read_file")


@dataclass
class Reply:
    """One hook's answer. ``blocked``: exit 2 or a block/deny decision, with its reason."""

    blocked: str | None = None
    permission: str | None = None  # allow, deny, ask
    reason: str = ""
    context: str = ""
    stop: str | None = None  # continue: false, with its stopReason
    message: str = ""  # systemMessage: for the user
    failure: str = ""  # a non-blocking failure, for the user


def read(result: Any, plain_is_context: bool = False) -> Reply:
    """``result``: a ``HookResult`` (exit_code, stdout, stderr, error)."""
    if result.exit_code == BLOCK_EXIT_CODE:
        return Reply(blocked=result.stderr.strip() or "a hook blocked it (exit code 2, nothing on stderr)")
    if result.exit_code != 0:
        detail = result.error or f"exited with status {result.exit_code}"
        said = " ".join(result.stderr.split())[:300]
        return Reply(failure=f"The hook `{result.command}` {detail}" + (f": {said}" if said else "") + ".")
    text = result.stdout.strip()
    try:
        data = json.loads(text) if text.startswith("{") else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return Reply(context=text if plain_is_context else "")
    specific = data.get("hookSpecificOutput") if isinstance(data.get("hookSpecificOutput"), dict) else {}
    reply = Reply(message=_text(data.get("systemMessage")), context=_text(specific.get("additionalContext")))
    if data.get("continue") is False:
        reply.stop = _text(data.get("stopReason")) or "a hook ended the turn"
    decision, reason = data.get("decision"), _text(data.get("reason"))
    permission = specific.get("permissionDecision")
    if permission in ("allow", "deny", "ask"):
        reply.permission, reply.reason = permission, _text(specific.get("permissionDecisionReason")) or reason
    elif decision in ("approve", "block"):  # the older PreToolUse form, and every other event's
        reply.permission, reply.reason = ("allow" if decision == "approve" else "deny"), reason
    if reply.permission == "deny" or decision == "block":
        reply.blocked = reply.reason or "a hook blocked it"
    return reply


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def tool_names(name: str) -> tuple[str, ...]:
    """What a PreToolUse/PostToolUse matcher is matched against: ours and Claude Code's name."""
    return (name, CLAUDE_NAMES[name]) if name in CLAUDE_NAMES else (name,)


def tool_input(name: str, arguments: dict[str, Any], workspace: Any) -> dict[str, Any]:
    """The call's arguments, with Claude Code's ``file_path`` (absolute) beside our ``path``."""
    found = dict(arguments)
    path = arguments.get("path")
    if name in FILE_TOOLS and isinstance(path, str) and workspace is not None:
        from pathlib import Path

        found["file_path"] = str((Path(workspace) / path).resolve()) if not Path(path).is_absolute() else path
    return found
