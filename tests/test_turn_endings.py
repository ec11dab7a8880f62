"""A turn says "done" only when it is: replies cut by the reply limit, refused, filtered or cut off
end the turn with that ending named; a tool call cut mid-JSON is sent back to the model to retry
smaller (bounded); a summary cut at its limit or degenerate is never installed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from agent_support import make_agent, script, sized_text, tool_call
from fault_support import Recorder

from mini_letta import endings
from mini_letta.compaction import acceptance, summarizer
from mini_letta.messages import Message, ToolCall, validity_problems
from mini_letta.settings import SETTINGS

DEGENERATE_SMOLLM2 = (Path(__file__).parent / "degenerate-summary-smollm2.md").read_text(encoding="utf-8")

# Other ways a small model loops, each long enough to be worth rejecting.
DEGENERATE = {
    "smollm2": DEGENERATE_SMOLLM2,
    "one sentence again and again": "The user wants the tests to pass and the code to be clean. " * 40,
    "one word": "summary " * 300,
    "nine sections, one body": "".join(
        f"## {name}\nThis section covers the conversation and what the user asked for in it.\n\n"
        for name in ["Primary request", "Key concepts", "Files", "Errors", "Problem solving", "User messages",
                     "Pending tasks", "Current work", "Next step"] * 3),
    "looping list": "## Pending tasks\n" + "- Continue working on the user's requests as described above.\n" * 30,
}

# What a capable model writes for the history the tests build: nine sections, specific, a few
# "None." lines (which repeat, as real summaries' do).
ORDINARY = {
    "nine sections": """## Primary request and intent
The user wants the CSV importer in src/csvkit/parse.py to accept semicolon-separated files and to keep
the existing comma behaviour; every change must pass `pytest tests/test_parse.py` and `ruff check`.

## Key technical concepts
- csv.Sniffer for dialect detection, with a fallback to the comma dialect when sniffing fails.
- The importer streams rows; nothing may load the whole file into memory.

## Files and code sections
- src/csvkit/parse.py: `parse_row` renamed to `split_row`; `detect_dialect()` added.
- tests/test_parse.py: new cases for semicolons, quoted separators and an empty file.

## Errors and fixes
- `csv.Error: Could not determine delimiter` on a one-column file: now falls back to the comma dialect.

## Problem solving
Sniffing only the first 4 KiB keeps large files fast; quoted separators are handled by csv itself.

## All user messages
- "Make the importer accept semicolons."
- "Keep commas working, and don't read the whole file."
- "Run the tests and ruff before you say it's done."

## Pending tasks
None.

## Current work
Adding a test for a file whose first line is a header with a BOM.

## Optional next step
None.
""",
    "short prose": """The user is fixing a crash in the billing module. compute_vat_share in src/billing/vat.py
divided by the rate without checking it; a zero rate raised ZeroDivisionError when check_vat.py ran.
The division is now guarded (a zero rate returns 0) and the user asked for a regression test next,
in tests/test_vat.py, using pytest's parametrize over the rates 0, 0.07 and 0.2. They also asked that
no new dependencies be added and that the release notes go in docs/releases/2026-12.md. The API rate
limit of 4173 requests per minute must be respected by the retry helper in src/billing/client.py,
which currently retries immediately; the plan is an exponential back-off starting at 0.5 seconds.
""",
}


def _long_history(agent_turns: int = 6) -> list:
    replies = []
    for turn in range(agent_turns):
        replies.append(f"Answer {turn}: " + sized_text(300, seed=turn))
    return replies


def _agent_with_history(workspace, summary, turns: int = 6):
    provider = script(_long_history(turns), summary=summary)
    agent = make_agent(provider, workspace, window=32_000)
    for turn in range(turns):
        agent.run_turn(f"Question {turn} about src/csvkit/parse.py: " + sized_text(300, seed=turn + 50))
    return agent


def _summary_text(agent) -> str:
    head = agent.conversation.messages[0]
    return head.text if head.kind == "summary" else ""


# --- the turn's ending ---------------------------------------------------------------------------
@pytest.mark.parametrize("stop_reason, ending, words", [
    ("length", "max_tokens", "reply limit"),
    ("refusal", "refusal", "refused"),
    ("content_filter", "content_filter", "content filter"),
], ids=["max_tokens", "refusal", "content_filter"])
def test_an_incomplete_reply_ends_the_turn_with_its_ending_named_not_done(workspace, stop_reason, ending, words):
    agent = make_agent(script([Message.assistant("It was the best of times, it was", stop_reason=stop_reason)]),
                       workspace)
    events = Recorder()
    result = agent.run_turn("tell me a long story", events)
    assert result.stopped == ending
    assert any(words in notice for notice in events.notices)
    assert not any("empty reply" in notice for notice in events.notices)
    assert endings.ending(agent.conversation.messages[-1]) == ending


def test_a_reply_cut_at_the_limit_names_the_limit_in_plain_words(workspace):
    agent = make_agent(script([Message.assistant("the first half", stop_reason="length")]), workspace)
    events = Recorder()
    agent.run_turn("write a lot", events)
    limit = agent.provider.requests[-1].max_tokens
    assert events.notices == [f"Reply cut at the {limit:,}-token reply limit: the answer is incomplete."]


def test_a_refusal_without_words_is_a_refusal_not_an_empty_reply(workspace):
    agent = make_agent(script([Message.assistant("", stop_reason="refusal")]), workspace)
    events = Recorder()
    assert agent.run_turn("something it will not do", events).stopped == "refusal"
    assert events.notices == ["The model refused to answer."]


def test_a_cut_off_reply_with_a_tool_call_runs_nothing_and_leaves_a_valid_history(workspace):
    cut = Message.assistant("Writing it now.", [ToolCall("c1", "write_file", '{"path": "a.txt", "content": "x"}')],
                            meta={"stop_reason": "cut"})
    agent = make_agent(script([cut]), workspace)
    assert agent.run_turn("write a.txt").stopped == "cut"
    assert not (workspace / "a.txt").exists()
    assert validity_problems(agent.conversation.messages) == []
    assert "Not run" in agent.conversation.messages[-1].text


def test_a_finished_reply_is_still_done(workspace):
    agent = make_agent(script(["All finished."]), workspace)
    assert agent.run_turn("hi").stopped == "done"


# --- a tool call cut mid-JSON --------------------------------------------------------------------
def _cut_call(content: str = "abc") -> Message:
    return Message.assistant("", [ToolCall("", "write_file", '{"path": "big.txt", "content": "' + content)],
                             stop_reason="length")


def test_a_call_cut_mid_json_is_not_run_and_the_model_retries_smaller(workspace):
    agent = make_agent(script([_cut_call(), tool_call("write_file", path="big.txt", content="small\n"), "Done."]),
                       workspace)
    events = Recorder()
    result = agent.run_turn("write a big file", events)
    assert result.stopped == "done" and (workspace / "big.txt").read_text() == "small\n"
    told = agent.provider.requests[1].messages[-1].text
    assert "reply limit" in told and "cut mid-JSON" in told and "again, smaller" in told
    assert any("cut at the" in notice and "write_file" in notice for notice in events.notices)


def test_cut_calls_are_retried_a_bounded_number_of_times_then_the_turn_stops_as_max_tokens(workspace):
    agent = make_agent(script([_cut_call() for _ in range(SETTINGS.loop.cut_call_retries + 1)]), workspace)
    events = Recorder()
    result = agent.run_turn("write a big file", events)
    assert result.stopped == "max_tokens"
    assert len(agent.provider.requests) == SETTINGS.loop.cut_call_retries + 1
    assert not (workspace / "big.txt").exists()
    assert validity_problems(agent.conversation.messages) == []
    assert any(notice.startswith("Stopped: the model's tool call was cut") for notice in events.notices)


def test_the_retry_may_reply_longer_but_never_past_the_window(workspace):
    roomy = make_agent(script([_cut_call(), "Done."]), workspace, window=200_000)
    roomy.run_turn("write a big file")
    first, retry = (request.max_tokens for request in roomy.provider.requests)
    assert retry == 2 * first

    tight = make_agent(script([_cut_call(), "Done."]), workspace, window=4_096)
    tight.run_turn("write a big file")
    retry_request = tight.provider.requests[1]
    room = tight.budget.window - tight.budget.calibration.request(retry_request.system, retry_request.tools,
                                                      retry_request.messages)
    assert tight.provider.requests[0].max_tokens <= retry_request.max_tokens <= room


def test_complete_calls_of_a_reply_cut_after_them_still_run(workspace):
    whole = Message.assistant("", [ToolCall("c1", "write_file", '{"path": "ok.txt", "content": "fine\\n"}')],
                              stop_reason="length")
    agent = make_agent(script([whole, "Done."]), workspace)
    assert agent.run_turn("write ok.txt").stopped == "done"
    assert (workspace / "ok.txt").read_text() == "fine\n"


# --- summaries ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(DEGENERATE))
def test_a_degenerate_summary_is_never_installed_and_the_extractive_layer_runs(workspace, name):
    agent = _agent_with_history(workspace, DEGENERATE[name])
    record = agent.compact_now()
    assert "summarize" not in record.layers and "extractive" in record.layers
    assert record.summary_rejected == "degenerate" and "degenerate" in record.note
    assert DEGENERATE[name].strip()[:60] not in _summary_text(agent)


@pytest.mark.parametrize("name", list(ORDINARY))
def test_an_ordinary_summary_is_installed(workspace, name):
    agent = _agent_with_history(workspace, ORDINARY[name])
    record = agent.compact_now()
    assert "summarize" in record.layers and record.summary_rejected == ""
    assert ORDINARY[name].strip()[:60] in _summary_text(agent)


def test_the_retention_benchmarks_summaries_are_all_still_installed():
    sys.path.append(str(Path(__file__).resolve().parents[1]))
    from benchmarks.bench_retention import good_summary, run_session

    run = run_session("good", good_summary, turns=64, window=8_192)
    summarising = [layers for layers in run.layers if "clear_tool_results" != "+".join(layers)]
    # In this 8k window every other compaction only clears old tool results (it reaches the target).
    assert len(summarising) >= 3 and all("summarize" in layers for layers in summarising)


def test_a_summary_cut_at_its_limit_is_not_installed_as_whole(workspace):
    cut = lambda request: Message.assistant(ORDINARY["nine sections"][:400], stop_reason="length")  # noqa: E731
    agent = _agent_with_history(workspace, cut)
    record = agent.compact_now()
    assert "summarize" not in record.layers and "extractive" in record.layers
    assert record.summary_rejected == "max_tokens" and "token limit" in record.note
    assert ORDINARY["nine sections"][:60] not in _summary_text(agent)


def test_a_summary_cut_at_its_limit_is_asked_for_once_more_with_room_to_finish(workspace):
    limits = []

    def finishes_with_room(request):
        limits.append(request.max_tokens)
        if len(limits) == 1:
            return Message.assistant(ORDINARY["nine sections"][:400], stop_reason="length")
        return ORDINARY["nine sections"]

    agent = _agent_with_history(workspace, finishes_with_room)
    record = agent.compact_now()
    assert "summarize" in record.layers and record.summary_rejected == ""
    assert len(limits) == 2 and limits[0] < limits[1] <= 2 * limits[0]
    assert ORDINARY["nine sections"].strip()[:60] in _summary_text(agent)


def _cut_at(limit: int):
    raise acceptance.SummaryRejected(endings.MAX_TOKENS, f"the model's summary was cut at its {limit}-token limit")


@pytest.mark.parametrize("room, asked", [(1_000, [400, 800]), (600, [400, 600]), (450, [400])])
def test_a_cut_summary_is_asked_for_again_only_where_the_window_has_room_for_more(room, asked):
    limits = []

    def ask(limit):
        limits.append(limit)
        _cut_at(limit)

    with pytest.raises(acceptance.SummaryRejected):
        summarizer.with_room(ask, 400, room)
    assert limits == asked


def test_a_refused_or_degenerate_summary_is_not_asked_for_again():
    limits = []

    def ask(limit):
        limits.append(limit)
        raise acceptance.SummaryRejected("refusal", "the model's summary did not finish (refused)")

    with pytest.raises(acceptance.SummaryRejected):
        summarizer.with_room(ask, 400, 10_000)
    assert limits == [400]


def test_the_summarizer_is_told_its_limit_in_words():
    line = summarizer.length_line(1_000)
    assert "600 words" in line and "1,000 tokens" in line


def test_the_measures_tell_the_smollm2_summary_from_a_real_one():
    degenerate = acceptance.repetition(DEGENERATE_SMOLLM2)
    ordinary = acceptance.repetition(ORDINARY["nine sections"])
    assert degenerate["compression_ratio"] < SETTINGS.acceptance_min_compression_ratio < ordinary["compression_ratio"]
    assert degenerate["repeated_ngrams"] > SETTINGS.acceptance_max_repeated_ngrams > ordinary["repeated_ngrams"]


def test_a_summary_that_repeats_what_the_user_repeated_is_not_degenerate():
    asked = "Please look at module 3 and tell me what the parser config session window means."
    source = "\n".join(f"[user] {asked} (turn {n})" for n in range(30))
    summary = "## Requests\n" + "\n".join(f"- {asked} (turn {n})" for n in range(30))
    assert acceptance.degeneracy(summary, source) is None
    assert acceptance.degeneracy(summary) is not None  # the same text with no source to explain it


def test_the_record_of_a_rejected_summary_is_json_ready(workspace):
    agent = _agent_with_history(workspace, DEGENERATE_SMOLLM2)
    assert json.loads(json.dumps(agent.compact_now().to_dict()))["summary_rejected"] == "degenerate"


def test_with_automatic_compaction_off_a_full_context_says_compact_still_works(workspace):
    from mini_letta.errors import ContextFullError

    agent = make_agent(script([sized_text(600, seed=n) for n in range(20)]), workspace, window=4_096,
                       auto_compact=False)
    with pytest.raises(ContextFullError) as full:
        for turn in range(20):
            agent.run_turn(f"Question {turn}: " + sized_text(300, seed=turn))
    assert "automatic compaction is off" in str(full.value)
    assert "Use /compact to summarise the conversation (it works with automatic compaction off)" in str(full.value)
