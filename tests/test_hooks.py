"""PreCompact and PostCompact hooks (issue 14): what they receive, what they can change, and that a
failing or hanging hook never breaks a compaction."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from agent_support import SUMMARY_TEXT, make_agent, request_tokens, script, sized_text

from mini_letta.notices import Notices
from mini_letta.conversation import Conversation
from mini_letta.hooks import is_trusted, load_hooks, trust
from mini_letta.messages import Message
from mini_letta.sessions.store import SessionWriter
from mini_letta.settings import SETTINGS

PY = sys.executable


def preloaded(turns: int = 12, tokens: int = 200) -> Conversation:
    conversation = Conversation()
    for turn in range(turns):
        conversation.append(Message.user(f"question {turn}: " + sized_text(tokens, seed=turn)))
        conversation.append(Message.assistant(f"answer {turn}: " + sized_text(tokens, seed=turn + 1)))
    return conversation


def settings(folder: Path, event: str, command: str, matcher: str = "", **extra) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    hook = {"type": "command", "command": command, **extra}
    (folder / "settings.json").write_text(json.dumps({"hooks": {event: [{"matcher": matcher, "hooks": [hook]}]}}))


def python_hook(tmp_path: Path, name: str, body: str) -> str:
    """A hook command running a small Python script (no shell quoting games)."""
    script_path = tmp_path / f"{name}.py"
    script_path.write_text("import json, sys\nevent = json.load(sys.stdin)\n" + body)
    return f"{PY} {script_path}"


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return home


def agent_with_hooks(tmp_path, home, provider=None, **kwargs):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    provider = provider or script([])
    session = SessionWriter.create(home, workspace, provider.name, provider.model)
    agent = make_agent(provider, workspace, window=200_000, conversation=preloaded(), session=session, **kwargs)
    agent.hooks = load_hooks(home, workspace)
    return agent, provider


class Events:
    def __init__(self):
        self.notices: list[str] = []

    def __getattr__(self, name):
        return lambda *args, **kwargs: None

    def notice(self, text):
        self.notices.append(text)


def summary_prompts(provider) -> list[str]:
    return [r.messages[-1].text for r in provider.requests if r.purpose == "summary"]


def test_a_pre_compact_hook_adds_instructions_to_the_summarizer(tmp_path, home):
    seen = tmp_path / "pre.json"
    settings(home, "PreCompact", python_hook(tmp_path, "pre", f"open({str(seen)!r}, 'w').write(json.dumps(event))\n"
                                                              "print('Keep every TODO about the parser.')"))
    agent, provider = agent_with_hooks(tmp_path, home)

    record = agent.compact_now("the cache bug")

    assert "summarize" in record.layers
    [prompt] = summary_prompts(provider)
    assert "the cache bug" in prompt and "Keep every TODO about the parser." in prompt
    event = json.loads(seen.read_text())
    assert event["hook_event_name"] == "PreCompact" and event["trigger"] == "manual"
    assert event["focus"] == "the cache bug" and event["tokens_before"] == record.tokens_before
    assert event["session_id"] == agent.session.id and event["transcript_path"] == str(agent.session.path)


def test_a_pre_compact_hook_exiting_2_blocks_a_manual_compaction(tmp_path, home):
    settings(home, "PreCompact", python_hook(tmp_path, "block", "sys.stderr.write('release freeze: keep it all')\n"
                                                                "sys.exit(2)"), matcher="manual")
    agent, provider = agent_with_hooks(tmp_path, home)
    before = list(agent.conversation.messages)
    session_text = agent.session.path.read_text()

    record = agent.compact_now()

    assert record.layers == [] and "release freeze: keep it all" in record.note and "blocked" in record.note
    assert agent.conversation.messages == before and agent.compactions == []
    assert summary_prompts(provider) == [] and agent.session.path.read_text() == session_text


def test_a_post_compact_hook_receives_the_summary_and_the_size_after(tmp_path, home):
    seen = tmp_path / "post.json"
    settings(home, "PostCompact", python_hook(tmp_path, "post", f"open({str(seen)!r}, 'w').write(json.dumps(event))"))
    agent, _ = agent_with_hooks(tmp_path, home)

    record = agent.compact_now()

    event = json.loads(seen.read_text())
    assert event["hook_event_name"] == "PostCompact" and event["trigger"] == "manual"
    assert SUMMARY_TEXT in event["summary"]
    assert event["tokens_after"] == agent.context_tokens() < event["tokens_before"] == record.tokens_before


def test_a_hanging_hook_is_cut_off_at_its_timeout_with_its_children_and_reported(tmp_path, home):
    pid_file = tmp_path / "child.pid"
    # The shell starts a long sleep and waits: both must go when the timeout strikes.
    settings(home, "PreCompact", f"sleep 60 & echo $! > {pid_file}; wait", timeout=2)
    agent, provider = agent_with_hooks(tmp_path, home)
    events = Events()

    started = time.monotonic()
    record = agent.compact_now(events=events)
    elapsed = time.monotonic() - started

    assert elapsed < 30, "the hook was not stopped at its timeout"
    assert "summarize" in record.layers and len(summary_prompts(provider)) == 1
    [notice] = events.notices
    assert "PreCompact" in notice and "did not finish within 2 s" in notice
    child = int(pid_file.read_text())
    status = Path(f"/proc/{child}/status")
    assert not status.exists() or "zombie" in status.read_text()


def test_a_failing_hook_is_reported_and_the_compaction_goes_on(tmp_path, home):
    settings(home, "PostCompact", python_hook(tmp_path, "fail", "sys.stderr.write('disk on fire')\nsys.exit(1)"))
    agent, _ = agent_with_hooks(tmp_path, home)
    events = Events()

    record = agent.compact_now(events=events)

    assert "summarize" in record.layers and agent.conversation.messages[0].kind == "summary"
    [notice] = events.notices
    assert "exited with status 1" in notice and "disk on fire" in notice


def test_automatic_compaction_runs_auto_hooks_only_and_cannot_be_blocked(tmp_path, home):
    log = tmp_path / "log.txt"
    auto = python_hook(tmp_path, "auto", f"open({str(log)!r}, 'a').write(event['trigger'] + '\\n')\n"
                                         "print('Mention the failing tests.')\nsys.exit(0)")
    manual = python_hook(tmp_path, "manual", f"open({str(log)!r}, 'a').write('manual-only\\n')\nsys.exit(2)")
    (home / "settings.json").write_text(json.dumps({"hooks": {"PreCompact": [
        {"matcher": "auto", "hooks": [{"type": "command", "command": auto}]},
        {"matcher": "manual", "hooks": [{"type": "command", "command": manual}]},
    ]}}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    provider = script([f"reply {n}: " + sized_text(400, seed=n) for n in range(20)], window=8_000,
                      count=request_tokens)
    agent = make_agent(provider, workspace, lean_system="You are a coding agent.", tool_names=())
    agent.hooks = load_hooks(home, workspace)

    for n in range(20):
        if agent.run_turn(f"prompt {n}: " + sized_text(400, seed=n + 3)).compactions:
            break

    assert agent.compactions and agent.compactions[0].trigger == "context_pressure"
    assert log.read_text().splitlines()[0] == "auto" and "manual-only" not in log.read_text()
    assert "Mention the failing tests." in summary_prompts(provider)[0]


def test_workspace_hooks_run_only_once_the_folder_is_trusted(tmp_path, home):
    workspace = tmp_path / "ws"
    marker = tmp_path / "ran"
    settings(workspace / ".mini-letta", "PostCompact", f"touch {marker}")

    channel = Notices()
    hooks = load_hooks(home, workspace, channel.say)
    assert hooks.commands == [] and not is_trusted(home, workspace)
    [notice] = channel.take()
    assert "not trusted" in notice and "/trust" in notice

    trust(home, workspace)
    assert is_trusted(home, workspace)
    assert [c.command for c in load_hooks(home, workspace).commands] == [f"touch {marker}"]
    assert oct((home / "trusted-folders.json").stat().st_mode & 0o777) == "0o600"


def test_reload_reads_the_trusted_workspace_hooks_into_the_same_object(tmp_path, home):
    workspace = tmp_path / "ws"
    settings(workspace / ".mini-letta", "PostCompact", "true")
    hooks = load_hooks(home, workspace)
    trust(home, workspace)
    channel = Notices()
    hooks.reload(home, workspace, channel.say)
    assert [c.command for c in hooks.commands] == ["true"] and channel.take() == []
    (workspace / ".mini-letta" / "settings.json").write_text("{not json")
    hooks.reload(home, workspace, channel.say)
    [notice] = channel.take()
    assert hooks.commands == [] and "JSON" in notice


def test_a_broken_settings_file_is_one_notice_and_no_hooks(tmp_path, home):
    (home / "settings.json").write_text("{not json")
    channel = Notices()
    assert load_hooks(home, tmp_path, channel.say).commands == []
    [notice] = channel.take()
    assert "settings.json" in notice and "JSON" in notice


def escaped_child(pid_file: Path) -> str:
    """A child in a session of its own (out of the hook's process group) that holds stdout open."""
    return f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 30'"


@pytest.mark.parametrize("shape", ["waits", "returns"])
def test_a_setsid_child_holding_stdout_does_not_hold_up_the_compaction(tmp_path, home, shape):
    pid_file = tmp_path / "escaped.pid"
    # "waits": the hook itself runs past its timeout; "returns": it exits at once, leaving the child.
    command = escaped_child(pid_file) + ("; sleep 30" if shape == "waits" else " & echo started")
    settings(home, "PreCompact", command, timeout=2)
    agent, provider = agent_with_hooks(tmp_path, home)
    events = Events()
    try:
        started = time.monotonic()
        record = agent.compact_now(events=events)
        elapsed = time.monotonic() - started
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)

    assert elapsed < 2 + 1, f"the compaction waited {elapsed:.1f} s on a hook with a 2 s timeout"
    assert "summarize" in record.layers and len(summary_prompts(provider)) == 1
    if shape == "waits":
        [notice] = events.notices
        assert "did not finish within 2 s" in notice
    else:
        assert events.notices == [] and "started" in summary_prompts(provider)[0]


@pytest.mark.parametrize("timeout", ["Infinity", "NaN", "-1", "0", '"30"', "1e300"])
def test_a_timeout_that_is_not_a_finite_positive_number_is_a_notice_and_the_default(tmp_path, home, timeout):
    (home / "settings.json").write_text(
        '{"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "true", "timeout": %s}]}]}}' % timeout)
    channel = Notices()
    [hook] = load_hooks(home, tmp_path, channel.say).commands
    assert hook.timeout == SETTINGS.hooks.timeout_seconds
    [notice] = channel.take()
    assert "timeout" in notice and "60 s is used" in notice


def test_compact_with_an_infinite_hook_timeout_runs(tmp_path, home):
    (home / "settings.json").write_text(
        '{"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "echo fine", "timeout": Infinity}]}]}}')
    agent, provider = agent_with_hooks(tmp_path, home)
    record = agent.compact_now(events=Events())
    assert "summarize" in record.layers and "fine" in summary_prompts(provider)[0]


def test_a_hook_that_never_reads_stdin_and_prints_past_the_pipe_buffer_is_read_to_its_end(tmp_path, home):
    settings(home, "PreCompact", f"{PY} -c \"print('y' * 500_000)\"")
    agent, provider = agent_with_hooks(tmp_path, home)
    events = Events()
    record = agent.compact_now(events=events)
    assert events.notices == [] and "summarize" in record.layers
    assert "y" * 1000 in summary_prompts(provider)[0]
