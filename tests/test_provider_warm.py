"""``warm()``: what a provider's SDK builds on its first reply is built at start-up, without a request."""

from __future__ import annotations

import subprocess
import sys

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
