"""The skills of one session: what the loop, the floor and the REPL ask of them, in one place.

``SkillSet`` owns the catalog (replaced by ``reload``) and answers with values: the list for the
system prompt, the tool, the messages a typed message brings, what a compaction adds back, the
rows of ``/skills``. It holds no reference to the agent; what it needs (a counter, the window, the
room a result has) comes as arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mini_letta.messages import Message, ToolSpec
from mini_letta.skills.discovery import Catalog, Skill, discover
from mini_letta.skills.invocations import invocations, present
from mini_letta.settings import SETTINGS, SkillSettings
from mini_letta.skills.listing import SkillList, skill_list
from mini_letta.skills.reattach import Reattachment, reattach
from mini_letta.skills.tool import skill_tool
from mini_letta.skills.typed import typed_invocations, typed_messages

Count = Callable[[str], int]


@dataclass(frozen=True)
class SkillRow:
    """One line of ``/skills``."""

    name: str
    source: str
    listed_tokens: int  # what its entry in the list costs now (0: left out of it, or untrusted)
    body_tokens: int  # what invoking it costs
    invoked: bool
    offered: bool  # False: an untrusted workspace's skill


@dataclass(frozen=True)
class AfterCompaction:
    messages: list[Message]  # to add after the summary
    carryover_line: str  # for the summary's text
    summary_meta: dict[str, Any]  # for the summary's meta: the invocations it covers


class SkillSet:
    def __init__(self, workspace: Path, home: Path, trusted: Callable[[], bool], *, limits: SkillSettings = SETTINGS.skills):
        self.workspace = Path(workspace)
        self.home = Path(home)
        self._trusted = trusted
        self.limits = limits
        self.catalog = Catalog()

    def reload(self) -> list[str]:
        """Read the skill folders again (at start and on ``/skills reload``); the notices."""
        self.catalog = discover(self.workspace, self.home, trusted=self._trusted(), limits=self.limits)
        return list(self.catalog.notices)

    def find(self, name: str) -> Skill | None:
        return self.catalog.get(name)

    def listing(self, window: int | None, count: Count, *, compact: bool = False) -> SkillList:
        return skill_list(self.catalog.skills, window, count, compact=compact, limits=self.limits)

    def tool(self, count: Count, room_tokens: Callable[[], int]) -> tuple[ToolSpec, Callable[[dict[str, Any], int], str]]:
        return skill_tool(lambda: self.catalog, count, room_tokens, workspace=self.workspace)

    def typed(self, text: str, fits: Callable[[str], bool], commands: Collection[str] = ()) -> list[Message]:
        """The user-context messages that ``/name args`` or ``$name`` in ``text`` bring in."""
        invoked = typed_invocations(text, set(self.catalog.names), commands)
        return typed_messages(invoked, self.find, fits, workspace=self.workspace)

    def after_compaction(self, before: Iterable[Message], after: Iterable[Message], window: int | None,
                         count: Count) -> AfterCompaction:
        """What a compaction of ``before`` (the whole context it replaced) into ``after`` adds back
        of skills: those invoked whose bodies ``after`` no longer holds."""
        invoked = invocations(before)
        result: Reattachment = reattach(invoked, self.find, count, window=window, kept=present(after),
                                        workspace=self.workspace, limits=self.limits)
        meta = {"skills": [invocation.to_dict() for invocation in invoked]} if invoked else {}
        return AfterCompaction(result.messages, result.carryover_line(invoked), meta)

    def rows(self, messages: Iterable[Message], listed: SkillList, count: Count) -> list[SkillRow]:
        invoked = {invocation.name for invocation in invocations(messages)}
        entries = {name: count(entry) for name, entry in listed.entries}
        rows = [SkillRow(skill.name, skill.source, entries.get(skill.name, 0), count(skill.body), skill.name in invoked,
                         True) for skill in self.catalog.skills]
        rows += [SkillRow(skill.name, skill.source, 0, count(skill.body), False, False)
                 for skill in self.catalog.untrusted]
        return rows


def invoked_names(messages: Sequence[Message]) -> list[str]:
    """The skills ``messages`` invoked, the latest last (``-p --output-format json``)."""
    return [invocation.name for invocation in invocations(messages)]
