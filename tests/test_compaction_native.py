"""The provider's own compaction as a layer of our plan (compaction/native.py), end to end against
the fake Responses server: our threshold decides when, the sealed item replaces what it compacted
(the conversation is not resent whole), the carry-over rides beside it, hooks run, ``-c`` sends the
item again, and a refusal falls back to our own summary, said once."""

from __future__ import annotations

import dataclasses
import json

import pytest
from fakes import Fault, Reply
from fakes.responses_server import FakeResponsesServer, unseal
from fault_support import HOOK_WORDS, check_history, compact_hooks, check_native_fell_back, native_item_after_continue, openai_agent

from mini_letta.compaction.native import mode
from mini_letta.loop.sizing import native_mode
from mini_letta.notices import Notices

READS = 4


@pytest.fixture
def server():
    with FakeResponsesServer() as fake:
        yield fake


def _long_session(agent, server, workspace) -> None:
    """Turns of file reads and long answers, then a threshold at 7/8 of what is in use."""
    (workspace / "notes.py").write_text("".join(f"value_{n} = {n}\n" for n in range(20)))
    for turn in range(READS):
        server.enqueue(Reply(text=f"Reading {turn}.", tool_calls=[(f"call_{turn}", "read_file", '{"path": "notes.py"}')]),
                       Reply(text=f"answer {turn} " + "words " * 300))
        agent.run_turn(f"question {turn}: what is in notes.py? " + "detail " * 200)
    agent.budget.window_info = dataclasses.replace(agent.budget.window_info,
                                                   auto_compact_window=agent.context_tokens() * 7 // 8)


def _items(request) -> list[dict]:
    return request.body["input"]


def test_a_long_tool_loop_compacts_natively_and_the_conversation_is_not_resent_whole(server, monkeypatch, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    before = server.completions()[-1]
    server.enqueue(Reply(text="Reading again.", tool_calls=[("call_x", "read_file", '{"path": "notes.py"}')]),
                   Reply(text="answered after compacting"))
    result = agent.run_turn("the last question: and value_7?")
    assert result.text == "answered after compacting"
    [record] = result.compactions
    assert "native" in record.layers and "summarize" not in record.layers
    assert len(server.compactions) == 1 and "question 0" in server.compactions[0]
    after = server.completions()[-1]
    first = _items(after)[0]
    assert first["type"] == "compaction" and unseal(first["encrypted_content"])[1] == server.compactions[0]
    # Not resent whole: the compacted turns' replies are gone, and the request is far smaller.
    sent = json.dumps(after.body)
    assert "answer 0 words" not in sent and "answer 1 words" not in sent
    assert server.prompt_tokens(after.body) < server.prompt_tokens(before.body) * 0.6
    assert server.rejections == 0 and server.malformed == 0
    # The carry-over rides beside the sealed item, in plain text: the task and the user's words.
    summary = agent.conversation.messages[0]
    assert summary.kind == "summary" and summary.meta["native"]["items"][0]["type"] == "compaction"
    assert "Carried over from the session record" in summary.text and "Files read: notes.py" in summary.text
    assert "Current request (turn 5, in progress): the last question" in summary.text
    check_history(agent, "the last question: and value_7?")


def test_the_native_item_survives_continue(server, monkeypatch, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    item, sent = native_item_after_continue(agent, server, lambda **o: openai_agent(monkeypatch, server, workspace, **o))
    assert _items(sent)[0] == item  # byte for byte, as the server sealed it
    assert server.malformed == 0


def test_a_refused_native_compaction_falls_back_to_our_summary_said_once(server, monkeypatch, workspace):
    notices = Notices()
    agent = openai_agent(monkeypatch, server, workspace, notices=notices)
    server.compact_fault = Fault(404, "Invalid URL (POST /v1/responses/compact)")
    _long_session(agent, server, workspace)
    notices.take()
    server.enqueue(Reply(text="Summary: the user asked about notes.py four times."), Reply(text="answered"))
    check_native_fell_back(agent, agent.run_turn("the last question"), notices, "Invalid URL", "the last question")


def test_compaction_native_off_never_asks_the_provider(server, monkeypatch, workspace):
    monkeypatch.setenv("MINI_LETTA_COMPACTION_NATIVE", "off")
    agent = openai_agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    server.enqueue(Reply(text="Summary: notes.py questions."), Reply(text="answered"))
    result = agent.run_turn("the last question")
    assert "summarize" in result.compactions[0].layers
    assert server.requests_to("/v1/responses/compact") == []


def test_compact_with_a_focus_passes_it_as_the_instructions(server, monkeypatch, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    record = agent.compact_now("keep the value names")
    assert "native" in record.layers
    [request] = server.requests_to("/v1/responses/compact")
    assert request.body["instructions"] == "keep the value names"


@pytest.mark.parametrize("value, chosen, said", [(None, "auto", False), ("ON", "on", False), ("off", "off", False),
                                                 ("sometimes", "auto", True)])
def test_the_setting_is_read_from_the_environment(monkeypatch, value, chosen, said):
    if value is not None:
        monkeypatch.setenv("MINI_LETTA_COMPACTION_NATIVE", value)
    heard: list[str] = []
    assert native_mode(heard.append) == chosen and bool(heard) == said


def test_the_setting_is_read_from_settings_json(monkeypatch, tmp_path):
    from mini_letta import config

    config.home().mkdir(parents=True, exist_ok=True)
    (config.home() / "settings.json").write_text(json.dumps({"compaction": {"native": "off"}}))
    assert native_mode(lambda text: None) == "off"
    assert mode(" Auto ") == "auto" and mode("maybe") is None


def test_pre_and_post_compact_hooks_run_around_a_native_compaction(server, monkeypatch, workspace, tmp_path):
    seen = compact_hooks(tmp_path)
    agent = openai_agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    record = agent.compact_now("the value names")
    assert "native" in record.layers
    assert seen.read_text().split() == ["PreCompact", "PostCompact"]
    [request] = server.requests_to("/v1/responses/compact")
    assert "the value names" in request.body["instructions"] and HOOK_WORDS in request.body["instructions"]


def test_on_with_a_provider_that_has_no_compaction_of_its_own_says_so_once_and_summarises(monkeypatch, workspace):
    from fakes.openai_server import FakeOpenAIServer

    monkeypatch.setenv("MINI_LETTA_COMPACTION_NATIVE", "on")
    notices = Notices()
    with FakeOpenAIServer() as chat:
        agent = openai_agent(monkeypatch, chat, workspace, notices=notices)
        _long_session(agent, chat, workspace)
        notices.take()
        for _ in range(2):
            chat.enqueue(Reply(text="Summary: notes.py questions."))
            assert "summarize" in agent.compact_now().layers
    said = [text for text in notices.take() if "has no compaction of its own" in text]
    assert len(said) == 1 and said[0].startswith("compaction.native is on, but openai:")


def test_the_compaction_line_says_the_provider_compacted():
    from mini_letta.compaction.record import CompactionRecord
    from mini_letta.repl.views import compaction_line

    record = CompactionRecord("context_pressure", 12, 3, 20_000, 4_000, 5, ["native"])
    assert compaction_line(record).startswith("Summarized 10 older messages (the provider's own compaction):")
