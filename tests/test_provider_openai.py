"""The OpenAI / Ollama provider against a fake Chat Completions server over real HTTP (nothing patched)."""

from __future__ import annotations

import socket

import pytest
from fakes import Fault, Reply, ask, both_openai_apis, openai_provider_name, stream_all
from fakes.openai_server import overflow_fault_body
from fakes.responses_server import FakeResponsesServer

from mini_letta.errors import AuthenticationError, ContextOverflowError, ProviderError
from mini_letta.messages import Image, Message, ToolCall, ToolSpec
from mini_letta.providers import create_provider
from mini_letta.providers.base import Request, TextDelta, ToolCallStarted
from mini_letta.providers.errors_map import classify_overflow

READ_FILE = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


@pytest.fixture
def provider(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return create_provider(openai_provider_name(server), "gpt-test", server.base_url, timeout=2, max_retries=1)




# --- streaming and conversion -------------------------------------------------------------------
@both_openai_apis
def test_streamed_text_arrives_as_several_deltas_and_is_assembled(server, provider):
    server.enqueue(Reply(text="Hello from the fake server.", chunk_size=4))
    deltas, message = stream_all(provider, ask())
    assert len(deltas) >= 5 and all(isinstance(d, TextDelta) for d in deltas)
    assert "".join(d.text for d in deltas) == message.text == "Hello from the fake server."
    assert message.role == "assistant" and message.stop_reason == "end_turn"


def test_request_has_system_first_streams_with_usage_and_sends_the_override_model(server, provider):
    server.enqueue(Reply(text="ok"))
    stream_all(provider, ask(model="cheap-summarizer", max_tokens=321))
    body = server.requests_to("/v1/chat/completions")[0].body
    assert body["model"] == "cheap-summarizer"
    assert body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 321
    assert "tools" not in body  # OpenAI rejects an empty tools array


@both_openai_apis
def test_key_from_openai_api_key_is_sent(server, provider):
    server.enqueue(Reply(text="ok"))
    stream_all(provider, ask())
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"


@both_openai_apis
def test_tool_call_arguments_split_over_chunks_are_assembled(server, provider):
    arguments = '{"path": "src/very/long/path/to/module.py"}'
    server.enqueue(Reply(text="Reading.", tool_calls=[("call_1", "read_file", arguments)], chunk_size=5))
    events, message = stream_all(provider, ask(tools=[READ_FILE]))
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [ToolCallStarted("call_1", "read_file")]
    assert message.tool_calls == [ToolCall("call_1", "read_file", arguments)]
    assert message.stop_reason == "tool_use"
    sent = server.requests[0].body["tools"]
    if isinstance(server, FakeResponsesServer):  # flat, not nested under "function"
        assert sent == [{"type": "function", "strict": False, **READ_FILE.to_dict()}]
    else:
        assert sent == [{"type": "function", "function": READ_FILE.to_dict()}]


def test_tool_result_round_trip_has_the_chat_completions_wire_shape(server, provider):
    server.enqueue(Reply(tool_calls=[("call_1", "read_file", '{"path": "a.py"}'),
                                     ("call_2", "read_file", '{"path": "b.py"}')]),
                   Reply(text="Both read."))
    history = [Message.user("read a and b")]
    _, assistant = stream_all(provider, Request("sys", history, [READ_FILE]))
    history += [assistant, Message.tool_result(assistant.tool_calls[0], "A"),
                Message.tool_result(assistant.tool_calls[1], "boom", is_error=True)]
    _, final = stream_all(provider, Request("sys", history, [READ_FILE]))
    assert final.text == "Both read."
    sent = server.requests[1].body["messages"]
    assert sent[2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}},
        {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "b.py"}'}}]}
    assert sent[3:] == [{"role": "tool", "tool_call_id": "call_1", "content": "A"},
                        {"role": "tool", "tool_call_id": "call_2", "content": "boom"}]


def test_images_go_as_data_urls_and_a_summary_as_plain_user_text(server, provider):
    server.enqueue(Reply(text="ok"))
    history = [Message.user("Earlier history was compacted: ...", kind="summary"),
               Message.user("what is this?", images=[Image("image/png", "iVBORw0KGgo=")])]
    stream_all(provider, Request("sys", history))
    sent = server.requests[0].body["messages"]
    assert sent[1] == {"role": "user", "content": "Earlier history was compacted: ..."}
    assert sent[2] == {"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}


# --- usage --------------------------------------------------------------------------------------
@both_openai_apis
def test_cached_tokens_are_split_out_of_prompt_tokens_not_double_counted(server, provider):
    server.enqueue(Reply(text="ok", usage=server.api_usage(prompt=1000, completion=50, cached=800)))
    _, message = stream_all(provider, ask())
    assert (message.usage.input_tokens, message.usage.cache_read_tokens, message.usage.output_tokens) == (200, 800, 50)
    assert message.usage.context_tokens == 1050


@both_openai_apis
@pytest.mark.parametrize("usage", [None, (0, 0)], ids=["absent", "zero"])
def test_missing_or_zero_usage_gives_no_usage(server, provider, usage):
    server.enqueue(Reply(text="ok", usage=usage and server.api_usage(*usage)))
    _, message = stream_all(provider, ask())
    assert message.text == "ok" and message.usage is None


# --- errors -------------------------------------------------------------------------------------
@both_openai_apis
def test_401_is_an_authentication_error_naming_the_provider_and_the_variable(server, provider):
    server.enqueue(Fault(401, "Incorrect API key provided: sk-test."))
    with pytest.raises(AuthenticationError) as caught:
        stream_all(provider, ask())
    assert str(caught.value).startswith(f"authentication failed for {provider.name}: Incorrect API key provided")
    assert "OPENAI_API_KEY" in str(caught.value)
    assert len(server.requests) == 1  # a wrong key is not retried


@both_openai_apis
def test_429_is_retried_and_then_succeeds(server, provider):
    server.enqueue(Fault(429, "Rate limit reached", headers={"retry-after-ms": "10"}), Reply(text="finally"))
    _, message = stream_all(provider, ask())
    assert message.text == "finally"
    assert len(server.completions()) == 2


@both_openai_apis
def test_429_after_the_retries_is_a_retryable_rate_limit_error(server, provider):
    server.enqueue(*[Fault(429, "Rate limit reached", headers={"retry-after-ms": "10"})] * 2)
    with pytest.raises(ProviderError) as caught:
        stream_all(provider, ask())
    assert f"rate limited by {provider.name}:" in str(caught.value) and caught.value.retryable and caught.value.status == 429


@both_openai_apis
def test_server_error_is_retryable_and_says_server_error(server, provider):
    server.enqueue(*[Fault(503, "upstream unavailable", headers={"retry-after-ms": "10"})] * 2)
    with pytest.raises(ProviderError) as caught:
        stream_all(provider, ask())
    assert str(caught.value).startswith(f"server error from {provider.name} (HTTP 503)") and caught.value.retryable


@both_openai_apis
def test_unknown_model_error_names_the_model(server, provider):
    server.enqueue(Fault(404, "The model `gpt-nope` does not exist or you do not have access to it."))
    with pytest.raises(ProviderError) as caught:
        stream_all(provider, ask(model="gpt-nope"))
    assert "'gpt-nope'" in str(caught.value) and "--model" in str(caught.value)
    assert not isinstance(caught.value, ContextOverflowError)


@both_openai_apis
def test_context_length_exceeded_becomes_overflow_with_limit_and_actual(server, provider):
    server.enqueue(Fault(400, body=overflow_fault_body(limit=8192, actual=9000)))
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask())
    assert (caught.value.limit, caught.value.actual, caught.value.status) == (8192, 9000, 400)


@both_openai_apis
def test_overflow_is_recognised_by_code_alone(server, provider):
    server.enqueue(Fault(400, body={"error": {"message": "Request rejected.", "code": "context_length_exceeded"}}))
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask())
    assert caught.value.limit is None


@both_openai_apis
def test_413_becomes_overflow_without_numbers(server, provider):
    server.enqueue(Fault(413, "Request Entity Too Large"))
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask())
    assert (caught.value.limit, caught.value.actual, caught.value.status) == (None, None, 413)


@both_openai_apis
def test_llama_cpp_overflow_numbers_come_from_the_body_fields(server, provider):
    server.enqueue(Fault(400, body={"error": {"code": 400, "type": "exceed_context_size_error", "n_ctx": 4096,
                                              "n_prompt_tokens": 5000,
                                              "message": "the request exceeds the available context size"}}))
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask())
    assert (caught.value.limit, caught.value.actual) == (4096, 5000)


@both_openai_apis
@pytest.mark.parametrize("fault, says", [
    (Reply(text="partial reply here", cut_after=3), "broke off mid-stream"),
    (Reply(text="partial reply here", malformed_after=3), "broke off mid-stream"),
    (Reply(text="partial", error_after=2, error_body={"error": {"message": "upstream model crashed"}}),
     "{name} reported an error during the reply: upstream model crashed"),
], ids=["cut", "malformed", "error-event"])
def test_a_stream_that_goes_wrong_midway_becomes_a_provider_error(server, provider, fault, says):
    server.enqueue(fault)
    with pytest.raises(ProviderError) as caught:
        stream_all(provider, ask())
    assert says.format(name=provider.name) in str(caught.value)


@both_openai_apis
def test_a_stalled_server_times_out_with_a_clear_message(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    quick = create_provider(openai_provider_name(server), "gpt-test", server.base_url, timeout=0.3, max_retries=0)
    server.enqueue(Reply(text="too late", stall=3))
    with pytest.raises(ProviderError, match="timed out") as caught:
        stream_all(quick, ask())
    assert caught.value.retryable


@both_openai_apis
def test_a_stall_in_the_middle_of_the_stream_times_out(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    quick = create_provider(openai_provider_name(server), "gpt-test", server.base_url, timeout=0.3, max_retries=0)
    server.enqueue(Reply(text="starts then stalls", stall=3, stall_after=2))
    with pytest.raises(ProviderError, match="timed out"):
        stream_all(quick, ask())


def test_connection_refused_says_it_could_not_reach_the_address(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with socket.socket() as sock:  # a port that was free a moment ago and has no listener now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    offline = create_provider("ollama", "llama3.2", f"http://127.0.0.1:{port}/v1", timeout=1, max_retries=0)
    with pytest.raises(ProviderError) as caught:
        stream_all(offline, ask())
    assert f"could not reach ollama at http://127.0.0.1:{port}/v1" in str(caught.value)
    assert "ollama serve" in str(caught.value)


@both_openai_apis
def test_ctrl_c_while_streaming_propagates_and_closes_the_response(server, provider):
    # The stall comes after the first deltas of either API (Responses sends three events before its text).
    server.enqueue(Reply(text="a long reply " * 50, chunk_size=2, stall=1, stall_after=6))
    stream = provider.stream(ask())
    assert isinstance(next(stream), TextDelta)
    with pytest.raises(KeyboardInterrupt):
        stream.throw(KeyboardInterrupt)
    # The server finds the connection gone when it resumes writing: the response was closed.
    assert server.client_hung_up.wait(10)


def test_missing_key_is_a_one_line_authentication_error():
    with pytest.raises(AuthenticationError) as caught:
        create_provider("openai")
    assert str(caught.value) == "no API key for openai: set OPENAI_API_KEY or pass --provider demo."


def test_unknown_provider_name_is_a_config_error():
    from mini_letta.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown provider 'gemini'"):
        create_provider("gemini")


# --- ollama and served windows ------------------------------------------------------------------
def test_ollama_needs_no_key_and_sends_max_tokens(server):
    ollama = create_provider("ollama", base_url=server.base_url, timeout=2, max_retries=0)
    server.enqueue(Reply(text="hi"))
    stream_all(ollama, ask())
    request = server.requests_to("/v1/chat/completions")[0]
    assert request.headers["authorization"] == "Bearer ollama"
    assert request.body["model"] == "llama3.2" and "max_tokens" in request.body


def test_ollama_served_window_comes_from_api_ps_after_loading_the_model(server):
    server.ollama_available = {"llama3.2:latest": 4096, "qwen3:8b": 32768}
    ollama = create_provider("ollama", "llama3.2", server.base_url, timeout=2)
    assert ollama.served_window() == 4096
    loads = server.requests_to("/api/generate")
    assert [r.body for r in loads] == [{"model": "llama3.2"}]


def test_ollama_served_window_skips_loading_when_already_loaded(server):
    server.ollama_loaded = {"qwen3:8b": 8192}
    assert create_provider("ollama", "qwen3:8b", server.base_url).served_window() == 8192
    assert server.requests_to("/api/generate") == []


def test_ollama_served_window_is_none_for_an_unknown_model(server):
    assert create_provider("ollama", "nope", server.base_url).served_window() is None


def test_vllm_style_max_model_len_is_the_served_window(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.models = [{"id": "other", "max_model_len": 1}, {"id": "Qwen/Qwen3-8B", "max_model_len": 32768}]
    assert create_provider("openai", "Qwen/Qwen3-8B", server.base_url).served_window() == 32768


@pytest.mark.parametrize("entry, window", [
    ({"id": "m", "max_context_length": 16384}, 16384),
    ({"id": "m", "context_length": 8192}, 8192),  # OpenRouter, Together
    ({"id": "m", "context_window": 131072}, 131072),  # Groq
    ({"id": "m", "meta": {"n_ctx": 4096, "n_ctx_train": 131072}}, 4096),  # llama.cpp without /props
    ({"id": "m", "meta": {"n_ctx_train": 131072}}, None),  # trained, not served
    ({"id": "m", "owned_by": "x"}, None),
])
def test_other_model_list_window_fields(server, monkeypatch, entry, window):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.models = [entry]
    assert create_provider("openai", "m", server.base_url).served_window() == window


def test_served_window_never_raises_when_the_server_is_unreachable(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert create_provider("openai", "m", f"http://127.0.0.1:{port}/v1").served_window() is None
    assert create_provider("ollama", "m", f"http://127.0.0.1:{port}/v1").served_window() is None


# --- overflow classification, by table ----------------------------------------------------------
@pytest.mark.parametrize("status, message, expected", [
    (400, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
     (True, 8192, 9000)),
    (400, "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
          "(4000 in the messages, 1000 in the completion).", (True, 4096, 5000)),
    (400, "prompt is too long: 210000 tokens > 200000 maximum", (True, 200000, 210000)),
    (400, "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length",
     (True, 200000, 198000)),
    (400, "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
     (True, 32768, 40000)),
    (400, "The input token count (1,200,000) exceeds the maximum number of tokens allowed (1,048,576).",
     (True, 1048576, 1200000)),
    (413, "Request Entity Too Large", (True, None, None)),
    (400, "Your input exceeds the context window of this model.", (True, None, None)),
    (400, "the request exceeds the available context size, try increasing it", (True, None, None)),
    (500, "input length exceeds the context length", (True, None, None)),
    (400, "Too many tokens in the request", (True, None, None)),
    (400, "input is too long for requested model", (True, None, None)),
    (None, "prompt is too long: 5 tokens > 4 maximum", (True, 4, 5)),
    (400, "Invalid value for 'temperature'", (False, None, None)),
    (400, "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens", (False, None, None)),
    (401, "invalid key (context length irrelevant)", (False, None, None)),
    (429, "Too many tokens per minute", (False, None, None)),
    (404, "model not found", (False, None, None)),
])
def test_classify_overflow(status, message, expected):
    assert classify_overflow(status, message) == expected


def test_openai_itself_gets_max_completion_tokens_which_its_newer_models_require(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    params = create_provider("openai", "gpt-5").request_params(ask(max_tokens=777), "gpt-5")
    assert params["max_completion_tokens"] == 777 and "max_tokens" not in params


@both_openai_apis
def test_openai_base_url_variable_is_honoured(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.enqueue(Reply(text="via env"))
    _, message = stream_all(create_provider(openai_provider_name(server), "gpt-test", max_retries=0), ask())
    assert message.text == "via env" and len(server.requests) == 1


def test_openai_itself_gets_a_prompt_cache_key_and_a_compatible_server_does_not(server, provider, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    params = create_provider("openai", "gpt-5").request_params(ask(cache_key="session-1"), "gpt-5")
    assert params["prompt_cache_key"] == "session-1"
    server.enqueue(Reply(text="ok"))
    stream_all(provider, ask(cache_key="session-1"))
    assert "prompt_cache_key" not in server.requests[-1].body
