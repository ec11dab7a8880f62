"""A skill's body as the model reads it, the skill tool, and skills the user types."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_letta.context.tokens import TokenCounter
from mini_letta.messages import Message, ToolCall, validity_problems
from mini_letta.resources import tool_spec
from mini_letta.skills.activation import activate
from mini_letta.skills.discovery import Catalog, Skill, discover
from mini_letta.skills.invocations import Invocation, invocations
from mini_letta.skills.tool import skill_tool
from mini_letta.skills.typed import typed_invocations, typed_messages
from mini_letta.toolbox.outcome import ToolError
from mini_letta.toolbox.registry import Toolbox
from skills_support import many, published, simple, write_skill

COUNTER = TokenCounter()


# --- activation and the tool -------------------------------------------------------------------------
def test_activation_gives_the_body_and_the_folder(workspace):
    skill = published(workspace)
    activation = activate(skill, "weekly update", lambda text: True, workspace=workspace)
    assert not activation.cut
    assert 'Skill "internal-comms" invoked with arguments: weekly update.' in activation.text
    assert "Its folder is .agents/skills/internal-comms;" in activation.text
    assert skill.body.rstrip() in activation.text


def test_a_body_larger_than_the_room_is_cut_and_says_where_the_rest_is(workspace):
    skill = published(workspace)
    room = 120
    activation = activate(skill, "", lambda text: COUNTER.count_text(text) <= room, workspace=workspace)
    assert activation.cut and COUNTER.count_text(activation.text) <= room
    note = activation.text.splitlines()[-2]
    kept = int(note.split(": ")[1].split(" of")[0])
    assert 0 < kept < len(skill.body.splitlines())
    start = skill.body_line + kept
    assert note.endswith(f"The rest is in .agents/skills/internal-comms/SKILL.md from line {start} "
                         f"(read_file offset={start}).]")
    file_lines = skill.path.read_text().splitlines()
    assert file_lines[start - 2] in activation.text and file_lines[start - 1] not in activation.text


def test_a_skill_outside_the_workspace_says_how_its_files_are_reached(workspace, tmp_path):
    home = tmp_path / "home"
    write_skill(home / "skills", "mine", simple("mine"))
    (skill,) = discover(workspace, home, trusted=True).skills
    text = activate(skill, "", lambda t: True, workspace=workspace).text
    assert f"Its folder is {home / 'skills' / 'mine'} (outside the workspace" in text


def test_the_skill_tool_spec_is_a_file_like_the_others():
    spec = tool_spec("skill")
    assert spec["name"] == "skill" and spec["parameters"]["required"] == ["name"]
    assert set(spec["parameters"]["properties"]) == {"name", "args"}
    assert spec["short_description"]


def test_the_tool_runs_through_the_toolbox_and_cuts_to_the_room(workspace):
    skill = published(workspace)
    catalog = Catalog(skills=[skill])
    toolbox = Toolbox(workspace)
    spec, handler = skill_tool(lambda: catalog, COUNTER.count_text, lambda: 10_000, workspace=workspace)
    toolbox.register(spec, handler, takes_limit=True)
    outcome = toolbox.run(ToolCall("c1", "skill", '{"name": "internal-comms", "args": "FAQ"}'))
    assert not outcome.is_error and "## How to use this skill" in outcome.text
    small = skill_tool(lambda: catalog, COUNTER.count_text, lambda: 100, workspace=workspace)[1]
    assert "cut here to fit the context" in small({"name": "internal-comms"}, 30_000)


def test_the_tool_refuses_unknown_and_untrusted_names(workspace):
    catalog = Catalog(skills=[many(1, "d")[0]], untrusted=[Skill("evil", "d", "b", Path("/x/SKILL.md"), ".claude/skills")])
    handler = skill_tool(lambda: catalog, COUNTER.count_text, lambda: 1_000)[1]
    with pytest.raises(ToolError, match="not trusted"):
        handler({"name": "evil"}, 30_000)
    with pytest.raises(ToolError, match="Did you mean skill-000"):
        handler({"name": "skill-00"}, 30_000)


# --- typed by the user ----------------------------------------------------------------------------------
def test_slash_name_args_and_dollar_name_invoke_skills():
    names = {"review", "deploy"}
    assert typed_invocations("/review the parser", names) == [Invocation("review", "the parser")]
    assert typed_invocations("/review", names) == [Invocation("review")]
    assert typed_invocations("please $deploy then $review, $deploy again", names) == [
        Invocation("deploy"), Invocation("review")]
    assert typed_invocations("/compact now", names | {"compact"}, commands={"compact"}) == []
    assert typed_invocations("costs $5 and a$review", names) == []
    assert typed_invocations("/", names) == []


def test_typed_invocations_become_a_skill_call_and_its_result_never_a_user_turn(workspace):
    skill = published(workspace)
    messages = typed_messages([Invocation("internal-comms", "FAQ"), Invocation("gone")],
                              Catalog(skills=[skill]).get, lambda t: True, workspace=workspace)
    call, result = messages
    assert [m.role for m in messages] == ["assistant", "tool"] and result.tool_call_id == call.tool_calls[0].id
    assert 'Skill "internal-comms" invoked by the user with arguments: FAQ.' in result.text
    assert "## When to use this skill" in result.text
    assert validity_problems([Message.user("/internal-comms FAQ"), *messages]) == []
    assert invocations(messages) == [Invocation("internal-comms", "FAQ")]


def test_invocations_come_from_tool_calls_that_succeeded_typed_context_and_summaries():
    summary = Message.user("summary", kind="summary", meta={"skills": [{"name": "old", "args": "a"}]})
    ok = Message.assistant("", [ToolCall("1", "skill", '{"name": "review", "args": "x"}'),
                                ToolCall("2", "skill", '{"name": "missing"}')])
    results = [Message.tool_result(ok.tool_calls[0], "body"), Message.tool_result(ok.tool_calls[1], "no", is_error=True)]
    typed = Message.user("body", meta={"skill": {"name": "old", "args": "b"}})
    unanswered = Message.assistant("", [ToolCall("3", "skill", '{"name": "later"}')])
    assert invocations([summary, ok, *results, typed, unanswered]) == [Invocation("review", "x"), Invocation("old", "b")]
