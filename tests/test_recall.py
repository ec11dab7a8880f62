"""conversation_search: the session record on disk, searched by words or regex, with turn numbers;
and the model getting a fact back after a compaction, through the real loop and after --continue."""

from __future__ import annotations

import datetime
import json
import time

import pytest

from mini_letta.app import Options, build_agent
from mini_letta.messages import Message, ToolCall
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.sessions.store import SessionWriter, load_session, read_history
from mini_letta.toolbox import ToolError, approve_all
from mini_letta.toolbox.recall import search_history

from agent_support import request_tokens


def logged(tmp_path, *messages: Message) -> SessionWriter:
    writer = SessionWriter.create(tmp_path / "home", tmp_path, "scripted", "scripted")
    for message in messages:
        writer.append_message(message)
    return writer


def numbered(*texts: str) -> list[Message]:
    messages = []
    for turn, text in enumerate(texts, start=1):
        messages.append(Message.user(text, meta={"turn": turn}))
        messages.append(Message.assistant(f"reply {turn}"))
    return messages


def test_words_match_in_any_case_and_order_with_turn_numbers_newest_first(tmp_path):
    writer = logged(tmp_path, *numbered("The port is 48213 for staging.", "the port of call", "Staging PORT moved to 48214."))
    result = search_history(read_history(writer.path), "port staging", max_chars=2_000)
    lines = result.splitlines()
    assert lines[0] == "2 messages match 'port staging' in turns 1–3, newest first:"
    assert lines[1].startswith("[turn 3, user, ") and "48214" in lines[1]
    assert lines[2].startswith("[turn 1, user, ") and "48213" in lines[2]


def test_tool_outputs_are_searched_in_full_even_after_a_compaction_cleared_them(tmp_path):
    call = ToolCall("call_1", "bash", json.dumps({"command": "pytest -q"}))
    result = Message.tool_result(call, "collected 3 items\nE   KeyError: 'tenant_id'\n[exit code 1]", is_error=True)
    writer = logged(tmp_path, Message.user("run the tests", meta={"turn": 1}), Message.assistant("", [call]), result)
    cleared = Message(**{**result.__dict__, "text": "[tool output cleared to save context]"})
    writer.append_compaction({"trigger": "manual"}, 9, [Message.user("summary", kind="summary"), cleared])
    found = search_history(read_history(writer.path), "tenant_id", max_chars=2_000)
    assert "[turn 1, bash error, " in found and "KeyError: 'tenant_id'" in found


def test_regex_turn_range_and_date_range(tmp_path):
    messages = numbered("error E101 here", "error E202 there", "error E303 again")
    yesterday = time.time() - 86_400
    messages[0].created = yesterday
    writer = logged(tmp_path, *messages)
    history = read_history(writer.path)
    assert "E202" in search_history(history, r"E\d{3}", regex=True, start_turn=2, end_turn=2, max_chars=2_000)
    ranged = search_history(history, r"E\d0\d", regex=True, start_turn=2, end_turn=2, max_chars=2_000)
    assert "E101" not in ranged and "E303" not in ranged
    today = datetime.date.today().isoformat()
    dated = search_history(history, "error", start_date=today, max_chars=2_000)
    assert "E101" not in dated and "E202" in dated and "E303" in dated
    with pytest.raises(ToolError, match="start_date must be a date like"):
        search_history(history, "error", start_date="last week", max_chars=2_000)
    with pytest.raises(ToolError, match="invalid regular expression"):
        search_history(history, "E(", regex=True, max_chars=2_000)


def test_when_no_message_has_every_word_the_closest_are_shown_and_said_so(tmp_path):
    writer = logged(tmp_path, *numbered("the cache key is user_id", "nothing here"))
    result = search_history(read_history(writer.path), "cache key tenant", max_chars=2_000)
    assert "no message has all the words; these have 2 of 3" in result and "user_id" in result
    assert search_history(read_history(writer.path), "zebra", max_chars=2_000) == \
        "No messages match 'zebra' in turns 1–2 of this session."


def test_results_fit_the_output_cap_and_say_how_many_were_left_out(tmp_path):
    writer = logged(tmp_path, *numbered(*[f"deploy step {n}: " + "x" * 300 for n in range(1, 41)]))
    result = search_history(read_history(writer.path), "deploy", max_chars=1_500)
    assert len(result) <= 1_500
    assert result.splitlines()[1].startswith("[turn 40,")
    assert result.splitlines()[-1].startswith("[") and "older matches not shown" in result


def test_the_searches_themselves_are_not_found_again(tmp_path):
    call = ToolCall("call_9", "conversation_search", json.dumps({"query": "blue whale"}))
    writer = logged(tmp_path, Message.user("find blue whale", meta={"turn": 1}), Message.assistant("", [call]),
                    Message.tool_result(call, "1 message(s) match 'blue whale'"))
    result = search_history(read_history(writer.path), "blue whale", max_chars=2_000)
    assert result.startswith("1 message matches") and "conversation_search" not in result


def test_redacted_text_stays_redacted(tmp_path):
    secret = "sk-proj-" + "A1b2C3d4E5" * 3
    writer = logged(tmp_path, Message.user(f"my key is {secret}, deploy with it", meta={"turn": 1}))
    result = search_history(read_history(writer.path), "my key", max_chars=2_000)
    assert secret not in result and "[REDACTED]" in result
    assert search_history(read_history(writer.path), "A1b2C3d4E5", max_chars=2_000).startswith("No messages")


def test_reading_a_snapshot_skips_a_line_still_being_written_and_the_writer_goes_on(tmp_path):
    writer = logged(tmp_path, *numbered("first fact: the bucket is s3://alpha"))
    with open(writer.path, "ab") as torn:
        torn.write(b'{"type":"message","message":{"role":"user","text":"half a li')
    history = read_history(writer.path)
    assert [m.text for _, m in history] == ["first fact: the bucket is s3://alpha", "reply 1"]
    writer._needs_newline = True  # what the writer knows after a write that did not finish
    writer.append_message(Message.user("second fact", meta={"turn": 2}))
    assert "second fact" in search_history(read_history(writer.path), "second fact", max_chars=2_000)
    assert [m.text for m in load_session(writer.path).all_messages][-1] == "second fact"


# --- through the real agent loop --------------------------------------------------------------
WINDOW = 6_000
FACT = "The staging database password rotates every 41 days; the owner is Ingrid Holm."


def _search_call(query: str) -> Message:
    return Message.assistant("", [ToolCall(f"call_{time.monotonic_ns()}", "conversation_search",
                                           json.dumps({"query": query}))])


def _scripted(replies) -> ScriptedProvider:
    def answer(request):
        if request.purpose == "summary":
            return "OK."
        return replies.pop(0)

    return ScriptedProvider(default=answer, window=WINDOW, count=request_tokens)


def test_the_model_finds_a_fact_from_before_a_compaction_also_after_continue(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("ops notes\n" + FACT + "\n", encoding="utf-8")
    read = Message.assistant("", [ToolCall("call_read", "read_file", json.dumps({"path": "notes.txt"}))])
    replies = [read, "Read it.", *[f"Answer {n}: " + "words " * 200 for n in range(2, 14)],
               _search_call("password rotates"), "It rotates every 41 days."]
    provider = _scripted(replies)
    agent = build_agent(Options(workspace=workspace), approve_all, provider=provider)
    agent.run_turn("Read notes.txt please.")
    for n in range(2, 14):
        agent.run_turn(f"Turn {n}: tell me about part {n}. " + "filler " * 300)
    assert agent.compactions, "the window is small enough to compact"
    assert all(FACT not in m.text for m in agent.conversation.messages)
    summary = agent.conversation.messages[0]
    assert summary.kind == "summary" and "conversation_search searches the full record" in summary.text

    result = agent.run_turn("How often does the staging password rotate?")
    assert result.text == "It rotates every 41 days."
    found = [m for m in agent.conversation.messages if m.role == "tool" and m.tool_name == "conversation_search"]
    assert "[turn 1, read_file output, " in found[-1].text and FACT in found[-1].text
    agent.session.close()

    again = _scripted([_search_call("Ingrid Holm"), "Ingrid Holm owns it."])
    resumed = build_agent(Options(workspace=workspace, continue_session=True), approve_all, provider=again)
    assert resumed.conversation.turns == 14
    assert resumed.run_turn("Who owns that password?").text == "Ingrid Holm owns it."
    found = [m for m in resumed.conversation.messages if m.role == "tool" and m.tool_name == "conversation_search"]
    assert "[turn 1, read_file output, " in found[-1].text and "Ingrid Holm" in found[-1].text
    # The new turn is numbered after the resumed ones, in memory and in the record.
    asked = next(m for m in resumed.conversation.messages if m.text == "Who owns that password?")
    assert asked.meta["turn"] == 15
    assert any(m.meta.get("turn") == 15 for _, m in read_history(resumed.session.path))


# --- retention across compactions (the benchmark's session, as a test) ------------------------
def test_with_a_useless_summarizer_facts_stay_in_the_request_or_searchable_and_rules_in_the_request():
    import sys
    from pathlib import Path

    sys.path.append(str(Path(__file__).resolve().parents[1]))
    from benchmarks.bench_retention import FACTS, run_session

    run = run_session("useless", lambda request: "OK.", turns=64, window=8_192)
    assert run.errors == []
    assert len(run.checks) >= 5 and sum("summarize" in layers for layers in run.layers) >= 3
    checks = [fact for item in run.checks for fact in range(item.kept + item.searched + len(item.lost))]
    reached = sum(item.kept + item.searched for item in run.checks)
    assert reached / len(checks) >= 0.95
    assert [item.constraints_missing for item in run.checks] == [[] for _ in run.checks]
    # The last check saw nearly every fact, and what is not in the request was found by search.
    assert run.checks[-1].kept + run.checks[-1].searched >= len(FACTS) - 1


def test_the_tool_is_offered_only_when_the_floor_still_fits_with_it(tmp_path):
    from agent_support import make_agent

    roomy = make_agent(ScriptedProvider(), tmp_path, window=8_192)
    assert "conversation_search" in [spec.name for spec in roomy.tool_specs()]
    without = [spec for spec in roomy.tool_specs() if spec.name != "conversation_search"]
    floor = roomy.budget.calibration.floor(roomy.system_prompt(), without)
    # A window whose limit the floor fits without the tool, but not with it.
    tight = make_agent(ScriptedProvider(), tmp_path, window=int((floor + 40) / 0.8))
    assert tight.budget.floor_problem(floor, "scripted") is None
    assert "conversation_search" not in [spec.name for spec in tight.tool_specs()]


def test_a_catastrophic_regex_returns_at_once_and_lookarounds_are_refused_with_the_reason(tmp_path):
    import threading
    writer = logged(tmp_path, *numbered("x" * 5_000, "nothing here"))
    history = read_history(writer.path)
    answers: list[str] = []
    worker = threading.Thread(target=lambda: answers.append(
        search_history(history, "(x+x+)+y", regex=True, max_chars=2_000)), daemon=True)
    worker.start()
    worker.join(30)  # backtracking would take hours; RE2 answers in milliseconds
    assert answers == ["No messages match /(x+x+)+y/ in turns 1–2 of this session."]
    with pytest.raises(ToolError, match="look-arounds are not supported"):
        search_history(history, "(?<=x)y", regex=True, max_chars=2_000)
