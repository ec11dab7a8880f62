"""Anthropic's own compaction (``compact_20260112``) as a layer of our plan, end to end against the
fake Messages API: our threshold decides when, the API's ``compaction`` block replaces what it
compacted (sent back as it came, in an assistant turn, with the carry-over in plain text after
it), ``-c`` sends the block again, and a refusal, an answer that did not compact, or a part under
the API's 50,000-token trigger fall back to our own summary."""

from __future__ import annotations

import dataclasses
import json

import pytest
from fakes import Fault, Reply
from fakes.anthropic_server import FakeAnthropicServer
from fault_support import HOOK_WORDS, anthropic_agent, compact_hooks, check_history, check_native_fell_back, native_item_after_continue

from mini_letta.messages import Message
from mini_letta.notices import Notices
from mini_letta.providers.anthropic_provider import (COMPACT_BETA, AnthropicProvider, compacting_model)
from mini_letta.providers.anthropic_wire import COMPACTED_LEAD, SUMMARY_IN_BLOCK
from mini_letta.providers.base import Request, encode_body

TURNS = 5
WORDS = 16_000  # per answer: five answers put the part to compact over the API's 50,000-token trigger


@pytest.fixture
def server():
    with FakeAnthropicServer() as fake:
        yield fake


def _agent(monkeypatch, server, workspace, **options):
    monkeypatch.setenv("CODEAGENT_MAX_CONTEXT_TOKENS", "200000")
    return anthropic_agent(monkeypatch, server, workspace, **options)


def _long_session(agent, server, workspace, turns: int = TURNS, words: int = WORDS) -> None:
    """Turns of file reads and long answers, then a threshold at 7/8 of what is in use."""
    (workspace / "notes.py").write_text("".join(f"value_{n} = {n}\n" for n in range(20)))
    for turn in range(turns):
        server.enqueue(Reply(text=f"Reading {turn}.", tool_calls=[(f"call_{turn}", "read_file", '{"path": "notes.py"}')]),
                       Reply(text=f"answer {turn} " + "words " * words, chunk_size=8192))
        agent.run_turn(f"question {turn}: what is in notes.py? " + "detail " * 200)
    agent.budget.window_info = dataclasses.replace(agent.budget.window_info,
                                                   auto_compact_window=agent.context_tokens() * 7 // 8)


def _compacting_requests(server):
    return [r for r in server.completions() if (r.body or {}).get("context_management")]


def test_a_long_tool_loop_compacts_natively_and_the_conversation_is_not_resent_whole(server, monkeypatch, workspace):
    agent = _agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    before = server.completions()[-1]
    server.enqueue(Reply(text="Reading again.", tool_calls=[("call_x", "read_file", '{"path": "notes.py"}')]),
                   Reply(text="answered after compacting"))
    result = agent.run_turn("the last question: and value_7?")
    assert result.text == "answered after compacting"
    [record] = result.compactions
    assert "native" in record.layers and "summarize" not in record.layers
    [summary_text] = server.compactions
    assert "question 0" in summary_text
    # The compacting request: the edit as the API wants it, with the beta and the tools the calls name.
    [asked] = _compacting_requests(server)
    [edit] = asked.body["context_management"]["edits"]
    assert edit == {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000},
                    "pause_after_compaction": True}
    assert COMPACT_BETA in asked.headers["anthropic-beta"] and asked.body["tools"]
    # The next request: the block as issued, in an assistant turn after a one-line user turn.
    after = server.completions()[-1]
    lead, block_turn, summary_turn = after.body["messages"][:3]
    assert lead["role"] == "user" and lead["content"][0]["text"] == COMPACTED_LEAD
    [block] = block_turn["content"]
    assert block_turn["role"] == "assistant" and block["type"] == "compaction" and block["content"] == summary_text
    assert block == agent.conversation.messages[0].meta["native"]["items"][0]
    assert COMPACT_BETA in after.headers["anthropic-beta"]
    # The summary in words is the block's: sent once, not again beside it; the carry-over is.
    sent_summary = summary_turn["content"][0]["text"]
    assert SUMMARY_IN_BLOCK in sent_summary and summary_text not in sent_summary
    assert "Carried over from the session record" in sent_summary and "Files read: notes.py" in sent_summary
    # Not resent whole: the compacted turns' answers are gone, and the request is far smaller.
    sent = json.dumps(after.body)
    assert "answer 0 words" not in sent and "answer 1 words" not in sent
    assert server.prompt_tokens(after.body) < server.prompt_tokens(before.body) * 0.6
    assert server.rejections == 0 and server.malformed == 0
    summary = agent.conversation.messages[0]
    assert summary.kind == "summary" and summary_text.strip() in summary.text  # readable in the session and /context
    assert "Current request (turn 6, in progress): the last question" in summary.text
    check_history(agent, "the last question: and value_7?")


def test_the_compaction_block_survives_continue(server, monkeypatch, workspace):
    agent = _agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    block, sent = native_item_after_continue(agent, server, lambda **o: _agent(monkeypatch, server, workspace, **o))
    assert sent.body["messages"][1]["content"][0] == block  # as the API issued it
    assert server.malformed == 0


def test_a_refused_compaction_falls_back_to_our_summary_said_once(server, monkeypatch, workspace):
    notices = Notices()
    agent = _agent(monkeypatch, server, workspace, notices=notices)
    server.compact_fault = Fault(400, "context_management: compact_20260112 is not supported for this model")
    _long_session(agent, server, workspace)
    notices.take()
    server.enqueue(Reply(text="Summary: the user asked about notes.py five times."), Reply(text="answered"))
    check_native_fell_back(agent, agent.run_turn("the last question"), notices, "not supported for this model",
                           "the last question")
    assert "compaction" not in json.dumps(server.completions()[-1].body["messages"])


def test_an_answer_that_did_not_compact_is_taken_as_a_refusal(server, monkeypatch, workspace):
    """Our count said the part reached the trigger, the API's did not: it answered instead."""
    notices = Notices()
    agent = _agent(monkeypatch, server, workspace, notices=notices)
    monkeypatch.setattr(AnthropicProvider, "compaction_minimum", 1_000)
    _long_session(agent, server, workspace, turns=3, words=300)
    notices.take()
    server.enqueue(Reply(text="An answer, not a compaction."),
                   Reply(text="Summary: notes.py, three questions."), Reply(text="answered"))
    record = agent.compact_now()
    assert "summarize" in record.layers and "native" not in record.layers
    assert len(_compacting_requests(server)) == 1 and server.compactions == []
    heard = notices.take()
    assert any("holds no compaction" in text for text in heard), heard


@pytest.mark.parametrize("setting, said", [("auto", False), ("on", True)])
def test_a_part_under_the_apis_trigger_is_never_sent_to_it(server, monkeypatch, workspace, setting, said):
    monkeypatch.setenv("MINI_LETTA_COMPACTION_NATIVE", setting)
    notices = Notices()
    agent = _agent(monkeypatch, server, workspace, notices=notices)
    _long_session(agent, server, workspace, turns=3, words=300)
    notices.take()
    for _ in range(2):
        server.enqueue(Reply(text="Summary: notes.py questions."))
        assert "summarize" in agent.compact_now().layers
    assert _compacting_requests(server) == []
    heard = [text for text in notices.take() if "50,000 tokens or more" in text]
    assert len(heard) == (1 if said else 0)


def test_compact_with_a_focus_passes_it_as_the_instructions(server, monkeypatch, workspace):
    agent = _agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    record = agent.compact_now("keep the value names")
    assert "native" in record.layers
    [asked] = _compacting_requests(server)
    assert asked.body["context_management"]["edits"][0]["instructions"] == "keep the value names"
    assert server.compactions[0].endswith("Focus: keep the value names")


def test_pre_and_post_compact_hooks_run_around_it(server, monkeypatch, workspace, tmp_path):
    seen = compact_hooks(tmp_path)
    agent = _agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    assert "native" in agent.compact_now("the value names").layers
    assert seen.read_text().split() == ["PreCompact", "PostCompact"]
    [asked] = _compacting_requests(server)
    instructions = asked.body["context_management"]["edits"][0]["instructions"]
    assert "the value names" in instructions and HOOK_WORDS in instructions


def test_the_compaction_is_paid_in_the_ledger(server, monkeypatch, workspace):
    agent = _agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    before = agent.ledger.usage
    agent.compact_now()
    # The compaction's own cost arrives in usage.iterations, outside the top-level usage.
    [summary_text] = server.compactions
    spent = agent.ledger.usage
    assert spent.input_tokens - before.input_tokens >= 50_000
    assert spent.output_tokens - before.output_tokens >= len(summary_text.split())


# --- the provider alone ---------------------------------------------------------------------------
@pytest.mark.parametrize("model, compacts", [
    ("claude-sonnet-4-6", True), ("claude-opus-4-6-20260201", True), ("claude-sonnet-5-5", True),
    ("claude-opus-5-20270101", True), ("claude-sonnet-4-5", False), ("claude-opus-4-1-20250805", False),
    ("claude-haiku-4-5", False), ("claude-3-5-sonnet-latest", False), ("qwen2.5-7b", False)])
def test_which_models_compact(model, compacts):
    assert compacting_model(model) is compacts


def _native_summary(model: str) -> Message:
    block = {"type": "compaction", "content": "The user asked about notes.py.", "encrypted_content": "enc",
             "signature": "sig", "tool_changes": []}
    text = "Earlier conversation history was compacted.\n\nThe user asked about notes.py.\n\nFiles read: notes.py"
    return Message(role="user", kind="summary", text=text, meta={
        "summary_body": "The user asked about notes.py.",
        "native": {"provider": "anthropic", "model": model, "items": [block], "tokens": 0}})


def test_the_wire_forms_agree_with_a_compaction_block_and_the_joiner_reuses_its_turns():
    provider = AnthropicProvider("claude-sonnet-4-6", api_key="k", base_url="http://127.0.0.1:9")
    messages = [_native_summary("claude-sonnet-4-6"), Message.user("next"), Message.assistant("ok")]
    request = Request(system="system", messages=messages, tools=[], max_tokens=100)
    assert provider.request_body(request, "claude-sonnet-4-6") == encode_body(provider.request_params(request, "claude-sonnet-4-6"))
    merged = provider._turns.merged
    longer = Request(system="system", messages=messages + [Message.user("more")], tools=[], max_tokens=100)
    assert provider.request_body(longer, "claude-sonnet-4-6") == encode_body(provider.request_params(longer, "claude-sonnet-4-6"))
    assert provider._turns.merged - merged <= 2  # the summary's turn was not merged again
    assert provider._betas("claude-sonnet-4-6[1m]", True) == {"anthropic-beta": "context-1m-2025-08-07," + COMPACT_BETA}


def test_another_model_reads_the_summary_as_text():
    provider = AnthropicProvider("claude-opus-4-6", api_key="k", base_url="http://127.0.0.1:9")
    request = Request(system="system", messages=[_native_summary("claude-sonnet-4-6"), Message.user("next")],
                      tools=[], max_tokens=100)
    params = provider.request_params(request, "claude-opus-4-6")
    assert "compaction" not in json.dumps(params["messages"])
    assert "The user asked about notes.py." in params["messages"][0]["content"][0]["text"]


def test_a_second_compaction_sends_the_first_block_and_builds_on_it(server, monkeypatch, workspace):
    agent = _agent(monkeypatch, server, workspace)
    _long_session(agent, server, workspace)
    assert "native" in agent.compact_now().layers
    first = agent.conversation.messages[0].meta["native"]["items"][0]
    _long_session(agent, server, workspace)  # past the threshold again: compacted automatically
    assert [r.trigger for r in agent.compactions] == ["manual", "context_pressure"]
    assert "native" in agent.compactions[-1].layers
    second_request = _compacting_requests(server)[-1]
    assert second_request.body["messages"][1]["content"] == [first]
    assert server.compactions[1].startswith(server.compactions[0].strip())
    assert agent.conversation.messages[0].meta["native"]["items"][0]["content"] == server.compactions[1]
    assert server.malformed == 0 and server.rejections == 0
