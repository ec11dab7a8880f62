"""Property tests: every layer and every controller entry point leaves a list both APIs accept,
with the newest user message unchanged, whatever the history looks like."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_letta.compaction import (
    choose_cut, clear_tool_results, collapse_tool_results, drop_oldest_turns, extractive_summary, rebuild,
)
from mini_letta.compaction.layers import keeps_newest_user
from mini_letta.errors import ContextFullError, ContextOverflowError
from mini_letta.messages import validity_problems

from test_compaction_support import FakeSummarizer, count, controller, histories, measure

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_sound(before, after, whole_turn_summarised=False):
    assert validity_problems(after) == []
    # /compact may summarise a finished newest turn as a whole (nothing older left): then nothing
    # is kept verbatim, which is the one case the newest user message is summarised too.
    assert keeps_newest_user(before, after) or whole_turn_summarised


@SETTINGS
@given(histories(), st.integers(0, 5_000))
def test_clear_tool_results_keeps_the_list_valid(history, keep):
    before = list(history.messages)
    snapshot = copy.deepcopy(before)
    after = clear_tool_results(before, count, keep_recent_tokens=keep)
    assert_sound(before, after)
    assert [m.id for m in after] == [m.id for m in before]
    assert before == snapshot  # neither the list nor any message in it was changed in place


@SETTINGS
@given(histories(), st.integers(1, 2_000))
def test_collapse_keeps_the_list_valid(history, max_tokens):
    before = list(history.messages)
    after = collapse_tool_results(before, count, max_tokens=max_tokens)
    assert_sound(before, after)
    assert all(count(m) <= max(count(b), 0) for m, b in zip(after, before))


@SETTINGS
@given(histories(), st.integers(0, 8_000))
def test_summary_rebuild_and_extractive_keep_the_list_valid(history, tail_budget):
    before = list(history.messages)
    cut = choose_cut(before, count, tail_budget)
    if cut is None:
        return
    files = ([], [])
    for body in ("a model summary", extractive_summary(before, cut, files)):
        after = rebuild(before, cut, body, files)
        assert_sound(before, after)
        assert after[0].kind == "summary" and sum(m.kind == "summary" for m in after) == 1
        assert len(after) < len(before) + 1


@SETTINGS
@given(histories(), st.one_of(st.none(), st.integers(500, 20_000)))
def test_drop_oldest_keeps_the_list_valid(history, limit):
    before = list(history.messages)
    after = drop_oldest_turns(before, measure, limit=limit)
    assert_sound(before, after)
    if before[0].kind == "summary":
        assert after[0] is before[0]


@SETTINGS
@given(histories(), st.integers(600, 12_000), st.sampled_from(["ok", "fails", "overflows"]))
def test_controller_entry_points_keep_the_list_valid(history, threshold, summarizer_mode):
    summarizer = {"ok": FakeSummarizer(), "fails": FakeSummarizer(fail=RuntimeError("down")),
                  "overflows": FakeSummarizer(overflow_times=5)}[summarizer_mode]
    window = threshold + threshold // 4
    for entry in ("before_request", "after_overflow", "manual"):
        conversation = type(history.conversation)(list(history.messages), history.conversation.next_seq)
        before = list(conversation.messages)
        ctl = controller(summarizer, threshold=threshold, window=window)
        try:
            if entry == "before_request":
                record = ctl.before_request(conversation)
            elif entry == "after_overflow":
                record = ctl.after_overflow(conversation, ContextOverflowError("too long", limit=window))
            else:
                record = ctl.manual(conversation)
        except ContextFullError:
            assert conversation.messages == before
            continue
        if record is None or not record.layers:
            assert conversation.messages == before
            continue
        assert record.messages_after == len(conversation.messages)
        assert record.tokens_after == measure(conversation.messages)
        whole = entry == "manual" and [m.kind for m in conversation.messages] == ["summary"]
        assert_sound(before, conversation.messages, whole_turn_summarised=whole)
        # Usage on kept messages must read as stale, the new summary as current.
        old_ids = {m.id for m in before}
        for message in conversation.messages:
            if message.id in old_ids:
                assert message.seq < conversation.boundary_seq
            else:
                assert message.kind == "summary" and message.seq > conversation.boundary_seq
