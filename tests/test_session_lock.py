"""One writer per session (issue 21, item 2): a second process asking for a session that is open is
refused or forks it, never appends; a file two processes already interleaved loads as a valid history."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from fakes import Reply
from fakes.anthropic_server import FakeAnthropicServer
from fakes.openai_server import FakeOpenAIServer
from fault_support import cli, cli_env, error_lines, wait_dead
from mini_letta.errors import ProviderError, SessionError
from mini_letta.messages import Message, ToolCall, validity_problems
from mini_letta.providers.anthropic_provider import AnthropicProvider
from mini_letta.providers.base import Request
from mini_letta.providers.openai_provider import OpenAIProvider
from mini_letta.repl.session_busy import choose
from mini_letta.sessions.store import SessionWriter, load_session
from mini_letta.sessions.lock import SessionBusyError, acquire, lock_path

ANTHROPIC = ["--provider", "anthropic", "--model", "claude-sonnet-4-5"]
ENDPOINT = "/v1/messages"


def wait_for(condition, what: str, seconds: float = 30):
    """Poll until ``condition()``; a guard against a hung test, not a timing assertion."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def session_path(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user("first", seq=1))
    writer.close()
    return writer.path


# --- the lock --------------------------------------------------------------------------------------
def test_a_second_writer_is_refused_with_the_holders_pid_and_since_when(session_path):
    first = SessionWriter.open_existing(session_path)
    with pytest.raises(SessionBusyError) as busy:
        SessionWriter.open_existing(session_path)
    message = str(busy.value)
    assert message.startswith(f"Session {session_path.stem} is open in another mini-letta process (pid {os.getpid()}, "
                              "open since ")
    assert "--fork-session" in message and "\n" not in message
    first.append_message(Message.assistant("only one writer", seq=2))
    first.close()
    assert not lock_path(session_path).exists()  # a clean close leaves no lock file behind
    SessionWriter.open_existing(session_path).close()


HOLD_LOCK = """
import sys
from mini_letta.sessions.lock import acquire
lock = acquire(sys.argv[1])
print("locked", flush=True)
sys.stdin.readline()
"""


def test_the_os_releases_the_lock_of_a_process_that_dies(session_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(session_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(SessionBusyError, match=f"pid {holder.pid}"):
        acquire(session_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert wait_dead(holder.pid)
    acquire(session_path).release()  # the lock file is still there, but nobody holds it


def test_a_new_session_is_locked_until_it_is_closed(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    with pytest.raises(SessionBusyError):
        acquire(writer.path)
    writer.close()
    acquire(writer.path).release()


# --- the REPL's choice -----------------------------------------------------------------------------
def _busy(session_path) -> tuple:
    held = acquire(session_path)
    with pytest.raises(SessionBusyError) as busy:
        acquire(session_path)
    return held, busy.value


def test_the_repl_choice_fork(session_path):
    held, busy = _busy(session_path)
    out = StringIO()
    choice = choose(Console(file=out, width=200), busy, ask=lambda prompt: "f")
    assert choice.fork and choice.lock is None
    assert "is open in another mini-letta process (pid" in out.getvalue()
    held.release()


def test_the_repl_choice_wait_says_it_waits_and_gets_the_lock_once_it_is_free(session_path):
    held, busy = _busy(session_path)
    out = StringIO()
    # The holder closes the session once the waiting is on screen.
    closer = threading.Thread(target=lambda: (wait_for(lambda: "Waiting for" in out.getvalue(), "waiting"),
                                              held.release()))
    closer.start()
    choice = choose(Console(file=out, width=200), busy, ask=lambda prompt: "w")
    closer.join()
    assert "Ctrl-C stops waiting" in out.getvalue()
    assert not choice.fork and choice.lock is not None
    with pytest.raises(SessionBusyError):
        acquire(session_path)  # this process holds it now
    choice.lock.release()


def test_the_repl_choice_can_be_cancelled(session_path):
    held, busy = _busy(session_path)
    answers = iter(["maybe", ""])  # an unknown answer asks again; Enter cancels
    assert choose(Console(file=StringIO()), busy, ask=lambda prompt: next(answers)) is None
    held.release()


# --- two real processes on one session --------------------------------------------------------------
def _popen(args, home, cwd, server):
    # The held step lasts as long as the test needs: the suite's 1.5 s read timeout would end it.
    env = cli_env(home, {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.root_url,
                         "MINI_LETTA_TIMEOUT": "120"})
    return subprocess.Popen([sys.executable, "-m", "mini_letta", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(args, home, cwd, server):
    return cli(args, home=home, cwd=cwd, env={"ANTHROPIC_API_KEY": "sk-ant-test",
                                              "ANTHROPIC_BASE_URL": server.root_url})


def test_a_second_process_is_refused_or_forks_and_the_session_stays_valid(home, workspace):
    (workspace / "notes.txt").write_text("the build uses make\n")
    with FakeAnthropicServer() as server:
        server.enqueue(Reply(text="Hello."))
        assert _run(["-p", "start", *ANTHROPIC], home, workspace, server).returncode == 0
        [original] = sorted((home / "sessions").glob("*.jsonl"))

        # The first process reads a file, then its next step is held until the test lets it go.
        step = threading.Event()
        server.enqueue(Reply(tool_calls=[("toolu_read", "read_file", json.dumps({"path": "notes.txt"}))]),
                       Reply(text="It uses make.", hold=step))
        first = _popen(["-c", "-p", "what does the build use?", *ANTHROPIC], home, workspace, server)
        wait_for(lambda: len(server.requests_to(ENDPOINT)) == 3, "the first process's held step")

        refused = _run(["-c", "-p", "something else", *ANTHROPIC], home, workspace, server)
        assert refused.returncode == 1
        [line] = error_lines(refused.stderr)
        assert line.startswith(f"mini-letta: Session {original.stem} is open in another mini-letta process "
                               f"(pid {first.pid}, open since ")
        assert "--fork-session" in line
        assert len(server.requests_to(ENDPOINT)) == 3  # nothing was sent

        server.enqueue(Reply(text="Forked reply."))
        forked = _run(["-c", "--fork-session", "-p", "something else", "--output-format", "json", *ANTHROPIC],
                      home, workspace, server)
        assert forked.returncode == 0, forked.stderr
        fork_id = json.loads(forked.stdout)["session_id"]
        assert fork_id != original.stem

        step.set()
        out, err = first.communicate(timeout=60)
        assert first.returncode == 0, err

        # The original holds only the first process's conversation; the fork starts from it.
        loaded = load_session(original)
        assert loaded.warnings == [] and validity_problems(loaded.messages_in_context) == []
        assert [m.text for m in loaded.all_messages if m.role == "user"] == ["start", "what does the build use?"]
        fork = load_session(original.with_name(f"{fork_id}.jsonl"))
        assert fork.header["forked_from"] == original.stem and fork.warnings == []
        assert [m.text for m in fork.all_messages if m.role == "user"] == [
            "start", "what does the build use?", "something else"]

        # The next request on the original has the shape the API accepts.
        server.enqueue(Reply(text="Next."))
        resumed = _run(["-r", original.stem, "-p", "and the tests?", *ANTHROPIC], home, workspace, server)
        assert resumed.returncode == 0, resumed.stderr
        assert server.malformed == 0 and server.rejections == 0
        sent = server.requests_to(ENDPOINT)[-1].body["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]


def test_fork_session_needs_a_session_to_fork(home, workspace):
    completed = cli(["--fork-session", "-p", "hi", "--provider", "demo"], home=home, cwd=workspace)
    assert completed.returncode == 1
    assert error_lines(completed.stderr) == [
        "mini-letta: --fork-session forks the session that -c or -r resumes; add one of them."]


# --- files interleaved before the lock ---------------------------------------------------------------
def _interleaved_file(home: Path, workspace: Path) -> Path:
    """What two processes resumed from [hello, hi] wrote before this fix: their entries alternate."""
    writer = SessionWriter.create(home, workspace, "anthropic", "claude-sonnet-4-5")
    call_a = ToolCall("toolu_a", "read_file", '{"path": "a.txt"}')
    call_b = ToolCall("toolu_b", "glob", '{"pattern": "*"}')
    lost = ToolCall("toolu_lost", "bash", '{"command": "ls"}')
    for message in [
        Message.user("hello", seq=1), Message.assistant("hi", seq=2),
        Message.user("read a.txt", seq=3), Message.user("list the files", seq=3),
        Message.assistant("", [call_a], seq=4), Message.assistant("", [call_b], seq=4),
        Message.tool_result(call_b, "a.txt b.txt", seq=5), Message.tool_result(call_a, "contents of a", seq=5),
        Message.assistant("a.txt says: contents of a", seq=6), Message.assistant("two files", seq=6),
        Message.tool_result(lost, "a result whose call is in no file", seq=7),
    ]:
        writer.append_message(message)
    writer.close()
    return writer.path


def test_an_interleaved_file_loads_as_a_valid_history_and_says_what_it_left_out(home, workspace):
    path = _interleaved_file(home, workspace)
    before = path.read_bytes()
    loaded = load_session(path)
    assert validity_problems(loaded.messages_in_context) == []
    context = [(m.role, m.tool_call_id or m.text) for m in loaded.messages_in_context]
    assert context == [("user", "hello"), ("assistant", "hi"), ("user", "read a.txt"), ("user", "list the files"),
                       ("assistant", ""), ("tool", "toolu_a"), ("assistant", ""), ("tool", "toolu_b"),
                       ("assistant", "a.txt says: contents of a")]
    [warning] = loaded.warnings
    assert "two processes wrote to it at once" in warning
    assert "a reply (seq 6, “two files”) that followed another reply" in warning
    assert ("a result of tool bash (seq 7, “a result whose call is in no file”) whose call is not in the file"
            in warning)
    assert path.read_bytes() == before  # repaired in memory; the file is the record
    assert len(loaded.all_messages) == 11


def test_an_interleaved_file_resumes_with_requests_the_api_accepts(home, workspace):
    path = _interleaved_file(home, workspace)
    with FakeAnthropicServer() as server:
        server.enqueue(Reply(text="Going on."))
        completed = _run(["-r", path.stem, "-p", "go on", *ANTHROPIC], home, workspace, server)
    assert completed.returncode == 0, completed.stderr
    assert server.malformed == 0
    assert "left out of the context" in completed.stderr


@pytest.mark.parametrize("server_class, make", [
    (FakeOpenAIServer, lambda url: OpenAIProvider("gpt-4.1", base_url=url + "/v1", api_key="k")),
    (FakeAnthropicServer, lambda url: AnthropicProvider("claude-sonnet-4-5", base_url=url, api_key="k")),
], ids=["openai", "anthropic"])
def test_the_fakes_reject_a_tool_result_without_its_call_as_the_apis_do(server_class, make):
    """The check the tests above pass can fail: an unrepaired history is refused."""
    call = ToolCall("toolu_x", "read_file", "{}")
    stray = [Message.user("hi"), Message.assistant("hello"), Message.user("more"),
             Message.tool_result(call, "a result from the other conversation")]
    with server_class() as server:
        provider = make(server.root_url)
        with pytest.raises(ProviderError, match="tool"):
            list(provider.stream(Request(system="s", messages=stray)))
        assert server.malformed == 1


def test_a_session_that_cannot_be_locked_fails_in_one_sentence(session_path):
    lock_path(session_path).mkdir()  # a folder where the lock file goes: open() fails, even for root
    with pytest.raises(SessionError, match=rf"Cannot lock session {session_path.stem} .*"):
        SessionWriter.open_existing(session_path)
