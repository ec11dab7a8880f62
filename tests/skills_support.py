"""Skill folders written by the tests, and the published skill copied into a workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

from mini_letta.skills.discovery import Skill, discover

FIXTURES = Path(__file__).parent / "fixtures" / "skills"
PUBLISHED = "internal-comms"


def write_skill(root: Path, folder: str, front: str, body: str = "Do the thing.\n") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    return path


def simple(name: str, description: str = "Helps with one kind of task.") -> str:
    return f"name: {name}\ndescription: {description}\n"


def many(count: int, description: str) -> list[Skill]:
    return [Skill(f"skill-{i:03d}", f"{description} (variant {i})", "body", Path(f"/s/{i}/SKILL.md"), ".agents/skills")
            for i in range(count)]


def copy_published(workspace: Path, folder: str = ".agents/skills") -> Path:
    """The published skill copied into ``workspace``'s ``folder``; its new folder."""
    target = workspace / folder / PUBLISHED
    shutil.copytree(FIXTURES / PUBLISHED, target)
    return target


def published(workspace: Path) -> Skill:
    copy_published(workspace)
    return discover(workspace, workspace / "no-home", trusted=True).skills[0]
