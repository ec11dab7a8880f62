"""Retries happen in our code (providers/retry.py), each one reported before its wait."""

import email.utils
import time

import pytest
from fakes import Fault, Reply, ask, stream_all

from mini_letta.errors import ContextOverflowError, ProviderError
from mini_letta.providers import create_provider
from mini_letta.providers.base import Retrying, TextDelta
from mini_letta.providers.retry import reason, retry_after, with_retries


@pytest.mark.parametrize("headers, seconds", [
    ({"retry-after-ms": "1500"}, 1.5),
    ({"retry-after": "2"}, 2.0),
    ({"retry-after": "in 30 s, as an HTTP date"}, 30.0),
    ({"retry-after": "600"}, None),  # over a minute: back off on our own instead
    ({"retry-after": "soon"}, None),
    ({}, None),
])
def test_retry_after_reads_the_servers_wait_in_both_forms(headers, seconds):
    if headers.get("retry-after", "").endswith("HTTP date"):  # made now: collection ran long before
        headers = {"retry-after": email.utils.formatdate(time.time() + 30, usegmt=True)}
    found = retry_after(headers)
    assert found == pytest.approx(seconds, abs=1.5) if seconds is not None else found is None


def test_each_retry_is_an_event_before_its_wait_and_the_sdk_itself_does_not_retry(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    provider = create_provider("openai", "gpt-test", server.base_url, timeout=2, max_retries=2)
    server.enqueue(Fault(500, "boom", headers={"retry-after-ms": "10"}),
                   Fault(503, "busy", headers={"retry-after-ms": "10"}), Reply(text="ok"))
    events, message = stream_all(provider, ask())
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [r.describe() for r in retries] == ["server error 500, retrying in 0.0 s (1/2)",
                                               "server error 503, retrying in 0.0 s (2/2)"]
    assert message.text == "ok" and len(server.requests_to("/v1/chat/completions")) == 3


def test_a_reply_that_broke_off_is_not_sent_again():
    sent = []

    def attempt():
        sent.append(1)
        yield TextDelta("half a rep")
        raise ProviderError("broke off", retryable=True)

    with pytest.raises(ProviderError):
        list(with_retries(attempt, 2, sleep=lambda s: None))
    assert len(sent) == 1


def test_overflow_is_never_retried_as_is():
    sent = []

    def attempt():
        sent.append(1)
        error = ContextOverflowError("too long", status=400)
        # Even marked retryable (a 5xx-looking overflow from a proxy): the same request would fail again.
        error.retryable = True
        error.before_reply = True
        raise error
        yield

    with pytest.raises(ContextOverflowError):
        list(with_retries(attempt, 3, sleep=lambda s: None))
    assert len(sent) == 1


@pytest.mark.parametrize("error, words", [
    (ProviderError("rate limited by openai: slow; wait", status=429, retryable=True), "rate limited (429)"),
    (ProviderError("server error from openai (HTTP 502): x", status=502, retryable=True), "server error 502"),
    (ProviderError("openai timed out after 120 s waiting for a reply; try again.", retryable=True),
     "openai timed out after 120 s waiting for a reply"),
    (ProviderError("could not reach openai at http://x (refused): check", retryable=True), "could not reach openai at http://x"),
])
def test_the_retry_reason_is_a_few_words(error, words):
    assert reason(error) == words
