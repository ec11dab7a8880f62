"""Asking the server which window it serves (mini_letta/providers/probe.py), over real HTTP to the
fake servers, which answer in the shapes llama.cpp, vLLM, LM Studio and Ollama use."""

import json
import os
import socket
import subprocess
import sys

import pytest
from fakes import Reply, ask, stream_all
from fakes.anthropic_server import FakeAnthropicServer
from fakes.local import SMOLLM2

from mini_letta.notices import Notices
from mini_letta.app import Options, build_agent, choose_provider
from mini_letta.context import resolve_window
from mini_letta.errors import AuthenticationError
from mini_letta.providers import DEFAULT_MODELS, LOCAL_PLACEHOLDER_KEY, create_provider, probe
from mini_letta.toolbox.approval import approve_all


@pytest.fixture
def anthropic_server():
    with FakeAnthropicServer() as fake:
        yield fake


def openai_at(server, model="m", **kw):
    return create_provider("openai", model, server.base_url, timeout=2, max_retries=0, **kw)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


def free_port():
    with socket.socket() as sock:  # free a moment ago, and nothing listens there now
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- llama.cpp ------------------------------------------------------------------------------------
def test_llama_cpp_window_is_the_served_n_ctx_not_the_trained_one(server):
    server.as_llama_cpp(4096, n_ctx_train=8192)
    provider = openai_at(server, SMOLLM2)
    assert provider.served_window() == 4096
    assert provider.served_window_source == "llama.cpp /props n_ctx"
    info = resolve_window(provider.model, provider.served_window())
    assert info.window == 4096 and info.source == "served by the provider"


def test_llama_cpp_with_two_slots_serves_each_request_half_the_context(server):
    server.as_llama_cpp(4096, slots=2)
    assert server.props["total_slots"] == 2
    assert openai_at(server, SMOLLM2).served_window() == 2048


def test_llama_cpp_with_a_unified_cache_lets_each_slot_use_all_of_it(server):
    server.as_llama_cpp(4096, slots=2, unified=True)
    assert openai_at(server, SMOLLM2).served_window() == 4096


def test_llama_cpp_answers_to_any_model_name(server):
    server.as_llama_cpp(2048)
    assert openai_at(server, "gpt-4.1").served_window() == 2048


def test_llama_cpp_without_props_falls_back_to_the_model_lists_n_ctx(server):
    server.as_llama_cpp(4096, n_ctx_train=8192)
    server.props = None  # llama-server --no-endpoint-props
    provider = openai_at(server, SMOLLM2)
    assert provider.served_window() == 4096
    assert provider.served_window_source == "llama.cpp /v1/models n_ctx"


def test_n_ctx_train_alone_is_never_taken_as_the_served_window(server):
    server.models = [{"id": SMOLLM2, "owned_by": "llamacpp", "meta": {"n_ctx_train": 8192}}]
    provider = openai_at(server, SMOLLM2)
    assert provider.served_window() is None and provider.served_window_source is None
    assert resolve_window(provider.model, provider.served_window()).source == "default"


def test_the_anthropic_provider_asks_a_llama_cpp_server_at_its_root(anthropic_server):
    anthropic_server.as_llama_cpp(4096)
    provider = create_provider("anthropic", "claude-test", anthropic_server.base_url, timeout=2, max_retries=0)
    assert provider.served_window() == 4096
    assert provider.served_window_source == "llama.cpp /props n_ctx"
    props = anthropic_server.requests_to("/props")[0]
    assert props.headers["authorization"] == "Bearer sk-ant-test"  # the provider's own header, as it posts
    assert "x-api-key" not in props.headers


def test_the_anthropic_provider_reads_the_model_list_when_props_is_off(anthropic_server):
    anthropic_server.as_llama_cpp(2048, n_ctx_train=8192)
    anthropic_server.props = None
    provider = create_provider("anthropic", "claude-test", anthropic_server.base_url, timeout=2, max_retries=0)
    assert provider.served_window() == 2048
    assert anthropic_server.requests_to("/v1/models")


def test_the_official_apis_are_not_asked(no_network):
    for provider in (create_provider("anthropic", "claude-sonnet-4-5"), create_provider("openai", "gpt-4.1")):
        assert provider.served_window() is None and provider.served_window_source is None
    assert no_network == []


# --- vLLM, LM Studio, hosted lists ----------------------------------------------------------------
def test_vllm_window_is_its_max_model_len(server):
    server.as_vllm("Qwen/Qwen3-8B", 32768)
    provider = openai_at(server, "Qwen/Qwen3-8B")
    assert provider.served_window() == 32768
    assert provider.served_window_source == "vLLM max_model_len"
    assert server.requests_to("/props") == []  # the model list answered: nothing else is asked


def test_lm_studio_window_is_the_loaded_context_length(server):
    server.as_lm_studio("qwen2.5-7b-instruct", max_context_length=32768, loaded_context_length=8192)
    provider = openai_at(server, "qwen2.5-7b-instruct")
    assert provider.served_window() == 8192
    assert provider.served_window_source == "LM Studio loaded_context_length"


def test_lm_studio_model_not_loaded_yet_gives_its_maximum(server):
    server.as_lm_studio("qwen2.5-7b-instruct", max_context_length=32768)
    provider = openai_at(server, "qwen2.5-7b-instruct")
    assert provider.served_window() == 32768
    assert provider.served_window_source == "LM Studio max_context_length"


def test_a_model_list_with_several_models_and_none_matching_tells_nothing(server):
    server.models = [{"id": "a", "context_length": 1000}, {"id": "b", "context_length": 2000}]
    assert openai_at(server, "c").served_window() is None


# --- Ollama -----------------------------------------------------------------------------------------
def test_ollama_loaded_model_reports_its_allocated_context(server):
    server.ollama_loaded = {"llama3.2:latest": 8192}
    provider = create_provider("ollama", "llama3.2", server.base_url)
    assert provider.served_window() == 8192
    assert provider.served_window_source == "Ollama /api/ps"


def test_ollama_model_file_maximum_is_capped_at_ollamas_default_context(server):
    server.ollama_files = {"llama3.2:latest": 131072}  # pulled, but cannot be loaded (e.g. no memory)
    provider = create_provider("ollama", "llama3.2", server.base_url)
    assert provider.served_window() == 4096
    assert provider.served_window_source == "Ollama /api/show, capped at Ollama's default 4096"


def test_ollama_cap_follows_ollama_context_length_when_this_shell_sets_it(server, monkeypatch):
    monkeypatch.setenv("OLLAMA_CONTEXT_LENGTH", "16384")
    server.ollama_files = {"llama3.2:latest": 131072}
    provider = create_provider("ollama", "llama3.2", server.base_url)
    assert provider.served_window() == 16384
    assert provider.served_window_source == "Ollama /api/show, capped at OLLAMA_CONTEXT_LENGTH"


def test_ollama_model_file_smaller_than_the_default_is_taken_as_it_is(server):
    server.ollama_files = {"tiny:latest": 2048}
    provider = create_provider("ollama", "tiny", server.base_url)
    assert provider.served_window() == 2048
    assert provider.served_window_source == "Ollama /api/show context_length"


def test_openai_provider_pointed_at_ollama_reads_its_window_without_loading_a_model(server):
    server.ollama_available = {"qwen3:8b": 40960}
    server.ollama_files = {"qwen3:8b": 40960}
    server.models = [{"id": "qwen3:8b", "object": "model", "owned_by": "library"}]
    provider = openai_at(server, "qwen3:8b")
    assert provider.served_window() == 4096
    assert server.requests_to("/api/generate") == []


# --- never raising, asking once -------------------------------------------------------------------
def test_an_unreachable_server_gives_no_window_and_is_asked_again_later(no_network):
    port = free_port()
    provider = create_provider("openai", "m", f"http://127.0.0.1:{port}/v1")
    assert provider.served_window() is None
    attempts = len(no_network)
    assert attempts >= 1
    create_provider("openai", "m", f"http://127.0.0.1:{port}/v1").served_window()
    assert len(no_network) == 2 * attempts  # not remembered: it may have been started since


def test_an_unreachable_server_is_asked_one_question_only(no_network):
    create_provider("openai", "m", f"http://127.0.0.1:{free_port()}/v1").served_window()
    assert len(no_network) == 1


def test_an_answer_is_remembered_per_base_url_and_model(server):
    server.as_llama_cpp(4096)
    assert openai_at(server, SMOLLM2).served_window() == 4096
    asked = len(server.requests)
    assert openai_at(server, SMOLLM2).served_window() == 4096
    assert len(server.requests) == asked
    openai_at(server, "other").served_window()
    assert len(server.requests) > asked


@pytest.mark.parametrize("props", [
    {"default_generation_settings": {"n_ctx": "4096"}},
    {"default_generation_settings": {"n_ctx": -1}},
    {"default_generation_settings": None},
    {"default_generation_settings": {"n_ctx": True}},
    [],
])
def test_nonsense_answers_give_no_window(server, props):
    server.props = props
    assert openai_at(server).served_window() is None


def test_a_model_list_that_is_not_json_gives_no_window(server):
    server.models = None
    assert probe.served_window(server.base_url, "m") is None
    assert probe.server_models(server.base_url) == []


@pytest.mark.parametrize("url, local", [
    ("http://127.0.0.1:8080/v1", True), ("http://localhost:11434/v1", True), ("http://[::1]:8080", True),
    ("http://10.1.2.3:8000/v1", True), ("http://172.20.0.5/v1", True), ("http://192.168.1.20:1234/v1", True),
    ("http://172.32.0.1/v1", False), ("https://api.openai.com/v1", False), ("https://openrouter.ai/api/v1", False),
    ("http://8.8.8.8/v1", False), ("http://gpu-box:8080/v1", False),
])
def test_local_addresses(url, local):
    assert probe.is_local_address(url) is local
    # A server of one's own shares its cores and KV cache: one request at a time.
    assert probe.serves_concurrently(url) is not local


def test_server_root_drops_only_a_trailing_v1():
    assert probe.server_root("http://h:8080/v1/") == "http://h:8080"
    assert probe.server_root("http://h/api/v1") == "http://h/api"
    assert probe.server_root("http://h:8080") == "http://h:8080"


# --- no --model: the server's own model -------------------------------------------------------------
def test_without_a_model_the_servers_only_model_is_used_and_said_once(server):
    server.as_llama_cpp(4096)
    server.enqueue(Reply(text="hi"))
    channel = Notices()
    provider = create_provider("openai", base_url=server.base_url, timeout=2, max_retries=0, say=channel.say)
    assert provider.model == SMOLLM2
    assert channel.take() == [
        f"No --model given: using {SMOLLM2}, the only model that {server.base_url} lists."]
    stream_all(provider, ask(max_tokens=256))
    assert server.requests_to("/v1/chat/completions")[0].body["model"] == SMOLLM2


def test_without_a_model_a_local_server_with_several_models_gives_its_first(server):
    server.models = [{"id": "qwen3:8b"}, {"id": "llama3.2:latest"}]
    channel = Notices()
    provider = create_provider("openai", base_url=server.base_url, say=channel.say)
    assert provider.model == "qwen3:8b"
    assert "the first of 2 models" in channel.take()[0]


def test_without_a_model_the_anthropic_provider_asks_a_local_server_too(anthropic_server):
    anthropic_server.as_llama_cpp(4096)
    anthropic_server.enqueue(Reply(text="hi"))
    channel = Notices()
    provider = create_provider("anthropic", base_url=anthropic_server.base_url, timeout=2, max_retries=0,
                               say=channel.say)
    assert provider.model == SMOLLM2 and len(channel.take()) == 1
    stream_all(provider, ask(max_tokens=256))
    assert anthropic_server.requests_to("/v1/messages")[0].body["model"] == SMOLLM2


def test_a_server_that_lists_no_models_keeps_the_default_model_and_says_nothing(server):
    server.models = None
    channel = Notices()
    assert create_provider("openai", base_url=server.base_url, say=channel.say).model == DEFAULT_MODELS["openai"]
    assert channel.take() == []


def test_a_named_model_is_never_replaced_and_the_list_not_asked(server):
    server.as_llama_cpp(4096)
    channel = Notices()
    assert create_provider("openai", "my-alias", server.base_url, say=channel.say).model == "my-alias"
    assert server.requests == [] and channel.take() == []


def test_a_model_id_with_control_characters_is_not_taken(server):
    server.models = [{"id": "evil\x1b]0;pwned\x07"}]
    assert create_provider("openai", base_url=server.base_url).model == DEFAULT_MODELS["openai"]


# --- keys -------------------------------------------------------------------------------------------
def test_a_loopback_openai_compatible_server_needs_no_key(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    server.enqueue(Reply(text="no key needed"))
    _, message = stream_all(create_provider("openai", "m", server.base_url, max_retries=0), ask())
    assert message.text == "no key needed"
    assert server.requests_to("/v1/chat/completions")[0].headers["authorization"] == f"Bearer {LOCAL_PLACEHOLDER_KEY}"


def test_a_loopback_server_named_by_openai_base_url_needs_no_key(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.enqueue(Reply(text="via env"))
    assert stream_all(create_provider("openai", "m", max_retries=0), ask())[1].text == "via env"


def test_a_loopback_anthropic_compatible_server_needs_no_key(anthropic_server, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.base_url)
    anthropic_server.enqueue(Reply(text="no key needed"))
    _, message = stream_all(create_provider("anthropic", "m", max_retries=0), ask())
    assert message.text == "no key needed"
    headers = anthropic_server.requests_to("/v1/messages")[0].headers
    sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert sent == LOCAL_PLACEHOLDER_KEY


def test_a_set_key_is_sent_to_a_local_server_as_it_is(server):
    server.enqueue(Reply(text="hi"))
    stream_all(create_provider("openai", "m", server.base_url, max_retries=0), ask())
    assert server.requests_to("/v1/chat/completions")[0].headers["authorization"] == "Bearer sk-test"


def test_a_private_network_server_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    assert create_provider("openai", "m", "http://192.168.1.20:8080/v1").model == "m"  # built, nothing sent


@pytest.mark.parametrize("provider, url, variable", [
    ("openai", "https://openrouter.ai/api/v1", "OPENAI_API_KEY"),
    ("openai", "http://gpu-box.example.com:8000/v1", "OPENAI_API_KEY"),
    ("anthropic", "https://gateway.example.com/anthropic", "ANTHROPIC_API_KEY"),
])
def test_a_hosted_base_url_still_asks_for_a_key(monkeypatch, tmp_path, provider, url, variable, no_network):
    monkeypatch.setenv("HOME", str(tmp_path))  # no SDK credentials profile
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(AuthenticationError) as caught:
        create_provider(provider, "m", url)
    assert str(caught.value) == f"no API key for {provider}: set {variable} or pass --provider demo."
    assert no_network == []


@pytest.mark.parametrize("variables, chosen", [
    ({"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"}, "anthropic"),
    ({"ANTHROPIC_AUTH_TOKEN": "t"}, "anthropic"),
    ({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, "openai"),
    ({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9090"}, "openai"),
    ({}, "demo"),
])
def test_a_server_address_alone_chooses_the_provider(monkeypatch, variables, chosen):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert choose_provider(Options()) == chosen


# --- end to end: a keyless llama.cpp server, no --model -------------------------------------------
def test_a_keyless_start_without_a_model_takes_the_servers_model_and_window(server, monkeypatch, workspace):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    server.as_llama_cpp(4096, n_ctx_train=8192)
    server.enqueue(Reply(text="hello"))
    agent = build_agent(Options(base_url=server.base_url, workspace=workspace), approve_all)
    assert choose_provider(Options(base_url=server.base_url)) == "openai"
    assert agent.provider.model == SMOLLM2
    assert agent.budget.window == 4096
    assert agent.provider.served_window_source == "llama.cpp /props n_ctx"
    assert agent.run_turn("hi").text == "hello"
    assert server.requests_to("/v1/chat/completions")[0].body["model"] == SMOLLM2


def test_a_keyless_print_mode_start_through_the_cli(server, workspace):
    server.as_llama_cpp(4096, slots=2, unified=True, n_ctx_train=8192)
    server.enqueue(Reply(text="hello"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEAGENT_", "OPENAI_", "ANTHROPIC_"))}
    completed = subprocess.run([sys.executable, "-m", "mini_letta", "-p", "hi", "--base-url", server.base_url,
                                "--output-format", "json"], cwd=workspace, env=env, capture_output=True, text=True,
                               timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["context"]["window"] == 4096
    assert f"using {SMOLLM2}" in completed.stderr
