"""The ``skill`` tool: the model loads a listed skill's instructions by name."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mini_letta.messages import ToolSpec
from mini_letta.resources import tool_spec
from mini_letta.skills.activation import activate
from mini_letta.skills.discovery import Catalog
from mini_letta.skills.invocations import TOOL
from mini_letta.toolbox.outcome import ToolError


def skill_tool(catalog: Callable[[], Catalog], count: Callable[[str], int], room_tokens: Callable[[], int], *,
               workspace: Path | None = None) -> tuple[ToolSpec, Callable[[dict[str, Any], int], str]]:
    """The tool's spec and handler (registered with ``takes_limit``): ``catalog()`` is read at each
    call (``/skills reload`` replaces it), the body cut to ``room_tokens()`` and the output cap."""
    data = tool_spec(TOOL)

    def handler(arguments: dict[str, Any], max_chars: int) -> str:
        skills = catalog()
        name = str(arguments.get("name", "")).strip()
        skill = skills.get(name)
        if skill is None:
            raise ToolError(_unknown(name, skills))
        room = room_tokens()
        activation = activate(skill, str(arguments.get("args") or ""),
                              lambda text: len(text) <= max_chars and count(text) <= room, workspace=workspace)
        return activation.text

    return ToolSpec(data["name"], data["description"], data["parameters"]), handler


def _unknown(name: str, skills: Catalog) -> str:
    if any(skill.name == name for skill in skills.untrusted):
        return f"The skill {name!r} is in a folder the user has not trusted, so it is not offered."
    if not skills.names:
        return "There are no skills in this session."
    close = difflib.get_close_matches(name, skills.names, n=3)
    hint = f" Did you mean {' or '.join(close)}?" if close else f" The skills are: {', '.join(skills.names[:30])}."
    return f"There is no skill named {name!r}.{hint}"
