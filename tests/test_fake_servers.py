"""The fake servers disagree with us as real ones do: their own token count, a served window they
enforce, and llama.cpp's overflow body. These tests pin that down, so that a test passing against a
fake cannot be passing only because the fake agrees with our own estimate."""

import json
import urllib.error
import urllib.request

import pytest
from fakes import Reply, ask, stream_all
from fakes.anthropic_server import FakeAnthropicServer
from fakes.tokens import count_request, count_text

from mini_letta.context import counter_for_model
from mini_letta.errors import ContextOverflowError
from mini_letta.providers import create_provider

SAMPLES = {
    "prose": "The agent counts every request before it sends it, and compacts the history when the "
             "context window fills up, so the conversation can go on for a long time. " * 8,
    "numbers": " ".join(str(n * 7919) for n in range(120)),
    "chinese": "上下文窗口管理是这个产品的卖点。" * 20,
    "base64": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==" * 6,
}


@pytest.fixture
def provider(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return create_provider("openai", "m", server.base_url, timeout=5, max_retries=0)


@pytest.fixture
def anthropic_server():
    with FakeAnthropicServer() as fake:
        yield fake


def test_the_fake_count_is_not_ours_times_a_constant():
    ours = counter_for_model("gpt-4.1")
    ratios = {name: count_text(text) / ours.count_text(text) for name, text in SAMPLES.items()}
    assert max(ratios.values()) > 1.5 * min(ratios.values()), ratios
    assert ratios["prose"] > 1.0  # text costs the server more than we would guess from o200k alone


def test_default_usage_is_the_servers_own_count_of_the_request(server, provider):
    server.enqueue(Reply(text="ok"))
    request = ask(SAMPLES["numbers"], max_tokens=100)
    _, message = stream_all(provider, request)
    body = server.requests_to("/v1/chat/completions")[0].body
    assert message.usage.input_tokens == count_request(body)
    ours = counter_for_model("gpt-4.1").count_text(SAMPLES["numbers"])
    assert message.usage.input_tokens > 1.5 * ours


def test_a_request_whose_prompt_and_max_tokens_overrun_the_window_is_rejected_as_llama_cpp_does(server, provider):
    server.as_llama_cpp(4096)
    server.enqueue(Reply(text="never sent"))
    request = ask("hello there", max_tokens=4090)
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, request)
    prompt = count_request(server.requests_to("/v1/chat/completions")[0].body)
    assert (caught.value.limit, caught.value.actual, caught.value.status) == (4096, prompt, 400)
    assert server.rejections == 1 and len(server.replies) == 1  # rejected before any reply was made


def test_the_same_request_with_room_for_its_reply_is_answered(server, provider):
    server.as_llama_cpp(4096)
    server.enqueue(Reply(text="fits"))
    assert stream_all(provider, ask("hello there", max_tokens=1024))[1].text == "fits"
    assert server.rejections == 0


def test_the_overflow_body_is_llama_cpps_own(server):
    server.n_ctx = 64
    body = json.dumps({"model": "m", "stream": True, "max_tokens": 10,
                       "messages": [{"role": "user", "content": "word " * 100}]}).encode()
    request = urllib.request.Request(server.base_url + "/chat/completions", data=body,
                                     headers={"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 400
    error = json.load(caught.value)["error"]
    assert set(error) == {"code", "message", "type", "n_prompt_tokens", "n_ctx"}
    assert error["type"] == "exceed_context_size_error" and error["n_ctx"] == 64
    assert error["message"] == (f"request ({error['n_prompt_tokens']} tokens) exceeds the available context size "
                                "(64 tokens), try increasing it")


def test_llama_cpps_own_rule_answers_and_cuts_the_reply_at_the_window(server, provider):
    server.as_llama_cpp(256)
    server.strict_window = False  # as measured: only a prompt of n_ctx tokens or more is rejected
    server.enqueue(Reply(text="many words " * 400))
    _, message = stream_all(provider, ask("hello", max_tokens=8192))
    assert message.stop_reason == "max_tokens"
    assert 0 < len(message.text) < len("many words " * 400)
    body = server.requests_to("/v1/chat/completions")[0].body
    assert count_request(body) + count_text(message.text) <= 256


def test_llama_cpps_own_rule_rejects_a_prompt_as_large_as_the_window(server, provider):
    server.as_llama_cpp(64)
    server.strict_window = False
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask("word " * 100, max_tokens=1))
    assert caught.value.limit == 64


def test_vllm_style_overflow_names_the_window(server, provider):
    server.as_vllm("m", 2048)
    server.overflow_style = "vllm"
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask("hi", max_tokens=4000))
    assert caught.value.limit == 2048
    assert "maximum context length is 2048 tokens" in str(caught.value)


def test_the_anthropic_fake_enforces_the_window_with_llama_cpps_body_as_llama_server_does(anthropic_server,
                                                                                        monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    anthropic_server.as_llama_cpp(4096)
    provider = create_provider("anthropic", "m", anthropic_server.base_url, timeout=5, max_retries=0)
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask("hi", max_tokens=8192))
    assert caught.value.limit == 4096
    anthropic_server.enqueue(Reply(text="fits"))
    _, message = stream_all(provider, ask("hi", max_tokens=1000))
    assert message.text == "fits"
    assert message.usage.input_tokens == count_request(anthropic_server.requests_to("/v1/messages")[-1].body)


def test_the_anthropic_fake_can_answer_in_anthropics_own_words(anthropic_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    anthropic_server.n_ctx = 100
    anthropic_server.overflow_style = "anthropic"
    provider = create_provider("anthropic", "m", anthropic_server.base_url, timeout=5, max_retries=0)
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask("word " * 200, max_tokens=10))
    assert caught.value.limit == 100 and caught.value.actual > 100


def test_tool_schemas_and_the_template_count_toward_the_prompt():
    bare = {"messages": [{"role": "user", "content": "hi"}]}
    with_tools = dict(bare, tools=[{"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}}])
    assert count_request(bare) == 8 + 4 + 1
    assert count_request(with_tools) > count_request(bare) + 10
