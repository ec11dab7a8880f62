"""The task tool's spec (Claude Code's arguments, the agents listed inside a budget) and the report
cut to the room left, saying where."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from mini_letta.context.tokens import TokenCounter
from mini_letta.subagents.definitions import AgentType, built_in_types
from mini_letta.subagents.report import cap_report
from mini_letta.settings import SETTINGS
from mini_letta.subagents.task_spec import agent_listing, listing_budget, task_spec

COUNTER = TokenCounter()
count = COUNTER.count_text


def many_agents(n: int) -> list[AgentType]:
    return [AgentType(f"agent-{i}", f"Audits the module number {i} for unsafe calls. Then it writes a long "
                      f"explanation of everything it saw, with examples and caveats, file by file.", "p")
            for i in range(n)]


def test_task_spec_has_claude_codes_arguments_and_lists_the_built_ins():
    spec = task_spec(built_in_types(), listing_budget(128_000), count)
    assert spec.name == "task"
    assert set(spec.parameters["properties"]) == {"description", "prompt", "subagent_type", "model"}
    assert spec.parameters["required"] == ["description", "prompt", "subagent_type"]
    assert "- explore: Read-only search of the workspace" in spec.description
    assert "- general: A general-purpose agent" in spec.description


def test_the_built_ins_keep_their_descriptions_even_in_a_4k_window():
    budget = listing_budget(4_096)
    assert budget == SETTINGS.subagents.listing_min_tokens
    listing = agent_listing(built_in_types(), budget, count)
    assert "- explore: Read-only search" in listing and count(listing) <= budget


def test_many_agents_shorten_descriptions_then_names_then_say_how_many_are_left_out():
    agents = many_agents(40)
    roomy = agent_listing(agents, 100_000, count)
    assert "file by file" in roomy
    short = agent_listing(agents, 1_000, count)
    assert "- agent-0: Audits the module number 0 for unsafe calls." in short and "file by file" not in short
    assert count(short) <= 1_000
    names = agent_listing(agents, 300, count)
    assert "- agent-0\n" in names and "Audits" not in names and count(names) <= 300
    few = agent_listing(agents, 60, count)
    assert count(few) <= 60
    shown = few.count("\n- agent-")
    assert 0 < shown < 40 and f"- and {40 - shown} more, named in the reply" in few


def test_listing_budget_is_a_share_of_the_window():
    assert listing_budget(200_000) == 4_000
    assert listing_budget(1_000) == SETTINGS.subagents.listing_min_tokens


REPORT = "\n".join(["Answer: the bug is in parser.py:41."] + [f"evidence line {i}: x = f({i})" for i in range(400)]
                   + ["Not checked: the C extension."])


def test_a_report_that_fits_is_returned_whole():
    assert cap_report(REPORT, count(REPORT), count) is REPORT


def test_a_long_report_keeps_head_and_tail_and_says_which_lines_were_left_out():
    capped = cap_report(REPORT, 500, count)
    assert count(capped) <= 500
    assert capped.startswith("Answer: the bug is in parser.py:41.\n")
    assert capped.endswith("Not checked: the C extension.")
    note = next(line for line in capped.splitlines() if line.startswith("[report cut here"))
    first, last = note.split("lines ")[1].split(" of ")[0].split("-")
    # Line 1 is the answer, so line n is "evidence line n - 2".
    assert f"evidence line {int(first) - 3}:" in capped and f"evidence line {int(first) - 2}:" not in capped
    assert f"evidence line {int(last) - 2}:" not in capped and f"evidence line {int(last) - 1}:" in capped
    assert " of 402 (" in note


def test_one_huge_line_is_cut_too():
    line = "word " * 20_000
    capped = cap_report(line, 300, count)
    assert count(capped) <= 300 and "[report cut here to fit the room left in the context: line 1 of 1" in capped


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab \n.é漢"), max_size=3_000), st.integers(min_value=60, max_value=800))
def test_a_capped_report_fits_whenever_the_note_does(text, room):
    capped = cap_report(text, room, count)
    if count(text) <= room:
        assert capped == text
    else:
        assert "[report cut here" in capped
        assert count(capped) <= room or capped.count("\n") <= 2  # only the note is left
