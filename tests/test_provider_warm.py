"""``warm()``: what the Anthropic SDK builds on its first reply is built at start-up, without a request.

The OpenAI provider has no ``warm``: it reads its reply as plain JSON, with nothing to build.
"""

from __future__ import annotations

import threading
import time

from fakes import Reply, ask, stream_all
from fakes.anthropic_server import FakeAnthropicServer

from mini_letta.providers import create_provider


def test_warming_sends_nothing_and_the_first_reply_is_read_as_before(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeAnthropicServer() as server:
        provider = create_provider("anthropic", "model-test", server.base_url, max_retries=0)
        before = len(server.requests)
        provider.warm()
        assert len(server.requests) == before
        server.enqueue(Reply(text="first reply", tool_calls=[("call_1", "read_file", '{"path": "a"}')]))
        _, message = stream_all(provider, ask())
        assert message.text == "first reply" and [c.id for c in message.tool_calls] == ["call_1"]


def test_a_reply_is_read_after_a_warm_up_under_way_the_request_sent_before_it(monkeypatch):
    # The REPL hands the agent over before its start-up thread warms the provider: the first
    # request may go out during the warm-up, and its reply must not build the SDK's models at the
    # same time (pydantic's building is not thread-safe).
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeAnthropicServer() as server:
        provider = create_provider("anthropic", "model-test", server.base_url, max_retries=0)
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
