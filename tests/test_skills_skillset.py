"""The session's skills as the loop and the REPL will ask for them: reload, list, typed, after a
compaction, the rows of /skills."""

from __future__ import annotations

import json

from mini_letta.context.tokens import TokenCounter
from mini_letta.messages import Message, ToolCall
from mini_letta.providers.base import Request, complete
from mini_letta.providers.demo import DemoProvider
from mini_letta.skills.report import skills_report
from mini_letta.skills.skillset import SkillSet, invoked_names
from skills_support import copy_published, simple, write_skill

COUNTER = TokenCounter()


def test_reload_follows_trust(workspace, tmp_path):
    write_skill(workspace / ".agents/skills", "local", simple("local"))
    trusted = [False]
    skills = SkillSet(workspace, tmp_path / "home", lambda: trusted[0])
    notices = skills.reload()
    assert skills.catalog.names == [] and "not trusted" in notices[0]
    trusted[0] = True
    assert skills.reload() == [] and skills.catalog.names == ["local"]


def test_typed_slash_and_dollar_bring_the_body_in(workspace, tmp_path):
    copy_published(workspace)
    skills = SkillSet(workspace, tmp_path / "home", lambda: True)
    skills.reload()
    _, message = skills.typed("/internal-comms a 3P update", lambda text: True)
    assert "with arguments: a 3P update" in message.text and "## How to use this skill" in message.text
    assert skills.typed("write it like $internal-comms says", lambda text: True)[0].meta["skill"] == {
        "name": "internal-comms", "args": ""}
    assert skills.typed("/internal-comms", lambda text: True, commands={"internal-comms"}) == []


def test_after_a_compaction_the_skill_is_back_and_named(workspace, tmp_path):
    copy_published(workspace)
    skills = SkillSet(workspace, tmp_path / "home", lambda: True)
    skills.reload()
    call = ToolCall("c1", "skill", '{"name": "internal-comms"}')
    before = [Message.user("hi"), Message.assistant("", [call]), Message.tool_result(call, "…")]
    after = skills.after_compaction(before, [Message.user("summary", kind="summary")], 32_000, COUNTER.count_text)
    _, message = after.messages
    assert "re-attached after a compaction" in message.text and "## When to use this skill" in message.text
    assert after.carryover_line == ("Skills invoked in this session: internal-comms. "
                                    "Re-attached after this summary: internal-comms.")
    assert after.summary_meta == {"skills": [{"name": "internal-comms", "args": ""}]}
    assert skills.after_compaction([Message.user("hi")], [], 32_000, COUNTER.count_text).messages == []


def test_rows_give_source_cost_and_invoked(workspace, tmp_path):
    copy_published(workspace)
    write_skill(tmp_path / "home" / "skills", "mine", simple("mine"), body="Mine.\n" * 50)
    skills = SkillSet(workspace, tmp_path / "home", lambda: True)
    skills.reload()
    listed = skills.listing(200_000, COUNTER.count_text)
    typed = skills.typed("$mine", lambda text: True)
    rows = {row.name: row for row in skills.rows(typed, listed, COUNTER.count_text)}
    assert rows["mine"].invoked and not rows["internal-comms"].invoked
    assert rows["mine"].source == "data folder" and rows["internal-comms"].source == ".agents/skills"
    assert rows["mine"].body_tokens == COUNTER.count_text("Mine.\n" * 50)
    assert sum(row.listed_tokens for row in rows.values()) <= listed.tokens
    assert all(row.listed_tokens > 0 for row in rows.values())
    assert invoked_names(typed) == ["mine"]


def test_untrusted_skills_are_rows_but_never_listed(workspace, tmp_path):
    write_skill(workspace / ".claude/skills", "evil", simple("evil"))
    skills = SkillSet(workspace, tmp_path / "home", lambda: False)
    skills.reload()
    listed = skills.listing(200_000, COUNTER.count_text)
    assert "evil" not in listed.text
    (row,) = skills.rows([], listed, COUNTER.count_text)
    assert (row.name, row.offered, row.listed_tokens) == ("evil", False, 0)


def test_the_demo_model_calls_the_skill_tool(workspace, tmp_path):
    copy_published(workspace)
    skills = SkillSet(workspace, tmp_path / "home", lambda: True)
    skills.reload()
    spec, _ = skills.tool(COUNTER.count_text, lambda: 1_000)
    request = Request(system="s", messages=[Message.user("skill internal-comms a 3P update")], tools=[spec])
    (call,) = complete(DemoProvider(), request).tool_calls
    assert (call.name, json.loads(call.arguments)) == ("skill", {"name": "internal-comms", "args": "a 3P update"})


def test_a_compaction_that_kept_the_body_adds_no_copy_one_that_cleared_it_does(workspace, tmp_path):
    copy_published(workspace)
    skills = SkillSet(workspace, tmp_path / "home", lambda: True)
    skills.reload()
    call = ToolCall("c1", "skill", '{"name": "internal-comms"}')
    result = Message.tool_result(call, "<skill>…</skill>")
    before = [Message.user("hi"), Message.assistant("", [call]), result, Message.assistant("done")]
    kept = skills.after_compaction(before, before[1:3], 32_000, COUNTER.count_text)
    assert kept.messages == [] and "Still in the context below: internal-comms." in kept.carryover_line
    cleared = Message.tool_result(call, "[tool output cleared to save context]", meta={"cleared": True})
    _, message = skills.after_compaction(before, [before[1], cleared], 32_000, COUNTER.count_text).messages
    assert "## When to use this skill" in message.text


def test_the_skills_report_shows_source_cost_and_invoked(workspace, tmp_path):
    copy_published(workspace)
    write_skill(workspace / ".claude/skills", "other", simple("other"))
    skills = SkillSet(workspace, tmp_path / "home", lambda: True)
    skills.reload()
    listed = skills.listing(32_000, COUNTER.count_text)
    typed = skills.typed("$internal-comms", lambda text: True)
    lines = skills_report(skills.rows(typed, listed, COUNTER.count_text), listed)
    assert lines[0] == f"2 skills offered; the list costs {listed.tokens:,} tokens of its 640-token cap."
    comms = next(line for line in lines if "internal-comms" in line)
    body = COUNTER.count_text(skills.find("internal-comms").body)
    assert ".agents/skills" in comms and f"body {body:,} tokens" in comms and comms.endswith("invoked")
    assert not next(line for line in lines if "other" in line).endswith("invoked")


def test_the_report_names_untrusted_skills_and_says_what_to_do(workspace, tmp_path):
    write_skill(workspace / ".claude/skills", "evil", simple("evil"))
    skills = SkillSet(workspace, tmp_path / "home", lambda: False)
    skills.reload()
    listed = skills.listing(32_000, COUNTER.count_text)
    lines = skills_report(skills.rows([], listed, COUNTER.count_text), listed)
    assert lines[0].startswith("0 skills offered")
    assert lines[-1].endswith("not offered: this folder is not trusted (/trust, then /skills reload)")
    assert skills_report([], listed)[0].startswith("No skills.")
