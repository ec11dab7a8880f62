"""Each provider sends the request body it built, as built: no SDK walks the messages per call.

That walk (OpenAI's ``maybe_transform``, Anthropic's ``prepare_request_data``) is pure Python over
every message of every request, 20-40 times a ``json.dumps`` of the same body in a long session
(``python -m benchmarks.bench_turn``). The Anthropic provider posts bytes through its SDK: the
guard below makes the SDK's walk raise when it is handed a body with messages in it. The OpenAI
provider has no SDK at all: a fresh process that sends a request through it never imports
``openai``. The requests go over real HTTP to the fake servers either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anthropic
import anthropic._utils._prepare as anthropic_prepare
import pytest
from fakes import Fault, Reply, stream_all
from fakes.anthropic_server import FakeAnthropicServer
from fakes.openai_server import FakeOpenAIServer

from mini_letta.errors import ProviderError
from mini_letta.messages import Message, ToolCall, ToolSpec
from mini_letta.providers import create_provider
from mini_letta.providers.base import Request

READ_FILE = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


class SdkWalkedMessages(AssertionError):
    pass


def _refuse_message_bodies(original):
    def guarded(data, *args, **kwargs):
        if isinstance(data, dict) and "messages" in data:
            raise SdkWalkedMessages(f"the SDK walked a request body through {original.__name__}")
        return original(data, *args, **kwargs)

    return guarded


@pytest.fixture
def no_sdk_walk(monkeypatch):
    """The Anthropic SDK's walk over request bodies raises when given one that holds messages."""
    monkeypatch.setattr(anthropic_prepare, "copy_tree", _refuse_message_bodies(anthropic_prepare.copy_tree))


@pytest.fixture(params=["openai", "anthropic"])
def served(request, monkeypatch):
    """(provider name, fake server) for each API."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    server_class = FakeOpenAIServer if request.param == "openai" else FakeAnthropicServer
    with server_class() as server:
        yield request.param, server


def _conversation() -> Request:
    call = ToolCall("call_1", "read_file", '{"path": "é.py"}')
    messages = [Message.user("Read é.py — please"), Message.assistant("Reading.", [call]),
                Message.tool_result(call, "print('héllo')\n"), Message.user("and now?")]
    return Request(system="You are terse.", messages=messages, tools=[READ_FILE], max_tokens=300)


def test_the_guard_catches_the_sdks_own_typed_method(no_sdk_walk):
    """Without this, a renamed SDK internal would leave the next tests guarding nothing."""
    with FakeAnthropicServer() as server:
        server.enqueue(Reply(text="ok"))
        client = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        with pytest.raises(SdkWalkedMessages):
            client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}],
                                   stream=True)


_THROUGH_OPENAI = """
    import sys
    from fakes import Reply, ask, stream_all
    from fakes.openai_server import FakeOpenAIServer
    from mini_letta.providers import create_provider
    with FakeOpenAIServer() as server:
        server.enqueue(Reply(text="sent", tool_calls=[("call_1", "read_file", '{"path": "a"}')]))
        _, message = stream_all(create_provider("openai", "m", server.base_url, max_retries=0), ask())
    print(message.text, [c.name for c in message.tool_calls], "openai" in sys.modules, "httpx2" in sys.modules)
"""


def test_the_openai_provider_sends_and_reads_a_reply_without_importing_the_sdk():
    tests = Path(__file__).resolve().parent
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent(_THROUGH_OPENAI)], capture_output=True,
                               text=True, timeout=120, cwd=tests,
                               env={**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(tests)})
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "sent ['read_file'] False True\n"


def test_a_provider_sends_its_body_without_the_sdk_walking_the_messages(no_sdk_walk, served):
    name, server = served
    server.enqueue(Reply(text="Done reading.", tool_calls=[("call_2", "read_file", '{"path": "b.py"}')]))
    provider = create_provider(name, "model-test", server.base_url, max_retries=0)
    request = _conversation()
    _, message = stream_all(provider, request)
    assert message.text == "Done reading." and [c.name for c in message.tool_calls] == ["read_file"]
    assert message.usage is not None and message.usage.input_tokens > 0
    sent = server.requests[-1]
    # The body on the wire is the provider's own, key for key, non-ASCII text as UTF-8.
    assert sent.body == json.loads(json.dumps(provider.request_params(request, "model-test")))
    assert sent.headers["content-type"] == "application/json"
    texts = json.dumps(sent.body, ensure_ascii=False)
    assert "Read é.py — please" in texts and "print('héllo')" in texts


def test_errors_and_retries_come_through_as_before(no_sdk_walk, served):
    name, server = served
    server.enqueue(Fault(500, headers={"retry-after-ms": "1"}), Reply(text="second time"))
    provider = create_provider(name, "model-test", server.base_url, max_retries=1)
    _, message = stream_all(provider, _conversation())
    assert message.text == "second time" and len(server.requests) == 2
    server.enqueue(Fault(400, "messages: this request is malformed"))
    with pytest.raises(ProviderError, match="malformed"):
        stream_all(create_provider(name, "model-test", server.base_url, max_retries=0), _conversation())
