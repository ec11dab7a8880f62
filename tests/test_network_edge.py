"""What a hostile server can make the client do: each attack of issue 45 against both providers and
the window probe, over real HTTP on loopback addresses (tests/fakes/hostile.py).

- No redirect to another origin is followed, by the probe's GETs or the reply's POST, so neither
  the key, nor a custom header, nor the conversation reaches the other server; one within the
  server's own origin still is.
- Each provider's probe sends only its own key header (a bearer token), never ``X-Api-Key``.
- A body read whole is capped after decompression (a gzip bomb labelled ``application/json``).
- A stream of keep-alive comments ends at the read timeout; a stream of real events at the reply
  deadline; events labelled ``text/plain`` are read.
- A base URL's ``user:password`` is in no error message.
"""

from __future__ import annotations

import json
import socket

import pytest
from fakes import ask, stream_all
from fakes.hostile import (HostileServer, events_as, gzip_bomb, json_answer, openai_events, pings_only,
                           redirect_to)

from mini_letta.errors import ProviderError
from mini_letta.providers.anthropic_provider import AnthropicProvider
from mini_letta.providers.openai_provider import OpenAIProvider
from mini_letta.settings import SETTINGS

SECRET = "sk-secret-0123456789"
COMPLETIONS = "/v1/chat/completions"
MESSAGES = "/v1/messages"
MIB = 1 << 20



def openai_at(server: HostileServer, timeout: float = 2) -> OpenAIProvider:
    return OpenAIProvider("m", base_url=server.root_url + "/v1", api_key=SECRET, timeout=timeout, max_retries=0)


def anthropic_at(server: HostileServer, timeout: float = 2) -> AnthropicProvider:
    return AnthropicProvider("m", base_url=server.root_url, api_key=SECRET, timeout=timeout, max_retries=0)


PROVIDERS = {"openai": openai_at, "anthropic": anthropic_at}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- redirects ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", PROVIDERS)
def test_the_probe_follows_no_redirect_to_another_server(hostile, elsewhere, name):
    hostile.on_any(redirect_to(elsewhere.root_url))
    provider = PROVIDERS[name](hostile)
    assert provider.served_window() is None
    assert provider.listed_models() == []
    assert len(hostile.requests) >= 4  # /v1/models, /props, /api/v0/models, /api/ps, /api/show ...
    assert elsewhere.requests == []


@pytest.mark.parametrize("name", PROVIDERS)
def test_the_probe_sends_only_the_providers_own_key_header(hostile, name):
    PROVIDERS[name](hostile).served_window()
    assert hostile.requests
    for seen in hostile.requests:
        assert seen.headers.get("authorization") == f"Bearer {SECRET}"
        assert "x-api-key" not in seen.headers


def test_the_probe_follows_a_redirect_within_its_own_server(hostile):
    hostile.on("/v1/models", redirect_to(hostile.root_url, 301, "/v2/models"))
    hostile.on("/v2/models", json_answer(200, {"data": [{"id": "m", "max_model_len": 12_345}]}))
    assert openai_at(hostile).served_window() == 12_345


@pytest.mark.parametrize("status", [307, 308, 302])
@pytest.mark.parametrize("name", PROVIDERS)
def test_a_reply_redirected_to_another_server_sends_it_nothing(hostile, elsewhere, monkeypatch, name, status):
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Team-Token: team-secret")
    hostile.on(COMPLETIONS if name == "openai" else MESSAGES, redirect_to(elsewhere.root_url, status))
    with pytest.raises(ProviderError) as caught:
        stream_all(PROVIDERS[name](hostile), ask("the whole conversation"))
    assert "redirected the request to http://127.0.0.2:" in str(caught.value)
    assert "not followed" in str(caught.value)
    assert elsewhere.requests == []  # no key, no custom header, no body went there


def test_a_post_redirected_within_its_server_is_sent_again_there(hostile):
    hostile.on(COMPLETIONS, redirect_to(hostile.root_url, 307, "/moved/chat/completions"))
    hostile.on("/moved/chat/completions", events_as("text/event-stream", openai_events("moved along")))
    _, message = stream_all(openai_at(hostile), ask("hello there"))
    assert message.text == "moved along"
    moved = [seen for seen in hostile.requests if seen.path == "/moved/chat/completions"]
    assert json.loads(moved[0].body)["messages"][-1]["content"] == "hello there"


# --- bounded bodies -------------------------------------------------------------------------------
@pytest.fixture
def small_cap(monkeypatch):
    monkeypatch.setattr(SETTINGS, "http_body_max_bytes", MIB)
    return MIB


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_gzip_bomb_labelled_json_is_read_no_further_than_the_cap(hostile, small_cap, name):
    hostile.on(COMPLETIONS if name == "openai" else MESSAGES, gzip_bomb(64 * MIB))
    with pytest.raises(ProviderError) as caught:
        stream_all(PROVIDERS[name](hostile), ask())
    assert "larger than 1 MiB" in str(caught.value)


def test_an_error_body_is_read_no_further_than_the_cap(hostile, small_cap):
    hostile.on(COMPLETIONS, gzip_bomb(64 * MIB, status=400))
    with pytest.raises(ProviderError) as caught:
        stream_all(openai_at(hostile), ask())
    assert "(HTTP 400): an error body larger than 1 MiB" in str(caught.value)


def test_a_probe_answer_over_the_cap_is_no_answer(hostile, small_cap):
    # Valid JSON naming a window, inflated past the cap: read whole, it would be believed.
    hostile.on("/v1/models", gzip_bomb(8 * MIB, start=b'{"data": [{"id": "m", "max_model_len": 4096}], "pad": "',
                                       end=b'"}'))
    assert openai_at(hostile).served_window() is None


def test_an_event_over_its_cap_ends_the_reply(hostile, monkeypatch):
    monkeypatch.setattr(SETTINGS, "http_event_max_bytes", 64 * 1024)
    hostile.on(COMPLETIONS, events_as("text/event-stream", [b"data: " + b"x" * (256 * 1024) + b"\n\n"]))
    with pytest.raises(ProviderError) as caught:
        stream_all(openai_at(hostile), ask())
    assert "an event of the stream larger than 64 KiB" in str(caught.value)


# --- deadlines --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, ping", [("openai", b": ping\n\n"), ("anthropic", b": ping\n\n"),
                                        ("anthropic", b'event: ping\ndata: {"type": "ping"}\n\n')])
def test_a_stream_of_keep_alives_ends_at_the_read_timeout(hostile, name, ping):
    # 100 pings 50 ms apart: 5 s of a stream that never says anything, with a 1 s timeout.
    hostile.on(COMPLETIONS if name == "openai" else MESSAGES, pings_only(0.05, 100, ping))
    provider = PROVIDERS[name](hostile, timeout=1)
    with pytest.raises(ProviderError) as caught:
        stream_all(provider, ask())
    assert "no event for 1 s, only keep-alive comments (MINI_LETTA_TIMEOUT sets the limit)" in str(caught.value)


def test_a_reply_that_outlives_the_reply_deadline_ends(hostile, monkeypatch):
    monkeypatch.setenv("MINI_LETTA_REPLY_DEADLINE", "1")
    # Real events, 50 ms apart, for 5 s: each read is quick, only the whole reply is too long.
    hostile.on(COMPLETIONS, events_as("text/event-stream", openai_events("x" * 100, 100), every=0.05))
    with pytest.raises(ProviderError) as caught:
        stream_all(openai_at(hostile), ask())
    assert "reply deadline (MINI_LETTA_REPLY_DEADLINE sets the limit)" in str(caught.value)


def test_events_labelled_text_plain_are_read(hostile):
    hostile.on(COMPLETIONS, events_as("text/plain; charset=utf-8", openai_events("read anyway", 3)))
    _, message = stream_all(openai_at(hostile), ask())
    assert message.text == "read anyway"


# --- userinfo --------------------------------------------------------------------------------------
def test_a_base_urls_password_is_in_no_error():
    url = f"http://alice:hunter2-secret@127.0.0.1:{free_port()}/v1"
    provider = OpenAIProvider("m", base_url=url, api_key=SECRET, timeout=2, max_retries=0)
    with pytest.raises(ProviderError) as caught:
        stream_all(provider, ask())
    assert "could not reach openai at http://***@127.0.0.1:" in str(caught.value)
    assert "hunter2" not in str(caught.value) and "alice" not in str(caught.value)


def test_a_redirect_error_masks_the_userinfo_of_both_addresses(hostile, elsewhere):
    hostile.on(COMPLETIONS, lambda handler, seen: handler.head(
        307, {"location": f"http://bob:pw-in-location@127.0.0.2:{elsewhere.root_url.rsplit(':', 1)[1]}/x",
              "content-length": "0"}))
    url = hostile.root_url.replace("http://", "http://alice:hunter2-secret@") + "/v1"
    provider = OpenAIProvider("m", base_url=url, api_key=SECRET, timeout=2, max_retries=0)
    with pytest.raises(ProviderError) as caught:
        stream_all(provider, ask())
    text = str(caught.value)
    assert "at http://***@127.0.0.1:" in text and "to http://***@127.0.0.2:" in text
    assert "hunter2" not in text and "pw-in-location" not in text
