"""What a subagent type is, and the two that ship: ``explore`` and ``general``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mini_letta.resources import prompt

# The tool that starts a subagent; a subagent gets it only when its file names it.
TASK_TOOL = "task"
INHERIT = "inherit"
# ``model`` of a type that runs on the summarizer model when one is set, else on the parent's.
SUMMARIZER = "summarizer"
# Tools that change nothing: a type with only these may run beside others of its kind.
READ_ONLY_TOOLS = frozenset({"read_file", "grep", "glob", "conversation_search"})
MEMORY_TOOLS = frozenset({"core_memory_append", "core_memory_replace"})
# What a type gets only when its file names it, never from an omitted ``tools``: ``task`` (with the
# depth limit), the parent's core memory (it is in the parent's system prompt, so an edit would
# reach the parent's context beside the report) and conversation_search (it reads the parent's
# session record, the history a subagent is not given).
NAMED_ONLY = frozenset({TASK_TOOL, "conversation_search"}) | MEMORY_TOOLS

BUILT_IN = "built-in"
USER = "user"
PROJECT = "project"


@dataclass(frozen=True)
class AgentType:
    """One kind of subagent. ``tools`` None means every tool of the parent but :data:`NAMED_ONLY`;
    ``model`` is ``inherit``, ``summarizer`` or a model name; ``prompt`` is its system prompt."""

    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    model: str = INHERIT
    max_turns: int | None = None
    source: str = BUILT_IN
    path: Path | None = None

    @property
    def may_delegate(self) -> bool:
        return self.tools is not None and TASK_TOOL in self.tools

    @property
    def edits_memory(self) -> bool:
        return self.tools is not None and bool(MEMORY_TOOLS & set(self.tools))

    @property
    def read_only(self) -> bool:
        return self.tools is not None and set(self.tools) <= READ_ONLY_TOOLS

    def selects(self, tool: str) -> bool:
        """Whether this type gets the parent's tool ``tool``. ``mcp__server`` names all of a
        server's tools, as in Claude Code's agent files."""
        if self.tools is None:
            return tool not in NAMED_ONLY
        return any(tool == name or (name.startswith("mcp__") and name.count("__") == 1
                                    and tool.startswith(name + "__"))
                   for name in self.tools)

    def where(self) -> str:
        """Where it comes from, for ``/agents``: built-in, or its file."""
        return self.source if self.path is None else f"{self.source}: {self.path}"


def built_in_types() -> list[AgentType]:
    return [
        AgentType("explore", "Read-only search of the workspace: finds files, code and facts and reports "
                  "them with paths and lines. Say how thorough: quick, medium or very thorough.",
                  prompt("subagent_explore").strip(), tools=("read_file", "grep", "glob"), model=SUMMARIZER),
        AgentType("general", "A general-purpose agent with your tools, approvals and sandbox, for a "
                  "self-contained task of several steps (research, a change and its tests).",
                  prompt("subagent_general").strip()),
    ]
