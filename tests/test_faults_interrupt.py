"""Interruption: Ctrl-C while the reply streams, while a tool runs and while compaction summarises,
and SIGKILL at random points of a running session followed by ``--continue``.

After each one, everything said so far is kept, the history is valid and the session resumes.
"""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fakes import Reply
from fault_support import Recorder, check_history, cli, cli_env, openai_agent, session_files, wait_dead

from mini_letta.loop.agent import TurnInterrupted
from mini_letta.app import Options, build_agent
from mini_letta.messages import validity_problems
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.sessions.store import load_session
from mini_letta.toolbox import approve_all

TESTS = Path(__file__).parent


def ctrl_c_when(condition, give_up: float = 10) -> threading.Thread:
    """Deliver a real SIGINT to this process (as Ctrl-C does) once ``condition()`` holds."""
    main = threading.main_thread().ident

    def watch():
        deadline = time.monotonic() + give_up
        while time.monotonic() < deadline:
            if condition():
                time.sleep(0.1)  # let the main thread settle into the blocking read or wait
                signal.pthread_kill(main, signal.SIGINT)
                return
            time.sleep(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.fault
def test_ctrl_c_while_streaming_keeps_the_partial_reply(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    server.enqueue(Reply(text="The answer begins here and goes on for quite a while.", chunk_size=3))
    with pytest.raises(TurnInterrupted):
        agent.run_turn("explain", Recorder(interrupt_after=4))
    last = agent.conversation.messages[-1]
    assert last.role == "assistant" and last.meta.get("interrupted")
    assert last.text == "The answer b"
    loaded = check_history(agent, "explain")
    assert loaded.all_messages[-1].text == "The answer b"
    server.enqueue(Reply(text="go on"))
    assert agent.run_turn("continue").text == "go on"
    check_history(agent, "explain", "continue")


@pytest.mark.fault
def test_ctrl_c_during_a_command_stops_it_and_keeps_its_output(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    command = "echo before; echo $$ > pid; sleep 30; echo after"
    server.enqueue(Reply(tool_calls=[("c1", "bash", f'{{"command": "{command}"}}'),
                                     ("c2", "glob", '{"pattern": "*"}')]))
    ctrl_c_when(lambda: (workspace / "pid").exists())
    with pytest.raises(TurnInterrupted):
        agent.run_turn("run the slow thing")
    first, second = agent.conversation.messages[-2:]
    assert first.is_error and "before" in first.text and "Interrupted" in first.text and "\nafter" not in first.text
    assert second.is_error and "Not run" in second.text
    assert wait_dead(int((workspace / "pid").read_text()))
    check_history(agent, "run the slow thing")


def fill(agent, server, turns=6) -> list[str]:
    prompts = [f"question {turn} " + "detail " * 400 for turn in range(turns)]
    for turn, prompt in enumerate(prompts):
        # No usage report: the fake's fixed figure would make the request look tiny.
        server.enqueue(Reply(text=f"reply {turn} " + "words " * 400, usage=None))
        agent.run_turn(prompt)
    return prompts


@pytest.mark.fault
def test_ctrl_c_during_manual_compaction_changes_nothing(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace, timeout="20")
    prompts = fill(agent, server)
    before = [m.id for m in agent.conversation.messages]
    server.enqueue(Reply(text="a summary that never arrives", stall=30))
    requests = len(server.requests_to("/v1/chat/completions"))
    ctrl_c_when(lambda: len(server.requests_to("/v1/chat/completions")) > requests)
    with pytest.raises(KeyboardInterrupt):
        agent.compact_now()
    assert [m.id for m in agent.conversation.messages] == before
    check_history(agent, *prompts)


@pytest.mark.fault
def test_ctrl_c_during_automatic_compaction_keeps_the_prompt_and_the_history(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace, timeout="20")
    prompts = fill(agent, server)
    before = [m.id for m in agent.conversation.messages]
    # As if CODEAGENT_AUTO_COMPACT_WINDOW put the threshold (80% of it) at 70% of what is in use now.
    agent.budget.window_info = dataclasses.replace(agent.budget.window_info,
                                                   auto_compact_window=agent.context_tokens() * 7 // 8)
    server.enqueue(Reply(text="summary never arrives", stall=30))
    events = Recorder()
    requests = len(server.requests_to("/v1/chat/completions"))
    ctrl_c_when(lambda: events.compactions_started > 0 and len(server.requests_to("/v1/chat/completions")) > requests)
    with pytest.raises(TurnInterrupted):
        agent.run_turn("one more question", events)
    assert events.compactions_started == 1
    assert [m.id for m in agent.conversation.messages][:-1] == before
    assert agent.compactions == []
    check_history(agent, *prompts, "one more question")


@pytest.mark.fault
def test_real_ctrl_c_in_print_mode_exits_130_and_saves_what_was_said(server, tmp_path, workspace):
    server.enqueue(Reply(text="partial answer " * 20, chunk_size=5, stall=30, stall_after=6))
    home = tmp_path / "home-int"
    process = subprocess.Popen([sys.executable, "-m", "mini_letta", "-p", "long question", "--provider", "openai",
                                "--base-url", server.base_url], cwd=workspace,
                               env=cli_env(home, {"MINI_LETTA_TIMEOUT": "30"}),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not server.requests_to("/v1/chat/completions") and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(1.0)  # the first chunks reach the client, then the server stalls
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert stderr.strip().splitlines() == ["mini-letta: interrupted"] and "Traceback" not in stderr
    loaded = load_session(session_files(home)[0])
    assert loaded.warnings == [] and validity_problems(loaded.messages_in_context) == []
    user, partial = loaded.all_messages
    assert user.text == "long question" and partial.text.startswith("partial answer") and partial.meta["interrupted"]


# --- SIGKILL at random points, then --continue -------------------------------------------------------
def run_until_killed(workspace: Path, home: Path, after_saved: int, jitter: float,
                     resume: bool) -> tuple[list[str], Path]:
    """Start the killable session and SIGKILL it ``jitter`` s after it reported ``after_saved`` saved
    messages (so the kill lands anywhere in the next write, whatever the machine's load); returns the
    ids it reported saved."""
    env = cli_env(home, {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
                         "FAULT_CONTINUE": "1" if resume else "0"})
    process = subprocess.Popen([sys.executable, "-c", "import fault_support; fault_support.killable_session()"],
                               cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = process.stdout.readline()
    assert ready.startswith("READY"), ready + process.stderr.read()
    saved: list[str] = []
    while len(saved) < after_saved:
        line = process.stdout.readline()
        assert line, "the session process ended before it was killed: " + process.stderr.read()
        if line.startswith("SAVED"):
            saved.append(line.split()[1])
    time.sleep(jitter)
    process.kill()
    stdout, stderr = process.communicate(timeout=10)
    assert "Traceback" not in stderr, stderr
    saved += [line.split()[1] for line in stdout.splitlines() if line.startswith("SAVED")]
    return saved, Path(ready.split(maxsplit=1)[1].strip())


@pytest.mark.fault
def test_sigkill_at_random_points_loses_no_completed_message(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    monkeypatch.setenv("MINI_LETTA_HOME", str(home))
    rng = random.Random(20261129)
    all_saved: list[str] = []
    path = None
    for kill in range(6):
        saved, path_now = run_until_killed(workspace, home, rng.randint(4, 15), rng.uniform(0, 0.02),
                                            resume=kill > 0)
        path = path or path_now
        assert path_now == path  # --continue appends to the same session file
        all_saved += saved
        loaded = load_session(path)
        on_disk = {m.id for m in loaded.all_messages}
        assert [i for i in all_saved if i not in on_disk] == []
        # Only a line torn by the kill itself may be reported, never anything else.
        assert all("incomplete" in w for w in loaded.warnings), loaded.warnings
        assert validity_problems(loaded.messages_in_context) == []
    assert len(all_saved) > 20
    # --continue as a user runs it: the whole history is sent back to the model.
    completed = cli(["-p", "status?", "--provider", "demo", "--continue", "--output-format", "json"], home=home,
                    cwd=workspace)
    assert completed.returncode == 0, completed.stderr
    resumed = load_session(path)
    assert {m.id for m in resumed.all_messages} >= set(all_saved)
    assert validity_problems(resumed.messages_in_context) == []
    assert resumed.all_messages[-2].text == "status?"
    # And in process, through build_agent: the conversation holds every message saved before the kills.
    agent = build_agent(Options(workspace=workspace, continue_session=True), approve_all,
                        provider=ScriptedProvider(["fine"]))
    in_context = {m.id for m in agent.conversation.messages}
    assert set(all_saved) <= in_context | {m.id for m in resumed.all_messages if m.seq < resumed.boundary_seq}
    agent.run_turn("after the crashes")
    check_history(agent, "after the crashes", "status?")
