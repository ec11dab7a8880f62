"""Wire details of OpenAI-compatible servers that are not OpenAI: a plain JSON answer to a
streaming request, Ollama's parallel tool calls that all say ``index: 0``, llama.cpp's usage with
cached tokens or without usage at all, reasoning tokens, and the ``[1m]`` model-name suffix."""

from __future__ import annotations

import json

import pytest
from fakes import Recorded, ask, stream_all
from fakes.anthropic_server import FakeAnthropicServer
from fakes.openai_server import FakeOpenAIServer

from mini_letta.messages import Usage
from mini_letta.providers import create_provider


class RawReplies:
    """Answers every completion with the bytes queued in ``raw`` (a JSON body or SSE events)."""

    def __init__(self) -> None:
        super().__init__()
        self.raw: list[tuple[str, bytes]] = []

    def serve_completion(self, handler, request: Recorded) -> None:
        content_type, data = self.raw.pop(0)
        handler.send_response(200)
        handler.send_header("content-type", content_type)
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


class RawOpenAIServer(RawReplies, FakeOpenAIServer):
    pass


class RawAnthropicServer(RawReplies, FakeAnthropicServer):
    pass


@pytest.fixture
def raw():
    with RawOpenAIServer() as fake:
        yield fake


@pytest.fixture
def raw_anthropic():
    with RawAnthropicServer() as fake:
        yield fake


def sse(*chunks: dict) -> tuple[str, bytes]:
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    return "text/event-stream", body


def chunk(delta: dict | None = None, finish: str | None = None, usage: dict | None = None) -> dict:
    choices = [] if delta is None and finish is None else [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": choices,
            **({"usage": usage} if usage else {})}


def provider_for(raw):
    return create_provider("openai", "local-model", raw.base_url, max_retries=0)


def test_a_plain_json_answer_to_a_streaming_request_is_read_as_the_reply(raw, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Reading it.",
                "tool_calls": [{"id": "t1", "type": "function",
                                "function": {"name": "read_file", "arguments": "{\"path\": \"a.py\"}"}}]}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129}}
    raw.raw.append(("application/json; charset=utf-8", json.dumps(body).encode()))
    events, message = stream_all(provider_for(raw), ask())
    assert message.text == "Reading it." and [c.name for c in message.tool_calls] == ["read_file"]
    assert message.usage == Usage(input_tokens=120, output_tokens=9)
    assert message.stop_reason == "tool_use"


def test_ollama_parallel_calls_that_all_say_index_zero_stay_separate(raw, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    call = lambda id_, path: {"index": 0, "id": id_, "type": "function",  # noqa: E731
                              "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}
    raw.raw.append(sse(chunk({"role": "assistant", "tool_calls": [call("call_a", "a.py")]}),
                       chunk({"tool_calls": [call("call_b", "b.py")]}),
                       chunk({"tool_calls": [call("call_c", "c.py")]}),
                       chunk(finish="tool_calls")))
    _, message = stream_all(provider_for(raw), ask())
    assert [(c.id, json.loads(c.arguments)["path"]) for c in message.tool_calls] == [
        ("call_a", "a.py"), ("call_b", "b.py"), ("call_c", "c.py")]


def test_openai_style_fragments_of_one_call_still_join(raw, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    first = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"pa"}}
    rest = {"index": 0, "function": {"arguments": "th\": \"a.py\"}"}}
    raw.raw.append(sse(chunk({"tool_calls": [first]}), chunk({"tool_calls": [rest]}), chunk(finish="tool_calls")))
    _, message = stream_all(provider_for(raw), ask())
    assert [(c.id, c.arguments) for c in message.tool_calls] == [("call_a", "{\"path\": \"a.py\"}")]


def test_llama_cpp_usage_with_cached_tokens_is_not_counted_twice(raw, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    usage = {"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920,
             "prompt_tokens_details": {"cached_tokens": 850}}
    raw.raw.append(sse(chunk({"content": "hi"}), chunk(finish="stop"), chunk(usage=usage)))
    _, message = stream_all(provider_for(raw), ask())
    assert message.usage.prompt_tokens == 900 and message.usage.cache_read_tokens == 850
    assert message.usage.context_tokens == 920


def test_a_reply_without_usage_leaves_no_anchor(raw, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    raw.raw.append(sse(chunk({"content": "hi"}), chunk(finish="stop")))
    _, message = stream_all(provider_for(raw), ask())
    assert message.text == "hi" and message.usage is None


def test_reasoning_tokens_do_not_count_towards_the_next_request(raw, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    usage = {"prompt_tokens": 1000, "completion_tokens": 700, "total_tokens": 1700,
             "completion_tokens_details": {"reasoning_tokens": 650}}
    raw.raw.append(sse(chunk({"content": "short answer"}), chunk(finish="stop"), chunk(usage=usage)))
    _, message = stream_all(provider_for(raw), ask())
    assert message.usage.output_tokens == 700 and message.usage.context_tokens == 1050


def test_the_one_million_suffix_is_ours_and_never_sent(raw, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    raw.raw.append(sse(chunk({"content": "hi"}), chunk(finish="stop")))
    stream_all(create_provider("openai", "gpt-4.1[1m]", raw.base_url, max_retries=0), ask())
    assert raw.requests_to("/v1/chat/completions")[-1].body["model"] == "gpt-4.1"


def test_anthropic_plain_json_answer_to_a_streaming_request_is_read_as_the_reply(raw_anthropic, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": "Looking."},
                        {"type": "tool_use", "id": "tu_1", "name": "glob", "input": {"pattern": "*.py"}}],
            "usage": {"input_tokens": 50, "output_tokens": 7, "cache_read_input_tokens": 400}}
    raw_anthropic.raw.append(("application/json", json.dumps(body).encode()))
    provider = create_provider("anthropic", "claude-test", raw_anthropic.base_url, max_retries=0)
    _, message = stream_all(provider, ask())
    assert message.text == "Looking." and [(c.id, c.name) for c in message.tool_calls] == [("tu_1", "glob")]
    assert message.usage == Usage(input_tokens=50, output_tokens=7, cache_read_tokens=400)


def test_anthropic_one_million_suffix_asks_for_the_long_context_beta(raw_anthropic, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 5, "output_tokens": 1}}
    raw_anthropic.raw.append(("application/json", json.dumps(body).encode()))
    stream_all(create_provider("anthropic", "claude-test-model[1m]", raw_anthropic.base_url, max_retries=0), ask())
    request = raw_anthropic.requests_to("/v1/messages")[-1]
    assert request.body["model"] == "claude-test-model"
    assert "context-1m" in request.headers.get("anthropic-beta", "")
