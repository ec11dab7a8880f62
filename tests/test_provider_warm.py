"""``warm()``: what a provider's SDK builds on its first reply is built at start-up, without a request."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
from fakes import Reply, ask, stream_all
from fakes.anthropic_server import FakeAnthropicServer
from fakes.openai_server import FakeOpenAIServer

from mini_letta.providers import create_provider

_FRESH_OPENAI = """
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import ChoiceDelta
from mini_letta.providers.openai_provider import OpenAIProvider
models = (ChatCompletionChunk, ChoiceDelta)
before = [m.__pydantic_complete__ for m in models]
OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", api_key="k").warm()
print(before, [m.__pydantic_complete__ for m in models])
"""


def test_warming_the_openai_provider_completes_the_sdks_reply_models_in_a_fresh_process():
    completed = subprocess.run([sys.executable, "-c", _FRESH_OPENAI], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "[False, False] [True, True]\n"


@pytest.mark.parametrize("name, server_class", [("openai", FakeOpenAIServer), ("anthropic", FakeAnthropicServer)])
def test_warming_sends_nothing_and_the_first_reply_is_read_as_before(name, server_class, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with server_class() as server:
        provider = create_provider(name, "model-test", server.base_url, max_retries=0)
        before = len(server.requests)
        provider.warm()
        assert len(server.requests) == before
        server.enqueue(Reply(text="first reply", tool_calls=[("call_1", "read_file", '{"path": "a"}')]))
        _, message = stream_all(provider, ask())
        assert message.text == "first reply" and [c.id for c in message.tool_calls] == ["call_1"]


@pytest.mark.parametrize("name, server_class", [("openai", FakeOpenAIServer), ("anthropic", FakeAnthropicServer)])
def test_a_reply_is_read_after_a_warm_up_under_way_the_request_sent_before_it(name, server_class, monkeypatch):
    # The REPL hands the agent over before its start-up thread warms the provider: the first
    # request may go out during the warm-up, and its reply must not build the SDK's models at the
    # same time (pydantic's building is not thread-safe).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with server_class() as server:
        provider = create_provider(name, "model-test", server.base_url, max_retries=0)
        server.enqueue(Reply(text="first reply"))
        results = []
        with provider._warming:  # as a warm-up in another thread holds it
            reader = threading.Thread(target=lambda: results.append(stream_all(provider, ask())[1]))
            reader.start()
            deadline = time.monotonic() + 30
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(server.requests) == 1  # sent without waiting for the warm-up
            reader.join(0.3)
            assert reader.is_alive() and results == []  # but not read while it runs
        reader.join(30)
        assert [message.text for message in results] == ["first reply"]
