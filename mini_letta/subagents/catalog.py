"""Which subagent types there are: the built-ins, the data folder's ``agents/``, and a trusted
workspace's ``.claude/agents/`` and ``.mini-letta/agents/``.

A later source overrides an earlier one of the same name (built-in < user < ``.claude`` <
``.mini-letta``), as Claude Code's project files override the user's. A workspace's files are
written by whoever wrote the repository (a system prompt, a tool list), so they are read only once
the user has trusted the folder, like its hooks. Problems are returned as text, never raised.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from mini_letta.hooks import is_trusted
from mini_letta.subagents.agent_files import Problem, parse_agent_file
from mini_letta.subagents.definitions import PROJECT, USER, AgentType, built_in_types
from mini_letta.wording import counted
from mini_letta.workspace_files import read_workspace_text

AGENTS_FOLDER = "agents"
WORKSPACE_FOLDERS = (Path(".claude") / AGENTS_FOLDER, Path(".mini-letta") / AGENTS_FOLDER)
MAX_FILE_BYTES = 256 * 1024
# More files than this in one folder are not read: each is a start-up cost.
MAX_FILES = 200


@dataclass
class Catalog:
    """The types by name (the one in force), those a later source replaced, and the notices."""

    types: dict[str, AgentType] = field(default_factory=dict)
    overridden: list[AgentType] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    # Counts reloads, so the task tool knows when to list the agents again.
    version: int = 0

    def get(self, name: str) -> AgentType | None:
        return self.types.get(name)

    def names(self) -> list[str]:
        return list(self.types)

    def reload(self, other: Catalog) -> None:
        """Take ``other``'s types in place (after /trust), so whoever holds this catalog sees them."""
        self.types, self.overridden, self.notices = other.types, other.overridden, other.notices
        self.version += 1

    def add(self, agent: AgentType) -> None:
        previous = self.types.pop(agent.name, None)
        if previous is not None:
            self.overridden.append(previous)
        self.types[agent.name] = agent


def load_catalog(home: Path, workspace: Path) -> Catalog:
    catalog = Catalog()
    for agent in built_in_types():
        catalog.add(agent)
    _add_folder(catalog, Path(home) / AGENTS_FOLDER, USER, within=None)
    folders = [Path(workspace) / folder for folder in WORKSPACE_FOLDERS]
    if is_trusted(home, workspace):
        for folder in folders:
            _add_folder(catalog, folder, PROJECT, within=Path(workspace))
    else:
        waiting = sum(len(_agent_files(folder)) for folder in folders)
        if waiting:
            catalog.notices.append(f"{counted(waiting, 'agent file')} in {Path(workspace)} "
                                   f"{'was' if waiting == 1 else 'were'} not loaded: this folder is not "
                                   "trusted. Type /trust in the REPL if you want its subagents.")
    return catalog


def _agent_files(folder: Path) -> list[Path]:
    try:
        return sorted(folder / name for name in os.listdir(folder) if name.endswith(".md"))
    except OSError:
        return []


def _add_folder(catalog: Catalog, folder: Path, source: str, within: Path | None) -> None:
    """Every usable file of ``folder``; within one folder, the first file to use a name keeps it."""
    paths = _agent_files(folder)
    if len(paths) > MAX_FILES:
        catalog.notices.append(f"{folder} holds {len(paths):,} agent files: only the first {MAX_FILES} "
                               "(by name) are read.")
        paths = paths[:MAX_FILES]
    seen: dict[str, Path] = {}
    for path in paths:
        agent = _read(catalog, path, source, within)
        if agent is None:
            continue
        if agent.name in seen:
            catalog.notices.append(str(Problem(path, 2, f"{seen[agent.name].name} in the same folder already "
                                                        f"defines the agent {agent.name!r}")))
            continue
        seen[agent.name] = path
        catalog.add(agent)


def _read(catalog: Catalog, path: Path, source: str, within: Path | None) -> AgentType | None:
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # read_workspace_text says what is wrong with it
    if size > MAX_FILE_BYTES:
        catalog.notices.append(str(Problem(path, 1, f"it is larger than {MAX_FILE_BYTES:,} bytes")))
        return None
    text = read_workspace_text(path, MAX_FILE_BYTES, within=within, say=catalog.notices.append)
    if text is None:
        return None
    agent, problems = parse_agent_file(text, path, source)
    catalog.notices += [str(problem) for problem in problems]
    return agent
