"""The ``task`` tool as the model sees it: ``tools/task.json`` plus the agents it can start.

The list of agents is part of the floor (paid on every request), so it is held to
``SETTINGS.subagents.listing_share`` of the window, as Codex holds its skills list: descriptions are shortened to
their first sentence first, then left out, then only as many names as fit are listed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from mini_letta.messages import ToolSpec
from mini_letta.resources import tool_spec
from mini_letta.settings import SETTINGS
from mini_letta.subagents.definitions import TASK_TOOL, AgentType

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def listing_budget(window: int) -> int:
    return max(SETTINGS.subagents.listing_min_tokens, int(window * SETTINGS.subagents.listing_share))


def task_spec(agents: Iterable[AgentType], budget: int, count: Callable[[str], int]) -> ToolSpec:
    """The ``task`` spec whose list of agents costs at most ``budget`` tokens by ``count``."""
    data = tool_spec(TASK_TOOL)
    return ToolSpec(data["name"], data["description"] + "\n\n" + agent_listing(list(agents), budget, count),
                    data["parameters"])


def agent_listing(agents: list[AgentType], budget: int, count: Callable[[str], int]) -> str:
    forms = (lambda agent: f"- {agent.name}: {agent.description}",
             lambda agent: f"- {agent.name}: {short_description(agent.description)}",
             lambda agent: f"- {agent.name}")
    for form in forms:
        text = _listing([form(agent) for agent in agents], len(agents))
        if count(text) <= budget:
            return text
    names = [f"- {agent.name}" for agent in agents]
    shown = len(names)
    while shown > 0 and count(_listing(names[:shown], len(agents))) > budget:
        shown -= 1
    return _listing(names[:shown], len(agents))


def _listing(lines: list[str], total: int) -> str:
    head = "Agents (subagent_type):"
    more = total - len(lines)
    tail = [f"- and {more:,} more, named in the reply to a subagent_type that is not listed"] if more else []
    return "\n".join([head, *lines, *tail])


def short_description(description: str) -> str:
    """The first sentence, at most ``SETTINGS.subagents.listing_description_chars`` characters."""
    first = _SENTENCE_END.split(description.strip(), maxsplit=1)[0]
    if len(first) <= SETTINGS.subagents.listing_description_chars:
        return first
    return first[:SETTINGS.subagents.listing_description_chars - 1].rstrip() + "…"
