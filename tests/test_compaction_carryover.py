"""The carry-over and the audit: what a compaction keeps whatever the summarizer writes.

Figures: the chars/4 measure of test_compaction_support (500-token floor), threshold 10,000.
"""

from __future__ import annotations

import re

from mini_letta.compaction.audit import audit, identifiers, must_keep
from mini_letta.compaction.carryover import CarryOver, carry_over, render
from mini_letta.compaction.keep import Room, sizes_for
from mini_letta.compaction.turns import Cut, choose_cut
from mini_letta.messages import Message

from test_compaction_support import FakeSummarizer, History, controller, count


def text_count(text: str) -> int:
    return count(Message.user(text))


def working_session() -> History:
    history = History()
    history.user("Fix the date parser in src/app/dates.py. Never touch tests/legacy, it is frozen.")
    # A long file read: compacting this session is worth it (a summary must be clearly smaller).
    history.tool_round(("read_file", {"path": "src/app/dates.py"},
                        "def parse_date(text):\n    ..." + "\n    # a long body line of the parser" * 300))
    history.tool_round(("bash", {"command": "pytest -q tests/test_dates.py"},
                        "F\nE   KeyError: 'tz'\n1 failed\n[exit code 1]", True),
                       text="Plan:\n- [ ] handle missing tz\n- [ ] add a test for parse_date")
    history.tool_round(("edit_file", {"path": "src/app/dates.py", "old_string": "def parse_date(text):",
                                      "new_string": "def parse_date(text, tz=None):"},
                        "Edited src/app/dates.py: replaced 1 line(s) at line 1 with 1 line(s)."),
                       text="- [x] handle missing tz")
    history.tool_round(("bash", {"command": "ruff check src"}, "src/app/x.py:1: F401 unused\n[exit code 1]", True))
    history.say("The tz fix is in; ruff still complains.")
    history.user("Also the retry limit must stay at 37.")
    history.say("Noted.")
    history.user("Now run the tests again")
    history.tool_round(("bash", {"command": "pytest -q tests/test_dates.py"}, "1 passed\n[exit code 0]"))
    return history


def test_carry_over_keeps_requests_files_commands_errors_todos_and_the_current_task():
    history = working_session()
    messages = history.messages
    cut = Cut(0, next(i for i, m in enumerate(messages) if m.text == "Now run the tests again"), None)
    carried = carry_over(messages, cut)

    assert carried.users == [(1, messages[0].text), (2, "Also the retry limit must stay at 37.")]
    assert carried.through_turn == 2 and not carried.split_turn
    assert carried.changes == {"src/app/dates.py": "Edited src/app/dates.py: replaced 1 line(s) at line 1 with "
                                                   '1 line(s).; now "def parse_date(text, tz=None):"'}
    assert carried.commands == {"pytest -q tests/test_dates.py": "exit code 1", "ruff check src": "exit code 1"}
    # The failing pytest run is resolved by the same command passing in the kept tail; ruff is not.
    assert list(carried.errors) == ["bash ruff check src"]
    assert carried.errors["bash ruff check src"] == "src/app/x.py:1: F401 unused"
    assert carried.todos == ["add a test for parse_date"]
    assert carried.task == "Now run the tests again" and carried.task_turn == 3 and not carried.task_answered
    assert carried.step == "bash pytest -q tests/test_dates.py -> exit code 0"


def test_a_split_turn_is_named_and_its_request_is_not_carried_twice():
    history = working_session()
    messages = history.messages
    last_assistant = max(i for i, m in enumerate(messages) if m.role == "assistant")
    start = next(i for i, m in enumerate(messages) if m.text == "Now run the tests again")
    carried = carry_over(messages, Cut(0, last_assistant, start))
    assert [turn for turn, _ in carried.users] == [1, 2]
    assert carried.through_turn == 3 and carried.split_turn


def test_render_keeps_newest_messages_whole_older_ones_shortened_and_names_every_turn():
    users = [(turn, f"Message {turn} about the parser. " + "Details follow here. " * 20) for turn in range(1, 31)]
    users[2] = (3, "Some context first. Never touch tests/legacy, it is frozen. " + "More words. " * 30)
    carried = CarryOver(users=users, through_turn=30)
    text = render(carried, body="OK.", user_budget=1_000, facts_budget=100, count=text_count)

    lines = text.splitlines()
    assert lines[1] == "User messages, newest first:"
    assert lines[2] == f"- [turn 30] {users[29][1].strip()}"
    assert "(shortened) Message" in text
    assert "Never touch tests/legacy, it is frozen." in text
    shown = {int(n) for n in re.findall(r"\[turn (\d+)", text)}
    named = re.search(r"\[turns (\d+)–(\d+): (\d+) older messages? not shown; find them with "
                      r"conversation_search\]", text)
    assert named is not None
    # Every turn is either shown (whole, shortened or by its rules) or counted in the range line.
    assert len(shown) + int(named.group(3)) == 30
    assert sum(text_count(line) for line in lines) <= 1_000


def test_a_message_the_summary_quotes_whole_is_not_repeated():
    carried = CarryOver(users=[(1, "Use tabs, not spaces."), (2, "Rename foo to bar.")], through_turn=2)
    text = render(carried, body="User said: Use tabs, not spaces.", user_budget=500, facts_budget=100,
                  count=text_count)
    assert "[turn 2] Rename foo to bar." in text and "[turn 1]" not in text


def test_identifiers_are_paths_names_numbers_and_quoted_strings():
    found = identifiers('Move parse_header() from src/io/reader.py to `utils`; keep PORT=48213 and '
                        'the "strict mode" flag, see README.md and TokenCounter v1.2.')
    for expected in ("parse_header", "src/io/reader.py", "utils", "48213", "strict mode", "README.md",
                     "TokenCounter", "1.2"):
        assert expected in found, expected


def test_all_caps_codes_with_digits_are_identifiers_the_user_typed():
    found = identifiers("The code word is PEAR0; see JIRA-142 for E0425, and HTTP2 only. USE tabs, SO says the API.")
    for expected in ("PEAR0", "JIRA-142", "E0425", "HTTP2"):
        assert expected in found, expected
    assert not {"USE", "SO", "API"} & set(found)  # shouting and acronyms without digits are not codes


def test_audit_counts_what_the_model_kept_and_restores_what_nobody_kept():
    carried = CarryOver(users=[(4, "Keep the retry limit at 37 in src/net/retry.py and call backoff_ms."),
                               (9, "Rename the flag to --no-color.")], through_turn=9)
    items = must_keep(carried)
    summary = "The user wants src/net/retry.py changed."
    result = audit(summary, "", items, budget=200, count=text_count)
    assert result.items == len(items) and result.kept_by_model == 1
    assert result.restored == len(items) - 1
    assert result.section.startswith("## Also keep")
    for item in items:
        assert item.text.lower() in (summary + result.section).lower()
    # The same history always gives the same section.
    assert audit(summary, "", must_keep(carried), budget=200, count=text_count) == result
    # What the carry-over already holds is not restored again.
    assert audit(summary, carried.users[0][1] + carried.users[1][1], items, budget=200, count=text_count).restored == 0


def test_audit_stays_within_its_budget_and_says_what_it_left_out():
    carried = CarryOver(users=[(turn, f"Look at src/mod_{turn}.py and fn_{turn}_x.") for turn in range(1, 40)])
    result = audit("OK.", "", must_keep(carried), budget=120, count=text_count)
    lines = result.section.splitlines()
    assert sum(text_count(line) for line in lines[:-1]) <= 120
    assert re.search(r"\d+ more items? not listed; find them with conversation_search", lines[-1])
    assert "[turn 39]" in result.section  # newest first


def test_a_useless_summary_still_leaves_the_task_and_every_rule_in_the_summary_message():
    history = History()
    history.user("Port the CSV reader in src/csvkit/reader.py. Never touch tests/legacy.")
    for turn in range(2, 26):
        history.user(f"step {turn}: look at part {turn} of the reader " + "u" * 1_600).say(f"done {turn} " + "a" * 400)
    history.user("what next?")
    ctl = controller(FakeSummarizer(reply="OK."))
    ctl.recall = lambda: True
    record = ctl.manual(history.conversation)

    summary = history.messages[0]
    assert record.layers == ["summarize"]
    assert "Never touch tests/legacy." in summary.text and "src/csvkit/reader.py" in summary.text
    assert "summarized here; conversation_search searches the full record" in summary.text
    assert record.must_keep > 0 and record.kept_by_model == 0
    assert summary.meta["carryover"]["through_turn"] >= 20
    assert summary.meta["summary_body"] == "OK."


def test_the_next_compaction_merges_the_previous_carry_over():
    history = working_session()
    ctl = controller(FakeSummarizer(reply="OK."))
    ctl.manual(history.conversation)
    first = history.messages[0].meta["carryover"]
    for part in range(3):
        history.user(f"Then update part {part} of the changelog " + "c" * 6_000).say("Done " + "d" * 6_000)
    history.user("And the README")
    ctl.manual(history.conversation)
    second = history.messages[0].meta["carryover"]
    assert second["users"][:len(first["users"])] == first["users"]
    assert second["through_turn"] > first["through_turn"]
    assert "ruff check src" in second["commands"]


def test_without_the_recall_tool_the_summary_does_not_point_to_it():
    history = working_session()
    controller(FakeSummarizer(reply="OK.")).manual(history.conversation)
    assert "summarized here." in history.messages[0].text
    assert "conversation_search searches" not in history.messages[0].text


def test_the_budgets_shrink_to_the_room_left():
    history = working_session()
    messages = history.messages
    cut = choose_cut(messages, count, 0)
    carried = carry_over(messages, cut)
    sizes = sizes_for(threshold=10_000, target=6_500, floor=500, summary_cap=2_000)

    def carried_text(allowed):
        users, facts, _ = sizes.budgets(allowed)
        return render(carried, body="OK.", user_budget=users, facts_budget=facts, count=text_count)

    roomy = carried_text(None)
    tight = carried_text(Room(target=1_000, before=2_000, bare=970, unused_summary=0).allowed(0.0))
    assert text_count(tight) < text_count(roomy)
    assert "Never touch tests/legacy" in roomy


def test_every_part_of_a_compaction_is_sized_from_the_room_the_floor_leaves():
    # A 4k window (threshold 3,277, target 2,130) with a 1,700-token floor leaves 430 tokens.
    small = sizes_for(threshold=3_277, target=2_130, floor=1_700, summary_cap=819)
    assert small.room == 430
    assert small.summary + small.users + small.facts + small.audit + small.tail <= 430 + 128
    assert small.tail == 0  # only the newest step stays verbatim
    # A large window keeps the usual shares of the threshold.
    large = sizes_for(threshold=183_616, target=119_350, floor=2_000, summary_cap=4_096)
    assert (large.summary, large.users, large.tail) == (4_096, int(183_616 * 0.08), 20_000)


def test_a_summary_that_kept_most_items_gets_little_added_an_ok_gets_the_room_it_left():
    room = Room(target=6_000, before=9_000, bare=3_000, unused_summary=1_500)
    assert room.allowed(kept_share=0.8) == 450  # 15% of the bare request
    assert room.allowed(kept_share=0.0) == 450 + 1_500
    assert Room(target=3_100, before=9_000, bare=3_000, unused_summary=1_500).allowed(0.0) == 100
    assert Room(target=6_000, before=3_200, bare=3_000, unused_summary=1_500).allowed(0.0) == 100
