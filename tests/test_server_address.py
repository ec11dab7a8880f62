"""A server that is really there: an address that does not parse, or where nothing answers, is
named with the reason, never replaced by a hosted model's name and window; a refused connection
on this machine fails at once instead of being retried."""

from __future__ import annotations

import socket

import pytest
from fakes import ask

from mini_letta.errors import ConfigError, ProviderError
from mini_letta.providers import create_provider
from mini_letta.providers.base import Retrying


def _closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("url", ["notaurl", "localhost:8080", "http://", "ftp://host/v1",
                                 "http://localhost:99999/v1", "http://localhost:port/v1"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_address_that_does_not_parse_is_named(url, provider):
    with pytest.raises(ConfigError, match=rf"--base-url '{url}' is not a server address"):
        create_provider(provider, "m", url)


@pytest.mark.parametrize(("provider", "variable"), [("openai", "OPENAI_BASE_URL"),
                                                    ("anthropic", "ANTHROPIC_BASE_URL")])
def test_the_sdk_variable_is_checked_too_and_named(monkeypatch, provider, variable):
    monkeypatch.setenv(variable, "localhost:8080")
    with pytest.raises(ConfigError, match=f"{variable} 'localhost:8080' is not a server address"):
        create_provider(provider, "m")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_nothing_listening_without_a_model_is_said_not_taken_for_a_hosted_model(provider):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(ConfigError, match=rf"nothing answers at {url} \(connection refused\): start the server"):
        create_provider(provider, None, url)


def test_a_refused_connection_on_this_machine_is_not_retried():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    provider = create_provider("openai", "m", url, timeout=2, max_retries=2)
    events = []
    with pytest.raises(ProviderError, match="nothing is listening there") as caught:
        for event in provider.stream(ask()):
            events.append(event)
    assert not [e for e in events if isinstance(e, Retrying)]  # no wait: it fails at once
    assert not caught.value.retryable


def test_a_server_that_answers_without_a_model_list_is_still_used(server):
    # It answered (/v1/models is a 404 here): it is there, so no error; the request names the default.
    provider = create_provider("openai", None, server.base_url)
    assert provider.model == "gpt-4.1"
