"""Agent files: Claude Code's format read with PyYAML, bad files named by file and line and skipped,
workspace files only in a trusted folder, later sources overriding earlier ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_letta import config
from mini_letta.hooks import trust
from mini_letta.subagents.agent_files import parse_agent_file
from mini_letta.subagents.catalog import MAX_FILE_BYTES, load_catalog
from mini_letta.subagents.definitions import INHERIT, PROJECT, SUMMARIZER, USER, AgentType
from mini_letta.subagents.listing import agent_rows, agents_text

REVIEWER = """---
name: reviewer
description: Reviews a change for bugs
tools: Read, Grep, Glob, Bash
model: claude-haiku-4-5
maxTurns: 12
color: purple
---
You review code. Report every bug with its file and line.
"""


def parse(text: str, path: str = "agents/x.md"):
    return parse_agent_file(text, Path(path), USER)


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path) -> Path:
    return config.home()


# --- one file ----------------------------------------------------------------------------------
def test_claude_code_agent_file_is_read_with_our_tool_names():
    agent, problems = parse(REVIEWER)
    assert problems == []
    assert agent.name == "reviewer"
    assert agent.description == "Reviews a change for bugs"
    assert agent.tools == ("read_file", "grep", "glob", "bash")
    assert agent.model == "claude-haiku-4-5"
    assert agent.max_turns == 12
    assert agent.prompt == "You review code. Report every bug with its file and line."
    assert not agent.read_only  # bash can change anything
    assert not agent.may_delegate


def test_tools_as_a_yaml_list_and_omitted_tools_mean_all_but_task():
    listed, _ = parse("---\nname: a\ndescription: d\ntools:\n  - read_file\n  - Grep\n---\nBody\n")
    assert listed.tools == ("read_file", "grep") and listed.read_only
    everything, _ = parse("---\nname: b\ndescription: d\n---\nBody\n")
    assert everything.tools is None and everything.model == INHERIT
    assert everything.selects("bash") and everything.selects("mcp__git__status")
    assert not everything.selects("task")


def test_task_only_when_the_file_names_it():
    agent, _ = parse("---\nname: lead\ndescription: d\ntools: Read, Task\n---\nBody\n")
    assert agent.tools == ("read_file", "task") and agent.may_delegate and agent.selects("task")


def test_mcp_server_name_selects_all_of_its_tools():
    agent, _ = parse("---\nname: a\ndescription: d\ntools: mcp__git, mcp__time__now\n---\nBody\n")
    assert agent.selects("mcp__git__status") and agent.selects("mcp__time__now")
    assert not agent.selects("mcp__time__zones") and not agent.selects("mcp__github__pr")


def test_tools_mini_letta_lacks_are_left_out_with_one_warning_naming_the_line():
    agent, problems = parse("---\nname: web\ndescription: d\ntools: Read, WebFetch, TodoWrite\n---\nBody\n")
    assert agent.tools == ("read_file",)
    assert [str(p) for p in problems] == [
        "Agent file agents/x.md, line 4: WebFetch, TodoWrite are not tools of mini-letta, so the agent runs without."]


@pytest.mark.parametrize("text, line, words", [
    ("name: a\n", 1, "does not start with front matter"),
    ("---\nname: a\ndescription: d\nBody\n", 1, "never closed"),
    ("---\nname: a\ndescription: Use it when: you need it\n---\nBody\n", 3, 'quote a value that holds ": "'),
    ("---\n- a\n- b\n---\nBody\n", 2, "key: value lines"),
    ("---\ndescription: d\n---\nBody\n", 2, "has no name"),
    ("---\ndescription: d\nname: Code Reviewer\n---\nBody\n", 3, "must be lower-case"),
    ("---\nname: a\n---\nBody\n", 2, "has no description"),
    ("---\nname: a\ndescription: d\nmaxTurns: 0\n---\nBody\n", 4, "maxTurns must be a whole number"),
    ("---\nname: a\ndescription: d\nmaxTurns: true\n---\nBody\n", 4, "maxTurns must be a whole number"),
    ("---\nname: a\ndescription: d\nmodel: 4\n---\nBody\n", 4, "model must be inherit"),
    ("---\nname: a\ndescription: d\ntools: {read: 1}\n---\nBody\n", 4, "tools must be"),
    ("---\nname: a\ndescription: d\n---\n\n  \n", 5, "no system prompt"),
])
def test_a_bad_file_is_one_problem_naming_its_line(text, line, words):
    agent, problems = parse(text)
    assert agent is None
    assert len(problems) == 1 and problems[0].line == line and problems[0].skipped
    assert words in str(problems[0])
    assert str(problems[0]).startswith(f"Skipping agent file agents/x.md, line {line}: ")


# --- the catalog ---------------------------------------------------------------------------------
def test_built_ins_explore_is_read_only_on_the_summarizer_model_and_general_has_all_tools(home, workspace):
    catalog = load_catalog(home, workspace)
    explore, general = catalog.get("explore"), catalog.get("general")
    assert explore.tools == ("read_file", "grep", "glob") and explore.read_only
    assert not explore.selects("conversation_search") and not explore.selects("bash")
    assert explore.model == SUMMARIZER
    assert general.tools is None and not general.read_only and not general.selects("task")
    assert catalog.notices == []


def test_workspace_agents_load_only_once_the_folder_is_trusted(home, workspace):
    write(workspace / ".claude" / "agents", "reviewer.md", REVIEWER)
    untrusted = load_catalog(home, workspace)
    assert untrusted.get("reviewer") is None
    assert untrusted.notices == [f"1 agent file in {workspace} was not loaded: this folder is not trusted. "
                                 "Type /trust in the REPL if you want its subagents."]
    trust(home, workspace)
    trusted = load_catalog(home, workspace)
    assert trusted.get("reviewer").source == PROJECT and trusted.notices == []


def test_user_agents_override_built_ins_and_the_workspace_overrides_the_user(home, workspace):
    write(home / "agents", "explore.md", "---\nname: explore\ndescription: mine\n---\nMy explorer.\n")
    write(home / "agents", "reviewer.md", REVIEWER)
    write(workspace / ".claude" / "agents", "r.md", REVIEWER.replace("Reviews a change", "Project reviewer"))
    write(workspace / ".mini-letta" / "agents", "r.md", REVIEWER.replace("Reviews a change", "Our reviewer"))
    trust(home, workspace)
    catalog = load_catalog(home, workspace)
    assert catalog.get("explore").description == "mine" and catalog.get("explore").source == USER
    assert catalog.get("reviewer").description.startswith("Our reviewer")
    rows = {row.name: row for row in agent_rows(catalog)}
    assert rows["explore"].overrides == "built-in"
    assert rows["reviewer"].overrides == (f"user: {home / 'agents' / 'reviewer.md'}; "
                                          f"project: {workspace / '.claude' / 'agents' / 'r.md'}")


def test_bad_files_are_skipped_with_one_notice_each_and_the_rest_load(home):
    folder = home / "agents"
    write(folder, "a-bad.md", "---\nname: bad\ndescription: Use it when: always\n---\nBody\n")
    write(folder, "b-good.md", REVIEWER)
    write(folder, "c-twin.md", REVIEWER)
    write(folder, "notes.txt", "not an agent")
    (folder / "d-huge.md").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    catalog = load_catalog(home, home / "nowhere")
    assert "reviewer" in catalog.types and "bad" not in catalog.types
    assert len(catalog.notices) == 3
    assert catalog.notices[0].startswith(f"Skipping agent file {folder / 'a-bad.md'}, line 3: ")
    assert catalog.notices[1] == (f"Skipping agent file {folder / 'c-twin.md'}, line 2: b-good.md in the same "
                                  "folder already defines the agent 'reviewer'.")
    assert catalog.notices[2] == f"Skipping agent file {folder / 'd-huge.md'}, line 1: it is larger than 262,144 bytes."


def test_a_workspace_agent_file_leading_outside_the_workspace_is_not_read(home, workspace, tmp_path):
    secret = write(tmp_path / "outside", "key.md", "---\nname: leak\ndescription: d\n---\nSECRET\n")
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents" / "leak.md").symlink_to(secret)
    trust(home, workspace)
    catalog = load_catalog(home, workspace)
    assert catalog.get("leak") is None
    assert any("leads outside" in text for text in catalog.notices)


def test_agents_listing_names_source_tools_and_model_with_file_text_made_visible(home):
    # YAML refuses a raw escape character, but writes one as \e inside double quotes.
    write(home / "agents", "r.md", REVIEWER.replace("Reviews a change for bugs", '"Reviews \\e[31ma change"'))
    catalog = load_catalog(home, home / "nowhere")
    assert "\x1b" in catalog.get("reviewer").description
    text = agents_text(catalog)
    assert "\x1b" not in text
    assert "explore  (built-in)\n    tools: read_file, grep, glob; model: the summarizer's, else yours" in text
    assert "general  (built-in)\n    tools: all of yours (not task, core memory or conversation_search); model: yours" in text
    assert (f"reviewer  (user: {home / 'agents' / 'r.md'})\n"
            "    tools: read_file, grep, glob, bash; model: claude-haiku-4-5") in text


def test_an_agent_type_is_a_plain_value():
    agent = AgentType("x", "d", "p", tools=())
    assert agent.read_only and not agent.selects("read_file") and agent.where() == "built-in"
