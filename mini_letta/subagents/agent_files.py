"""Reading one agent file: YAML front matter between ``---`` lines, then the system prompt.

The format is Claude Code's (``.claude/agents/*.md``)::

    ---
    name: reviewer
    description: Reviews a change for bugs
    tools: Read, Grep, Glob          # or a YAML list; omitted: every tool of the parent
    model: inherit                   # or a model name
    maxTurns: 20                     # optional
    ---
    You review code. ...

Claude Code's tool names (``Read``, ``Edit``, ``Bash`` …) mean ours; tools mini-letta does not have
(``WebFetch``) are left out with a warning. Other keys (``color``, ``permissionMode``) are ignored.
A file that cannot be used gives one :class:`Problem` naming its line, and is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mini_letta.front_matter import FrontMatterError, read_front_matter
from mini_letta.mcp.deferral import SEARCH_TOOL
from mini_letta.resources import tool_spec_names
from mini_letta.subagents.definitions import INHERIT, TASK_TOOL, AgentType

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# Claude Code's tool names, as its agent files write them.
CLAUDE_CODE_TOOLS = {"Read": "read_file", "Write": "write_file", "Edit": "edit_file", "MultiEdit": "edit_file",
                     "Bash": "bash", "Grep": "grep", "Glob": "glob", "LS": "glob",
                     "Task": TASK_TOOL, "Agent": TASK_TOOL}


@dataclass(frozen=True)
class Problem:
    """Why a file was skipped (``skipped``) or loaded without some of what it asks."""

    path: Path
    line: int
    text: str
    skipped: bool = True

    def __str__(self) -> str:
        verb = "Skipping agent file" if self.skipped else "Agent file"
        return f"{verb} {self.path}, line {self.line}: {self.text}."


class _Bad(Exception):
    def __init__(self, line: int, text: str):
        super().__init__(text)
        self.line = line
        self.text = text


def known_tools() -> frozenset[str]:
    return tool_spec_names() | {SEARCH_TOOL, TASK_TOOL}


def parse_agent_file(text: str, path: Path, source: str) -> tuple[AgentType | None, list[Problem]]:
    """The agent type ``text`` (the content of ``path``) defines, and what was wrong with it."""
    try:
        front = read_front_matter(text)
        agent, warnings = _agent(front.fields, front.key_lines, front.body, front.body_line, path, source)
    except (_Bad, FrontMatterError) as bad:
        return None, [Problem(path, bad.line, bad.text)]
    return agent, warnings


def _agent(fields: dict, lines: dict[str, int], body: str, body_line: int, path: Path,
           source: str) -> tuple[AgentType, list[Problem]]:
    line = lambda key: lines.get(key, 2)  # noqa: E731
    name = fields.get("name")
    if name is None:
        raise _Bad(2, "it has no name: (lower-case letters, digits, - and _)")
    if not isinstance(name, str) or not NAME.match(name):
        raise _Bad(line("name"), f"the name {str(name)!r} must be lower-case letters, digits, - and _ "
                                 "(at most 64)")
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise _Bad(line("description"), "it has no description: (what the agent is for: the model "
                                        "reads it to choose one)")
    model = fields.get("model", INHERIT)
    if model is None:
        model = INHERIT
    if not isinstance(model, str) or not model.strip():
        raise _Bad(line("model"), "model must be inherit or a model name")
    max_turns = fields.get("maxTurns")
    if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1):
        raise _Bad(line("maxTurns"), f"maxTurns must be a whole number of at least 1, not {max_turns!r}")
    prompt = body.strip()
    if not prompt:
        raise _Bad(body_line, "it has no system prompt after the front matter")
    tools, unknown = _tools(fields.get("tools"), line("tools"))
    warnings = []
    if unknown:
        warnings.append(Problem(path, line("tools"), f"{', '.join(unknown)} "
                                f"{'is not a tool' if len(unknown) == 1 else 'are not tools'} of mini-letta, "
                                "so the agent runs without", skipped=False))
    return AgentType(name=name, description=" ".join(description.split()), prompt=prompt, tools=tools,
                     model=model.strip(), max_turns=max_turns, source=source, path=path), warnings


def _tools(value: object, line: int) -> tuple[tuple[str, ...] | None, list[str]]:
    """The tools named (ours, in order, each once), and the names that are not tools of ours."""
    if value is None:
        return None, []
    if isinstance(value, str):
        names = [part.strip() for part in value.split(",")]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        names = [item.strip() for item in value]
    else:
        raise _Bad(line, "tools must be a comma-separated list of tool names, or a YAML list of them")
    known = known_tools()
    chosen: dict[str, None] = {}
    unknown = []
    for name in filter(None, names):
        ours = CLAUDE_CODE_TOOLS.get(name, name)
        if ours in known or (ours.startswith("mcp__") and len(ours) > 5):
            chosen.setdefault(ours)
        else:
            unknown.append(name)
    return tuple(chosen), unknown
