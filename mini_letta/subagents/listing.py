"""What ``/agents`` shows: each subagent type with where it comes from, its tools and its model."""

from __future__ import annotations

from dataclasses import dataclass

from mini_letta.subagents.catalog import Catalog
from mini_letta.subagents.definitions import INHERIT, SUMMARIZER, AgentType
from mini_letta.trust.terminal_text import one_line


@dataclass(frozen=True)
class AgentRow:
    name: str
    source: str
    tools: str
    model: str
    description: str
    overrides: str = ""


def agent_rows(catalog: Catalog) -> list[AgentRow]:
    """One row per type in force, in the catalog's order; ``overrides`` names what it replaced."""
    replaced: dict[str, list[str]] = {}
    for agent in catalog.overridden:
        replaced.setdefault(agent.name, []).append(agent.where())
    return [AgentRow(agent.name, agent.where(), tools_text(agent), model_text(agent), agent.description,
                     "; ".join(replaced.get(agent.name, [])))
            for agent in catalog.types.values()]


def tools_text(agent: AgentType) -> str:
    if agent.tools is None:
        return "all of yours (not task, core memory or conversation_search)"
    return ", ".join(agent.tools) if agent.tools else "none"


def model_text(agent: AgentType) -> str:
    if agent.model == INHERIT:
        return "yours"
    if agent.model == SUMMARIZER:
        return "the summarizer's, else yours"
    return agent.model


def agents_text(catalog: Catalog) -> str:
    """The listing as plain lines, for a terminal or ``-p``; what came from files is made visible
    (no escape sequence of a repository's file reaches the terminal), one line per field."""
    lines = []
    for row in agent_rows(catalog):
        lines.append(f"{row.name}  ({one_line(row.source)})")
        lines.append(f"    tools: {one_line(row.tools)}; model: {one_line(row.model)}")
        lines.append(f"    {one_line(row.description)}")
        if row.overrides:
            lines.append(f"    overrides {one_line(row.overrides)}")
    return "\n".join(lines)
