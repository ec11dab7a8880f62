"""Finding skills: the workspace's three folders (when trusted) and the data folder, front matter read as YAML."""

from __future__ import annotations

import pytest

from mini_letta.skills.discovery import discover
from skills_support import copy_published, simple, write_skill


@pytest.fixture
def home(tmp_path):
    folder = tmp_path / "home"
    folder.mkdir(exist_ok=True)
    return folder


# --- discovery ------------------------------------------------------------------------------------
def test_skills_are_read_from_the_three_workspace_folders_and_the_data_folder(workspace, home):
    write_skill(workspace / ".agents/skills", "one", simple("one"))
    write_skill(workspace / ".claude/skills", "two", simple("two"))
    write_skill(workspace / ".mini-letta/skills", "three", simple("three"))
    write_skill(home / "skills", "mine", simple("mine"))
    catalog = discover(workspace, home, trusted=True)
    assert [(s.name, s.source) for s in catalog.skills] == [
        ("one", ".agents/skills"), ("two", ".claude/skills"), ("three", ".mini-letta/skills"), ("mine", "data folder")]
    assert catalog.notices == []


def test_an_untrusted_workspace_s_skills_are_listed_as_untrusted_and_not_offered(workspace, home):
    write_skill(workspace / ".claude/skills", "evil", simple("evil", "Run this first."))
    write_skill(home / "skills", "mine", simple("mine"))
    catalog = discover(workspace, home, trusted=False)
    assert catalog.names == ["mine"]
    assert [s.name for s in catalog.untrusted] == ["evil"]
    assert catalog.get("evil") is None
    assert catalog.notices == ["1 skill in .claude/skills not offered to the model: this folder is not trusted. "
                               "Type /trust in the REPL if you want its skills offered."]


def test_an_untrusted_skill_file_that_cannot_be_read_is_still_said(workspace, home):
    """Its shape is not worth a notice, but a file that is not a regular one always was (a FIFO)."""
    import os

    (workspace / ".claude/skills/pipe").mkdir(parents=True)
    os.mkfifo(workspace / ".claude/skills/pipe/SKILL.md")
    catalog = discover(workspace, home, trusted=False)
    assert any("named pipe, not a regular file" in text for text in catalog.notices)


def test_a_file_with_broken_yaml_is_one_notice_naming_it_and_its_line_and_is_skipped(workspace, home):
    write_skill(workspace / ".agents/skills", "good", simple("good"))
    write_skill(workspace / ".agents/skills", "bad", "name: bad\ndescription: one: two\n")
    catalog = discover(workspace, home, trusted=True)
    assert catalog.names == ["good"]
    assert catalog.notices == ["Skipping skill .agents/skills/bad/SKILL.md, line 3: the front matter is not valid "
                               'YAML: mapping values are not allowed here (quote a value that holds ": ").']


def test_yaml_that_a_regular_expression_would_misread_is_read_as_yaml(workspace, home):
    front = ('name: quoted\n'
             'description: >\n'
             '  Folded over two lines,\n'
             '  with a colon: inside. # not a comment inside a folded scalar? it is text\n'
             'metadata: {version: "1.0"}\n')
    write_skill(workspace / ".agents/skills", "quoted", front)
    (skill,) = discover(workspace, home, trusted=True).skills
    assert skill.description == ("Folded over two lines, with a colon: inside. # not a comment inside a folded "
                                 "scalar? it is text")


@pytest.mark.parametrize("text, problem", [
    ("no front matter\n", "line 1: it does not start with front matter"),
    ("---\nname: x\ndescription: y\n", "line 1: the front matter opened here is never closed"),
    ("---\n- a list\n---\n", "line 2: the front matter must be key: value lines"),
    ("---\ndescription: y\nname: has space\n---\n", "line 3: the name 'has space' is not a skill name"),
    ("---\nname: nodesc\n---\n", "line 2: there is no description"),
])
def test_each_unusable_file_says_why(workspace, home, text, problem):
    path = workspace / ".agents/skills/x/SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    catalog = discover(workspace, home, trusted=True)
    assert catalog.skills == []
    (notice,) = catalog.notices
    assert notice.startswith("Skipping skill .agents/skills/x/SKILL.md, " + problem)


def test_a_missing_name_is_the_folder_s_name(workspace, home):
    write_skill(workspace / ".agents/skills", "from-folder", "description: d\n")
    assert discover(workspace, home, trusted=True).names == ["from-folder"]


def test_duplicate_names_the_workspace_wins_said_once(workspace, home):
    write_skill(workspace / ".agents/skills", "review", simple("review", "The project's way."))
    write_skill(workspace / ".claude/skills", "review", simple("review", "Claude's copy."))
    write_skill(home / "skills", "review", simple("review", "My own way."))
    write_skill(home / "skills", "deploy", simple("deploy"))
    write_skill(workspace / ".mini-letta/skills", "deploy", simple("deploy", "The project's deploy."))
    catalog = discover(workspace, home, trusted=True)
    assert {s.name: s.description for s in catalog.skills} == {"review": "The project's way.",
                                                               "deploy": "The project's deploy."}
    assert catalog.notices == ["Skills defined more than once (the first is used): review (.agents/skills over "
                               ".claude/skills); deploy (.mini-letta/skills over data folder); review "
                               "(.agents/skills over data folder)."]


def test_a_skill_file_leading_outside_the_workspace_is_refused(workspace, home, tmp_path):
    outside = write_skill(tmp_path / "elsewhere", "x", simple("x"))
    (workspace / ".agents/skills/x").mkdir(parents=True)
    (workspace / ".agents/skills/x/SKILL.md").symlink_to(outside)
    assert discover(workspace, home, trusted=True).skills == []


def test_the_published_skill_is_discovered_with_its_folder(workspace, home):
    copy_published(workspace, ".claude/skills")
    (skill,) = discover(workspace, home, trusted=True).skills
    assert skill.name == "internal-comms"
    assert skill.description.startswith("A set of resources to help me write all kinds of internal communications")
    assert skill.body.startswith("## When to use this skill")
    assert skill.body_line == 7  # after the front matter's closing --- and a blank line
    assert (skill.folder / "examples" / "3p-updates.md").is_file()

