"""Finding skills: ``SKILL.md`` folders in the workspace (when trusted) and in the data folder.

A skill is a folder whose ``SKILL.md`` opens with YAML front matter (``name``, ``description``)
followed by a Markdown body; ``scripts/``, ``references/`` and ``assets/`` may sit beside it. The
front matter is read by PyYAML (``front_matter.py``). A file that cannot be used is one notice naming it
(and the line) and is skipped; the notices are returned, not printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mini_letta.front_matter import FrontMatterError, read_front_matter
from mini_letta.settings import SETTINGS, SkillSettings
from mini_letta.wording import counted
from mini_letta.workspace_files import read_workspace_text

SKILL_FILE = "SKILL.md"
# Read by Codex and Gemini CLI, by Claude Code, and by us; the first holding a name wins.
WORKSPACE_FOLDERS = (".agents/skills", ".claude/skills", ".mini-letta/skills")
DATA_FOLDER = "skills"
DATA_SOURCE = "data folder"
# Typed as /name and $name, so no spaces or slashes; the specification's lowercase-and-hyphens
# names fit, and so do the underscores some published skills use.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    path: Path  # the SKILL.md file
    source: str  # ".agents/skills", ".claude/skills", ".mini-letta/skills" or "data folder"
    body_line: int = 1  # where the body starts in the file, from 1

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def in_workspace(self) -> bool:
        return self.source != DATA_SOURCE


@dataclass
class Catalog:
    """The skills offered to the model, those an untrusted workspace holds, and what went wrong."""

    skills: list[Skill] = field(default_factory=list)
    untrusted: list[Skill] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills if skill.name == name), None)

    @property
    def names(self) -> list[str]:
        return [skill.name for skill in self.skills]


def discover(workspace: Path, home: Path, *, trusted: bool, limits: SkillSettings = SETTINGS.skills) -> Catalog:
    """The skills of ``workspace`` (offered only when ``trusted``) and of the data folder ``home``.
    Workspace skills come first and win over the data folder's on a shared name."""
    workspace = Path(workspace)
    catalog = Catalog()
    local: list[Skill] = []
    for folder in WORKSPACE_FOLDERS:
        local += _read_folder(workspace / folder, folder, workspace, catalog.notices if trusted else None, limits,
                              catalog.notices.append)
    own = _read_folder(Path(home) / DATA_FOLDER, DATA_SOURCE, None, catalog.notices, limits, catalog.notices.append)
    if trusted:
        catalog.skills, repeated = _first_of_each(local + own)
        if repeated:
            catalog.notices.append("Skills defined more than once (the first is used): " + "; ".join(repeated) + ".")
    else:
        catalog.untrusted = local
        catalog.skills, _ = _first_of_each(own)
        if local:
            places = sorted({skill.source for skill in local}, key=WORKSPACE_FOLDERS.index)
            catalog.notices.append(
                f"{counted(len(local), 'skill')} in {', '.join(places)} not offered to the model: this folder "
                "is not trusted. Type /trust in the REPL if you want its skills offered.")
    return catalog


def _first_of_each(skills: list[Skill]) -> tuple[list[Skill], list[str]]:
    kept: dict[str, Skill] = {}
    repeated: list[str] = []
    for skill in skills:
        first = kept.setdefault(skill.name, skill)
        if first is not skill:
            repeated.append(f"{skill.name} ({first.source} over {skill.source})")
    return list(kept.values()), repeated


def _read_folder(root: Path, source: str, workspace: Path | None, notices: list[str] | None,
                 limits: SkillSettings, say: Callable[[str], None]) -> list[Skill]:
    """The skills in ``root/*/SKILL.md``, by folder name; ``notices`` None: problems are not told
    (an untrusted folder's files are only counted), except a file that cannot be read (``say``)."""
    try:
        folders = sorted(entry for entry in root.iterdir() if entry.is_dir())
    except OSError:
        return []
    skills = []
    told = notices if notices is not None else []
    for folder in folders[:limits.max_skills_per_folder]:
        path = folder / SKILL_FILE
        if not path.exists():
            continue
        skill = read_skill(path, source, workspace, told, limits, say)
        if skill is not None:
            skills.append(skill)
    if len(folders) > limits.max_skills_per_folder:
        told.append(f"Only the first {limits.max_skills_per_folder:,} folders of {root} were read for skills.")
    return skills


def read_skill(path: Path, source: str, workspace: Path | None, notices: list[str],
               limits: SkillSettings = SETTINGS.skills, say: Callable[[str], None] | None = None) -> Skill | None:
    """The skill in ``path``, or None with one notice saying why it is skipped. A workspace's file
    must resolve inside the workspace (a symlink to a file elsewhere is refused). A file that cannot
    be read is said through ``say`` (default: into ``notices``)."""
    shown = _shown(path, workspace)
    text = read_workspace_text(path, limits.skill_file_bytes, within=workspace, say=say or notices.append)
    if text is None:
        return None
    try:
        name, description, body, body_line = parse_skill(text, path.parent.name)
    except FrontMatterError as error:
        notices.append(f"Skipping skill {shown}, line {error.line}: {error.text}.")
        return None
    return Skill(name, description, body, path, source, body_line)


def parse_skill(text: str, folder_name: str) -> tuple[str, str, str, int]:
    """(name, description, body, the body's first line) from a SKILL.md's text; raises
    FrontMatterError saying why it cannot be used, and where."""
    front = read_front_matter(text)
    name = front.fields.get("name", folder_name)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise FrontMatterError(front.key_lines.get("name", 2), f"the name {name!r} is not a skill name (up to 64 "
                               "letters, digits, hyphens and underscores, no spaces)")
    description = front.fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise FrontMatterError(front.key_lines.get("description", 2),
                               "there is no description (the model picks a skill by it)")
    body = front.body.lstrip("\r\n")
    return name, " ".join(description.split()), body, front.body_line + front.body[:len(front.body) - len(body)].count("\n")


def _shown(path: Path, workspace: Path | None) -> str:
    if workspace is not None:
        try:
            return str(path.relative_to(workspace))
        except ValueError:
            pass
    return str(path)
