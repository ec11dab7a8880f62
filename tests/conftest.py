"""Every test runs with its own user data folder, without the caller's provider settings, and
with connections off this machine refused (tests talk only to servers they start on 127.0.0.1)."""

import ipaddress
import os
import signal
import socket
from collections import Counter

import pytest

_CLEARED_PREFIXES = ("CODEAGENT_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MINI_LETTA_HOME", str(tmp_path / "home"))
    # Commands run as they did before the sandbox unless a test chooses one (tests/test_sandbox*.py).
    monkeypatch.setenv("MINI_LETTA_SANDBOX", "off")
    from mini_letta.providers import probe

    probe.forget()  # a fake server may reuse the port of an earlier test's
    yield


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
def spawn(tmp_path):
    """Start ``mini-letta *args`` in a pseudo-terminal (tests/pty_support.py), in a workspace with one
    file; ``env_extra`` is added to its environment."""
    from pty_support import start, stop, terminal_env

    children = []

    def spawn_repl(*args, env_extra=None, columns=120):
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        # Big enough that a summary of three reads is clearly smaller than the reads themselves.
        (workspace / "app.py").write_text("def main():\n    return 42\n" + "".join(
            f"\ndef helper_{n}(value):\n    return value * {n}\n" for n in range(120)))
        env = terminal_env(tmp_path / "home", LINES="40",
                           # A stand-in for $EDITOR: writes a new value into the file it is given.
                           EDITOR="""sh -c 'printf "The team runs pytest -q before every commit." > "$0"'""")
        env.pop("VISUAL", None)
        env.update(env_extra or {}, COLUMNS=str(columns))
        children.append(start(args, workspace, env, columns))
        return children[-1]

    yield spawn_repl
    stop(children)


@pytest.fixture
def bubblewrap():
    """Skip a test that needs the sandbox where bubblewrap cannot run; in CI
    (``MINI_LETTA_REAL_SERVER_REQUIRED=1``, where ``.ci/run`` installs it) fail it instead."""
    from mini_letta.toolbox.sandbox import unavailable_reason

    reason = unavailable_reason()
    if reason:
        if os.environ.get("MINI_LETTA_REAL_SERVER_REQUIRED") == "1":
            pytest.fail(f"the sandbox tests need bubblewrap: {reason}")
        pytest.skip(f"no sandbox here: {reason}")


@pytest.fixture
def server(request):
    """A fake OpenAI-compatible server on 127.0.0.1 (suites for other APIs define their own): Chat
    Completions, or the Responses API for a test marked ``@fakes.both_openai_apis``."""
    from fakes.openai_server import FakeOpenAIServer
    from fakes.responses_server import FakeResponsesServer

    with (FakeResponsesServer() if getattr(request, "param", "chat") == "responses" else FakeOpenAIServer()) as fake:
        yield fake


_figures: list[str] = []


@pytest.fixture
def report_figure():
    """Say a measured figure in the run's summary (the redaction corpus' recall, for one)."""
    return _figures.append


FAULT_MARKERS = {"fault": "fault-injection cases", "bad_input": "bad-input cases"}
_fault_cases: dict[str, Counter] = {}


def pytest_configure(config):
    # A shell without job control starts a background command with SIGINT ignored (POSIX), and
    # Python then never turns it into KeyboardInterrupt, in this process or in the mini-letta it
    # starts. The Ctrl-C tests need it delivered, however CI started the suite.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.addinivalue_line("markers", "fault: a fault-suite case that injects a fault (server, disk, process, signal)")
    config.addinivalue_line("markers", "bad_input: a fault-suite case that feeds bad input (model, user, environment)")


def pytest_runtest_logreport(report):
    """Count the fault suite's cases from what ran: one per test case (each parametrized case on its
    own), by marker and outcome; a case skipped before it ran is not counted."""
    if report.when == "call" or (report.when == "setup" and report.failed):
        for marker in FAULT_MARKERS:
            if marker in report.keywords:
                _fault_cases.setdefault(marker, Counter())[report.outcome] += 1


def pytest_terminal_summary(terminalreporter):
    """The fault suite's totals, when any of its cases ran."""
    parts = []
    for marker, label in FAULT_MARKERS.items():
        counts = _fault_cases.get(marker)
        if not counts:
            continue
        ran = counts["passed"] + counts["failed"]
        outcome = f"{counts['passed']} passed" + (f", {counts['failed']} failed" if counts["failed"] else "")
        parts.append(f"{ran} {label} ran ({outcome})")
    if parts:
        terminalreporter.write_line("fault suite: " + "; ".join(parts))
    for figure in _figures:
        terminalreporter.write_line(figure)


@pytest.fixture
def hostile():
    """A hostile server on 127.0.0.1 (tests/fakes/hostile.py): each test sets what it sends."""
    from fakes.hostile import HostileServer

    with HostileServer() as server:
        yield server


@pytest.fixture
def elsewhere():
    """Another hostile server, on 127.0.0.2: where a redirect would hand the key and the conversation."""
    from fakes.hostile import HostileServer

    with HostileServer("127.0.0.2") as server:
        yield server
