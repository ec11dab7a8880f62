"""Which skills were invoked, and what a compaction puts back of them."""

from __future__ import annotations

import json

from mini_letta.context.tokens import TokenCounter
from mini_letta.messages import Message, ToolCall, validity_problems
from mini_letta.skills.discovery import Catalog, Skill
from mini_letta.skills.invocations import Invocation, invocations, present
from mini_letta.skills.reattach import reattach, reattach_budget
from skills_support import published

COUNTER = TokenCounter()


# --- re-attachment ---------------------------------------------------------------------------------------
def test_reattachment_caps_each_skill_and_the_total_newest_first(workspace):
    body = "\n".join(f"Rule {i}: keep the step small and say what changed." for i in range(2_000))
    skills = {f"s{i}": Skill(f"s{i}", "d", body, workspace / f".agents/skills/s{i}/SKILL.md", ".agents/skills")
              for i in range(8)}
    invoked = [Invocation(name) for name in skills]
    result = reattach(invoked, skills.get, COUNTER.count_text, window=200_000, workspace=workspace)
    results = [m for m in result.messages if m.role == "tool"]
    sizes = [COUNTER.count_text(m.text) for m in results]
    assert all(size <= 5_000 for size in sizes) and sum(sizes) <= 25_000
    assert result.reattached == ["s3", "s4", "s5", "s6", "s7"] and result.left_out == ["s0", "s1", "s2"]
    assert all("cut here to fit the context" in m.text for m in results)
    assert [m.role for m in result.messages] == ["assistant", "tool"] * 5
    assert invocations(result.messages) == [Invocation(n) for n in result.reattached]
    line = result.carryover_line(invoked)
    assert line.startswith("Skills invoked in this session: s0, s1, s2, s3, s4, s5, s6, s7.")
    assert "Left out for lack of room (call the skill tool to load again): s0, s1, s2." in line


def test_reattachment_in_a_small_window_stays_within_its_share(workspace):
    skill = published(workspace)
    result = reattach([Invocation("internal-comms", "FAQ")], Catalog(skills=[skill]).get, COUNTER.count_text,
                      window=1_000, workspace=workspace)
    assert reattach_budget(1_000) == 250
    _, message = result.messages
    assert COUNTER.count_text(message.text) <= 250 and "re-attached after a compaction" in message.text


def test_a_skill_no_longer_found_is_named_not_reattached(workspace):
    result = reattach([Invocation("gone")], lambda name: None, COUNTER.count_text, window=32_000)
    assert result.messages == [] and result.missing == ["gone"]
    assert result.carryover_line([Invocation("gone")]).endswith("No longer found: gone.")


def test_the_published_skill_survives_rounds_of_compaction(workspace):
    """Each round keeps only the summary (naming what it covered) and the re-attachments."""
    skill = published(workspace)
    find = Catalog(skills=[skill]).get
    context = [Message.assistant("", [ToolCall("1", "skill", '{"name": "internal-comms", "args": "3P"}')])]
    context.append(Message.tool_result(context[0].tool_calls[0], "body"))
    for _ in range(8):
        invoked = invocations(context)
        result = reattach(invoked, find, COUNTER.count_text, window=32_000, workspace=workspace)
        summary = Message.user("summary", kind="summary", meta={"skills": [i.to_dict() for i in invoked]})
        context = [summary, *result.messages]
        assert validity_problems(context) == []
        assert "## How to use this skill" in context[2].text and "with arguments: 3P" in context[2].text


def test_present_is_what_the_context_still_holds_uncleared():
    call, failed, cleared = (ToolCall(str(i), "skill", json.dumps({"name": name})) for i, name in enumerate("abc"))
    messages = [Message.assistant("", [call, failed, cleared], meta={"skill": {"name": "c", "args": ""}}),
                Message.tool_result(call, "body"), Message.tool_result(failed, "no such skill", is_error=True),
                Message.tool_result(cleared, "[cleared]", meta={"cleared": True})]
    assert present(messages) == {"a"}
