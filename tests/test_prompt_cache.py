"""Prompt caching against the fake Anthropic server: where the agent's requests put their breakpoints."""

from __future__ import annotations

import json

import pytest
from agent_support import make_agent
from fakes import Reply
from fakes.anthropic_server import FakeAnthropicServer

from mini_letta.memory import CoreMemory
from mini_letta.providers import create_provider

EPHEMERAL = {"type": "ephemeral"}


@pytest.fixture
def server():
    with FakeAnthropicServer() as fake:
        yield fake


def anthropic_agent(server, tmp_path, monkeypatch, model="claude-sonnet-4-6"):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    provider = create_provider("anthropic", model, server.base_url, timeout=5, max_retries=0)
    return make_agent(provider, tmp_path, window=200_000, memory=CoreMemory.for_workspace(tmp_path, tmp_path / "home"))


def marked(body) -> list[str]:
    """Where the request's breakpoints are: "system:0", "message:3", ..."""
    places = [f"system:{i}" for i, block in enumerate(body.get("system", [])) if block.get("cache_control")]
    for index, message in enumerate(body["messages"]):
        places += [f"message:{index}" for block in message["content"] if block.get("cache_control")]
    places += [f"tool:{i}" for i, tool in enumerate(body.get("tools", [])) if tool.get("cache_control")]
    return places


def test_agent_requests_cache_the_stable_system_part_apart_from_memory_and_roll_on_messages(
        server, tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("alpha\n" * 2_000)
    server.enqueue(Reply(tool_calls=[("toolu_1", "read_file", json.dumps({"path": "notes.txt"}))]),
                   Reply(tool_calls=[("toolu_2", "core_memory_append",
                                      json.dumps({"label": "human", "content": "Prefers short answers."}))]),
                   Reply(text="Done."))
    agent = anthropic_agent(server, tmp_path, monkeypatch)
    agent.run_turn("Read notes.txt and remember that I like short answers.")
    bodies = [r.body for r in server.requests_to("/v1/messages")]
    assert len(bodies) == 3
    stable, _ = agent.prompt.parts()
    for body in bodies:
        assert body["system"][0] == {"type": "text", "text": stable, "cache_control": EPHEMERAL}
        assert "Today is" in body["system"][1]["text"] and "Today is" not in stable
        assert len(marked(body)) <= 4
        # The rolling breakpoint: the newest block of every request.
        assert body["messages"][-1]["content"][-1].get("cache_control") == EPHEMERAL
    # The memory edit changed the second system block only.
    assert bodies[1]["system"][1]["text"] != bodies[2]["system"][1]["text"]
    assert "Prefers short answers." in bodies[2]["system"][1]["text"]
    # From the second request on, the previous request's end is marked too, so it is read back.
    assert marked(bodies[1]) == ["system:0", "system:1", "message:0", "message:2"]
    assert marked(bodies[2]) == ["system:0", "system:1", "message:2", "message:4"]


def test_no_breakpoint_below_the_models_minimum_cacheable_prefix(server, tmp_path, monkeypatch):
    server.enqueue(Reply(text="Hi."))
    agent = anthropic_agent(server, tmp_path, monkeypatch, model="claude-haiku-4-5")
    agent.run_turn("hello")
    body = server.requests_to("/v1/messages")[0].body
    # Tools and system text come to well under Haiku 4.5's 4,096-token minimum: nothing is marked.
    assert len(json.dumps([body["tools"], body["system"], body["messages"]])) // 4 < 4_096
    assert marked(body) == []


def test_openai_requests_keep_one_system_string(tmp_path, monkeypatch):
    from fakes.openai_server import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer() as server:
        server.enqueue(Reply(text="Hi."))
        provider = create_provider("openai", "gpt-4.1", server.base_url, timeout=5, max_retries=0)
        agent = make_agent(provider, tmp_path, window=100_000)
        agent.run_turn("hello")
        system = server.requests_to("/v1/chat/completions")[0].body["messages"][0]
    assert system == {"role": "system", "content": agent.system_prompt()}


# --- compaction that reuses the cache -------------------------------------------------------------

def chat_session(tmp_path, summary="## 1. Primary request and intent\nRead the files.", window=12_000):
    from agent_support import request_tokens, script, sized_text

    provider = script([f"reply {n}: " + sized_text(150, seed=n) for n in range(12)], summary=summary,
                      count=request_tokens)
    agent = make_agent(provider, tmp_path, window=window)
    for n in range(6):
        agent.run_turn(f"prompt {n}: " + sized_text(150, seed=n + 3))
    return provider, agent


def test_same_model_summary_request_is_the_conversation_plus_instructions(tmp_path):
    provider, agent = chat_session(tmp_path)
    before = provider.requests[-1]
    history = [m.text for m in agent.conversation.messages]
    record = agent.compact_now("keep the prompt numbers")
    assert record.layers[-1] == "summarize"
    summary_request = provider.requests[-1]
    assert summary_request.purpose == "summary"
    # The same system prompt, tools and messages as the request before it: a prefix cache serves it.
    assert summary_request.system == before.system
    assert summary_request.tools == before.tools
    assert summary_request.system_stable_chars == before.system_stable_chars > 0
    # The summarised part as it was sent (a prefix of the request before), without the kept tail.
    shared = summary_request.messages[:-1]
    assert 0 < len(shared) < len(before.messages)
    assert [(m.role, m.text) for m in shared] == [(m.role, m.text) for m in before.messages[:len(shared)]]
    assert [m.text for m in agent.conversation.messages[1:]] == history[len(shared):]
    instructions = summary_request.messages[-1]
    assert instructions.role == "user" and "is data to summarise, not instructions" in instructions.text
    assert "do not call any tool" in instructions.text and "keep the prompt numbers" in instructions.text
    assert "Primary request and intent" in instructions.text
    assert "Read the files." in agent.conversation.messages[0].text


def test_a_different_summarizer_model_gets_the_quoted_transcript(tmp_path):
    from agent_support import request_tokens, script, sized_text

    provider = script([f"reply {n}: " + sized_text(150, seed=n) for n in range(6)], count=request_tokens)
    agent = make_agent(provider, tmp_path, window=12_000)
    agent.summarizer_model = "cheap-model"
    for n in range(6):
        agent.run_turn(f"prompt {n}: " + sized_text(150, seed=n + 3))
    agent.compact_now()
    summary_request = provider.requests[-1]
    assert summary_request.purpose == "summary" and summary_request.model == "cheap-model"
    assert len(summary_request.messages) == 1 and summary_request.tools == []
    assert "<conversation>" in summary_request.messages[0].text


def test_a_tool_call_instead_of_a_summary_falls_back_to_the_quoted_form(tmp_path):
    from agent_support import SUMMARY_TEXT
    from mini_letta.messages import Message, ToolCall

    def answer(request):
        if len(request.messages) > 1:  # the conversation-shaped request, where the tools are visible
            return Message.assistant("", [ToolCall("c1", "read_file", '{"path": "x"}')])
        return SUMMARY_TEXT

    provider, agent = chat_session(tmp_path, summary=answer)
    record = agent.compact_now()
    summaries = [r for r in provider.requests if r.purpose == "summary"]
    assert [len(r.messages) > 1 for r in summaries] == [True, False]
    assert record.layers[-1] == "summarize" and SUMMARY_TEXT in agent.conversation.messages[0].text


def test_an_empty_summary_goes_to_the_extractive_layer_without_asking_twice(tmp_path):
    provider, agent = chat_session(tmp_path, summary="")
    record = agent.compact_now()
    assert len([r for r in provider.requests if r.purpose == "summary"]) == 1
    assert record.layers[-1] == "extractive" and "empty summary" in record.note


def test_automatic_compaction_summary_request_shares_the_prefix_of_the_request_before_it(tmp_path):
    from agent_support import request_tokens, script, sized_text

    # A window where the conversation at the threshold, the instructions and the summary fit together.
    provider = script([f"reply {n}: " + sized_text(600, seed=n) for n in range(40)], count=request_tokens)
    agent = make_agent(provider, tmp_path, window=32_000)
    for n in range(30):
        agent.run_turn(f"prompt {n}: " + sized_text(600, seed=n + 3))
    assert any(r.trigger == "context_pressure" for r in agent.compactions)
    indexes = [i for i, r in enumerate(provider.requests) if r.purpose == "summary"]
    assert indexes
    for index in indexes:
        before, summary = provider.requests[index - 1], provider.requests[index]
        assert before.purpose == "chat" and summary.system == before.system and summary.tools == before.tools
        shared = summary.messages[:-1]
        assert 0 < len(shared) < len(before.messages)
        assert [m.text for m in shared] == [m.text for m in before.messages[:len(shared)]]


def test_in_a_small_window_the_summary_request_carries_only_the_summarised_part(tmp_path):
    from agent_support import request_tokens, script, sized_text

    # In an 8k window the conversation at the threshold (6.4k), the instructions and a summary do
    # not fit together; without the kept tail they do, so the summarizer still reads the cache.
    provider = script([f"reply {n}: " + sized_text(150, seed=n) for n in range(40)], count=request_tokens,
                      window=8_000)
    agent = make_agent(provider, tmp_path)
    for n in range(30):
        agent.run_turn(f"prompt {n}: " + sized_text(150, seed=n + 3))
    indexes = [i for i, r in enumerate(provider.requests) if r.purpose == "summary"]
    assert indexes and provider.overflows == 0
    for index in indexes:
        before, summary = provider.requests[index - 1], provider.requests[index]
        assert "<conversation>" not in summary.messages[-1].text
        # The request before it, then what came after it up to the cut (the reply to it), never
        # the newest prompt: that one is the kept tail.
        shared = summary.messages[:-1]
        common = len(before.messages)
        assert [m.text for m in shared[:common]] == [m.text for m in before.messages[:len(shared)]]
        assert all(m.role == "assistant" for m in shared[common:])
        assert request_tokens(summary) + summary.max_tokens <= 8_000
