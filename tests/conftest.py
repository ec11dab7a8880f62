"""Every test runs with its own user data folder, without the caller's provider settings, and
with connections off this machine refused (tests talk only to servers they start on 127.0.0.1)."""

import ipaddress
import os
import socket

import pytest

_CLEARED_PREFIXES = ("CODEAGENT_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MINI_LETTA_HOME", str(tmp_path / "home"))
    from mini_letta import config
    from mini_letta.providers import probe

    config.take_notices()
    probe.forget()  # a fake server may reuse the port of an earlier test's
    yield
    config.take_notices()


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Fail any in-process connection that leaves this machine; the attempts are returned."""
    attempts = []
    real_connect = socket.socket.connect

    def guarded_connect(sock, address):
        attempts.append(address)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
                raise AssertionError(f"network access attempted: {address}")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    return attempts


@pytest.fixture
def workspace(tmp_path):
    """An empty project folder for the agent to work in."""
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def server():
    """A fake OpenAI-compatible server on 127.0.0.1 (suites for other APIs define their own)."""
    from fakes.openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as fake:
        yield fake


def pytest_terminal_summary(terminalreporter):
    """The fault suite's totals (tests/fault_support.py), when any of its tests ran."""
    import sys

    support = sys.modules.get("fault_support")
    if support is not None and support.TALLY:
        counts = ", ".join(f"{count} {kind}" for kind, count in sorted(support.TALLY.items()))
        terminalreporter.write_line(f"fault suite: {counts}")
