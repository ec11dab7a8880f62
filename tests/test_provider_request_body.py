"""Each provider sends the request body it built, as built: no SDK walks the messages per call.

That walk (OpenAI's ``maybe_transform``, Anthropic's ``prepare_request_data``) is pure Python over
every message of every request, 20-40 times a ``json.dumps`` of the same body in a long session
(``python -m benchmarks.bench_turn``). Both providers post their bytes over httpx2 without an SDK:
a fresh process that sends a request through either never imports one. Only an Anthropic
credentials profile (no key) goes through the Anthropic SDK's ``post``: the guard below makes the
SDK's walk raise when it is handed a body with messages in it. The requests go over real HTTP to
the fake servers either way.
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
from fakes.responses_server import FakeResponsesServer

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


FAKES = {"openai": FakeOpenAIServer, "openai-responses": FakeResponsesServer, "anthropic": FakeAnthropicServer}


@pytest.fixture(params=list(FAKES))
def served(request, monkeypatch):
    """(provider name, fake server) for each API."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FAKES[request.param]() as server:
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


_THROUGH_PROVIDER = """
    import sys
    from fakes import Reply, ask, stream_all
    from fakes.anthropic_server import FakeAnthropicServer
    from fakes.openai_server import FakeOpenAIServer
    from fakes.responses_server import FakeResponsesServer
    from mini_letta.providers import create_provider
    fakes = {"openai": FakeOpenAIServer, "openai-responses": FakeResponsesServer, "anthropic": FakeAnthropicServer}
    with fakes[NAME]() as server:
        server.enqueue(Reply(text="sent", tool_calls=[("call_1", "read_file", '{"path": "a"}')]))
        _, message = stream_all(create_provider(NAME, "m", server.base_url, max_retries=0), ask())
    sdks = [name for name in ("openai", "anthropic", "pydantic") if name in sys.modules]
    print(message.text, [c.name for c in message.tool_calls], sdks, "httpx2" in sys.modules)
"""


@pytest.mark.parametrize("name", ["openai", "openai-responses", "anthropic"])
def test_a_provider_sends_and_reads_a_reply_without_importing_an_sdk(name):
    tests = Path(__file__).resolve().parent
    code = textwrap.dedent(_THROUGH_PROVIDER).replace("NAME", repr(name))
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tests,
                               env={**os.environ, "OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test",
                                    "PYTHONPATH": str(tests)})
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "sent ['read_file'] [] True\n"


def _credentials_profile(config_dir: Path, base_url: str, token: str) -> None:
    """A profile as the SDK's interactive login leaves one (its token rotated by someone else)."""
    (config_dir / "configs").mkdir(parents=True)
    (config_dir / "credentials").mkdir()
    (config_dir / "configs" / "work.json").write_text(json.dumps(
        {"authentication": {"type": "user_oauth"}, "base_url": base_url}))
    secret = config_dir / "credentials" / "work.json"
    secret.write_text(json.dumps({"access_token": token, "expires_at": 4_102_444_800}))
    secret.chmod(0o600)


def test_a_credentials_profile_is_sent_through_the_sdk_without_its_walk(no_sdk_walk, monkeypatch, tmp_path):
    with FakeAnthropicServer() as server:
        for variable in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "anthropic"))
        monkeypatch.setenv("ANTHROPIC_PROFILE", "work")
        _credentials_profile(tmp_path / "anthropic", server.base_url, "profile-token")
        provider = create_provider("anthropic", "model-test", max_retries=0)
        assert provider.base_url == server.base_url  # the profile's own address
        assert provider._client is not None  # the SDK's client, which alone reads profiles
        server.enqueue(Reply(text="from the profile"))
        request = _conversation()
        _, message = stream_all(provider, request)
        assert message.text == "from the profile"
        sent = server.requests[-1]
        assert sent.headers["authorization"] == "Bearer profile-token"
        assert sent.body == json.loads(json.dumps(provider.request_params(request, "model-test")))
        server.enqueue(Fault(400, "messages: this request is malformed"))
        with pytest.raises(ProviderError, match="malformed"):
            stream_all(provider, request)


def test_the_anthropic_headers_are_the_sdks(monkeypatch):
    from anthropic._constants import ANTHROPIC_API_VERSION

    from mini_letta.providers import anthropic_provider

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Team: tools\nX-Empty:\nno colon here")
    headers = create_provider("anthropic", "model-test", "http://127.0.0.1:9", max_retries=0)._headers()
    assert anthropic_provider.API_VERSION == ANTHROPIC_API_VERSION
    assert headers["anthropic-version"] == ANTHROPIC_API_VERSION
    assert headers["Authorization"] == "Bearer sk-ant-test"
    assert (headers["X-Team"], headers["X-Empty"]) == ("tools", "")
    assert "no colon here" not in " ".join(headers)


def test_a_provider_sends_its_body_as_built(served):
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


def test_errors_and_retries_come_through_as_before(served):
    name, server = served
    server.enqueue(Fault(500, headers={"retry-after-ms": "1"}), Reply(text="second time"))
    provider = create_provider(name, "model-test", server.base_url, max_retries=1)
    _, message = stream_all(provider, _conversation())
    assert message.text == "second time" and len(server.requests) == 2
    server.enqueue(Fault(400, "messages: this request is malformed"))
    with pytest.raises(ProviderError, match="malformed"):
        stream_all(create_provider(name, "model-test", server.base_url, max_retries=0), _conversation())
