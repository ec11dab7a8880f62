"""Shared helpers for the fault and abuse suite (tests/test_faults_*.py); no tests here.

Every fault test drives the real agent (``build_agent``) or the real command (``python -m
mini_letta``) against the fake HTTP servers on 127.0.0.1, then checks the invariants the issue asks
for with :func:`check_history`: the user's message is kept, the history is valid and the session
file loads cleanly and holds every completed message.

Each case is marked ``@pytest.mark.fault`` (it injects a fault) or ``@pytest.mark.bad_input`` (it
feeds bad input); ``conftest.py`` counts the marked cases that ran, from the test reports, and prints
the totals at the end of a run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fakes import Reply, openai_provider_name

from mini_letta.loop.agent import AgentEvents
from mini_letta.app import Options, build_agent
from mini_letta.messages import Message, ToolCall, new_id, validity_problems
from mini_letta.sessions.store import LoadedSession, load_session
from mini_letta.toolbox import approve_all


# Short enough that a stalled server costs a test about a second, long enough for a loaded CI box.
TEST_TIMEOUT = "1.5"


class Recorder(AgentEvents):
    """Keeps everything the loop reports; ``interrupt_after`` raises Ctrl-C after that many deltas."""

    def __init__(self, interrupt_after: int | None = None):
        self.deltas: list[str] = []
        self.notices: list[str] = []
        self.results: list[tuple[ToolCall, Any]] = []
        self.compactions_started = 0
        self.interrupt_after = interrupt_after

    def text(self, delta: str) -> None:
        self.deltas.append(delta)
        if self.interrupt_after is not None and len(self.deltas) >= self.interrupt_after:
            raise KeyboardInterrupt

    def notice(self, text: str) -> None:
        self.notices.append(text)

    def tool_result(self, call: ToolCall, outcome: Any) -> None:
        self.results.append((call, outcome))

    def compaction_started(self, trigger: str) -> None:
        self.compactions_started += 1


def openai_agent(monkeypatch, server, workspace: Path, approver=approve_all, *, retries: int = 0,
                 timeout: str = TEST_TIMEOUT, **options: Any):
    """An agent talking to ``server`` through the real OpenAI provider (the Responses one for the
    fake Responses server), with test-sized timeouts."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MINI_LETTA_TIMEOUT", timeout)
    monkeypatch.setenv("MINI_LETTA_MAX_RETRIES", str(retries))
    return build_agent(Options(provider=openai_provider_name(server), base_url=server.base_url, workspace=workspace, **options),
                       approver)


def anthropic_agent(monkeypatch, server, workspace: Path, approver=approve_all, *, retries: int = 0, **options: Any):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("MINI_LETTA_TIMEOUT", TEST_TIMEOUT)
    monkeypatch.setenv("MINI_LETTA_MAX_RETRIES", str(retries))
    return build_agent(Options(provider="anthropic", base_url=server.base_url, workspace=workspace, **options), approver)


HOOK_WORDS = "Keep every TODO about the parser."


def compact_hooks(tmp_path: Path) -> Path:
    """PreCompact and PostCompact hooks in the data folder's settings.json, each writing its event's
    name to the file returned; PreCompact also says ``HOOK_WORDS`` (which go into the summary's focus)."""
    from mini_letta import config

    seen = tmp_path / "seen.txt"
    script = tmp_path / "hook.py"
    script.write_text("import json, sys\nevent = json.load(sys.stdin)\n"
                      f"open({str(seen)!r}, 'a').write(event['hook_event_name'] + '\\n')\n"
                      f"print({HOOK_WORDS!r}) if event['hook_event_name'] == 'PreCompact' else None\n")
    hook = [{"matcher": "", "hooks": [{"type": "command", "command": f"{sys.executable} {script}"}]}]
    config.home().mkdir(parents=True, exist_ok=True)
    (config.home() / "settings.json").write_text(json.dumps({"hooks": {"PreCompact": hook, "PostCompact": hook}}))
    return seen


def native_item_after_continue(agent, server, start) -> tuple[dict, Any]:
    """(the provider's first item in ``agent``'s summary after one more turn, the request a
    session resumed with ``-c`` sent next): ``start(continue_session=True)`` builds the resumed agent."""
    server.enqueue(Reply(text="compacted answer"))
    agent.run_turn("one more question")
    item = agent.conversation.messages[0].meta["native"]["items"][0]
    agent.state.session.close()
    resumed = start(continue_session=True)
    server.enqueue(Reply(text="resumed answer"))
    assert resumed.run_turn("after -c").text == "resumed answer"
    return item, server.completions()[-1]


def check_native_fell_back(agent, result, notices, reason: str, question: str) -> None:
    """A turn whose provider did not compact itself: our own summary ran, the refusal (with
    ``reason`` in it) was said once, and nothing of the provider's is kept."""
    assert result.text == "answered"
    [record] = result.compactions
    assert "summarize" in record.layers and "native" not in record.layers
    said = [text for text in notices.take() if "did not compact the conversation itself" in text]
    assert len(said) == 1 and reason in said[0] and "own summary runs instead" in said[0]
    assert "native" not in agent.conversation.messages[0].meta
    check_history(agent, question)


def check_history(agent, *user_texts: str, warnings_ok: bool = False) -> LoadedSession:
    """The invariants every fault test ends with; returns the session as loaded from disk."""
    messages = agent.conversation.messages
    assert validity_problems(messages) == []
    for text in user_texts:
        assert any(m.role == "user" and m.text == text for m in messages), f"user message lost: {text[:60]!r}"
    loaded = load_session(agent.session.path)
    if not warnings_ok:
        assert loaded.warnings == [], loaded.warnings
    assert validity_problems(loaded.messages_in_context) == []
    # Results for calls a crash left unanswered are rebuilt on every load rather than stored.
    on_disk = {m.id for m in loaded.all_messages} | {m.id for m in loaded.messages_in_context}
    lost = [m for m in messages if m.id not in on_disk]
    assert lost == [], f"messages not saved: {[(m.role, m.text[:40]) for m in lost]}"
    for text in user_texts:
        assert any(m.role == "user" and m.text == text for m in loaded.all_messages)
    return loaded


def roles(messages: list[Message]) -> list[str]:
    return [m.role for m in messages]


def cli(args: list[str], *, home: Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60,
        stdin: str | None = None) -> subprocess.CompletedProcess:
    """``python -m mini_letta ARGS`` as a user runs it; never a traceback on stderr."""
    completed = subprocess.run([sys.executable, "-m", "mini_letta", *args], cwd=cwd, env=cli_env(home, env),
                               capture_output=True, text=True, timeout=timeout, input=stdin)
    assert "Traceback" not in completed.stderr, completed.stderr
    return completed


def cli_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEAGENT_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "MINI_LETTA_"))}
    env.update({"MINI_LETTA_HOME": str(home), "OPENAI_API_KEY": "sk-test", "MINI_LETTA_TIMEOUT": TEST_TIMEOUT,
                "MINI_LETTA_MAX_RETRIES": "0", "PYTHONUNBUFFERED": "1"})
    env.update(extra or {})
    return env


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def session_files(home: Path) -> list[Path]:
    return sorted((home / "sessions").glob("*.jsonl"))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes; only its parent (gone) could reap it.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def wait_dead(pid: int, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


# --- a session to kill: run as `python -c "import fault_support; fault_support.killable_session()"` ----------
def scripted_model(request) -> Any:
    """Each user turn: a tool call (a short command, so kills also land inside tools), then a text reply."""
    last = request.messages[-1]
    if last.role == "user":
        turn = last.text.split()[-1]
        return Message.assistant(f"Running step {turn}.", [ToolCall(new_id("call_"), "bash",
                                                                    json.dumps({"command": "sleep 0.02; echo ok"}))])
    return f"Step finished: {last.text.strip()[:20]}"


def killable_session() -> None:
    """Turn after turn, forever; prints ``SAVED <id>`` once each message is on disk (then the kill may come)."""
    from mini_letta.providers.scripted import ScriptedProvider
    from mini_letta.sessions.store import SessionWriter

    original = SessionWriter.append_message

    def append_and_report(self, message):
        original(self, message)
        print("SAVED", message.id, flush=True)

    SessionWriter.append_message = append_and_report
    resume = os.environ.get("FAULT_CONTINUE") == "1"
    agent = build_agent(Options(workspace=Path.cwd(), continue_session=resume), approve_all,
                        provider=ScriptedProvider(default=scripted_model, chunk_size=4))
    print("READY", agent.session.path, flush=True)
    for turn in range(10_000):
        agent.run_turn(f"please do step {turn}")
