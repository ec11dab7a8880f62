"""bash: exit codes, merged output, timeouts that kill the whole process group, bounded output."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from mini_letta.messages import ToolCall
from mini_letta.toolbox import Toolbox, ToolInterrupted, approve_all


def bash(box: Toolbox, command: str, **extra):
    return box.run(ToolCall("call_1", "bash", json.dumps({"command": command, **extra})))


def alive(pid: int) -> bool:
    """A zombie (killed, not yet reaped by its new parent) counts as gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def all_gone(*pids: int, seconds: float = 5) -> bool:
    """Wait up to ``seconds`` for every process to be gone; True when they are."""
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(alive(pid) for pid in pids)


@pytest.fixture
def box(tmp_path: Path) -> Toolbox:
    root = tmp_path / "ws"
    root.mkdir()
    return Toolbox(root, approve_all)


def test_exit_code_and_merged_output_are_reported(box):
    outcome = bash(box, "echo out; echo err >&2; exit 3")
    assert outcome.is_error
    assert outcome.text == "out\nerr\n[exit code 3]"
    ok = bash(box, "true")
    assert not ok.is_error and ok.text == "(no output)\n[exit code 0]"


def test_runs_in_the_workspace_with_empty_stdin(box):
    outcome = bash(box, "pwd; cat; echo done")
    assert outcome.text.splitlines() == [str(box.workspace), "done", "[exit code 0]"]


def test_timeout_kills_the_command_and_its_children(box):
    outcome = bash(box, "sleep 100 & echo $! > a.pid; sleep 100 & echo $! > b.pid; wait", timeout=1)
    assert outcome.is_error
    assert "timed out after 1 s" in outcome.text and "child processes were killed" in outcome.text
    pids = [int((box.workspace / name).read_text()) for name in ("a.pid", "b.pid")]
    assert all_gone(*pids)


def test_a_child_ignoring_sigterm_is_killed_too(box):
    outcome = bash(box, "trap '' TERM; sleep 100 & echo $! > c.pid; wait", timeout=1)
    assert "timed out" in outcome.text
    pid = int((box.workspace / "c.pid").read_text())
    assert all_gone(pid)


def test_background_process_holding_the_output_is_stopped_after_the_shell_exits(box):
    outcome = bash(box, "echo started; sleep 100 & echo $! > bg.pid")
    assert "started" in outcome.text and "background processes" in outcome.text
    assert outcome.text.endswith("[exit code 0]")
    pid = int((box.workspace / "bg.pid").read_text())
    assert all_gone(pid)


def test_background_process_with_redirected_output_keeps_running(box):
    outcome = bash(box, "sleep 30 > /dev/null 2>&1 & echo $! > bg.pid")
    pid = int((box.workspace / "bg.pid").read_text())
    try:
        assert outcome.text == "(no output)\n[exit code 0]"
        assert alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


def test_fifty_megabytes_of_output_keep_head_and_tail_in_bounded_memory(box):
    box.max_output_chars = 20_000
    command = "echo FIRST; head -c 50000000 /dev/zero | tr '\\0' 'x' | fold -w 100; echo; echo LAST"
    tracemalloc.start()
    try:
        outcome = bash(box, command)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(outcome.text) <= 20_000
    assert outcome.text.startswith("FIRST\n") and outcome.text.endswith("LAST\n[exit code 0]")
    assert "bytes (" in outcome.text and "cut from the middle" in outcome.text
    cut = int(outcome.text.split("[… ")[1].split(" bytes")[0].replace(",", ""))
    assert cut > 49_000_000
    assert peak < 5_000_000


def test_output_cap_callable_is_respected(box):
    box.max_output_chars = lambda: 1_000
    outcome = bash(box, "seq 1 100000")
    assert len(outcome.text) <= 1_000
    assert outcome.text.startswith("1\n2\n") and outcome.text.endswith("100000\n[exit code 0]")


def test_ctrl_c_kills_the_group_and_carries_the_partial_output(box):
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as caught:
            bash(box, "echo partial; sleep 100 & echo $! > d.pid; wait")
    finally:
        timer.cancel()
    assert isinstance(caught.value, ToolInterrupted)
    assert caught.value.outcome.is_error
    assert caught.value.outcome.text.startswith("partial\n") and "interrupted by the user" in caught.value.outcome.text
    pid = int((box.workspace / "d.pid").read_text())
    assert all_gone(pid)


@pytest.mark.parametrize("command", [
    "exec >/dev/null 2>&1; sleep 30",
    "exec >build.log 2>&1; sleep 30",
    "echo partial; exec >&- 2>&-; sleep 30",
])
def test_a_command_that_closes_its_output_still_stops_at_the_timeout(box, command):
    outcome = bash(box, "echo $$ > pid; " + command, timeout=2)
    assert outcome.is_error and "timed out after 2 s" in outcome.text
    assert all_gone(int((box.workspace / "pid").read_text()))
    if "partial" in command:
        assert outcome.text.startswith("partial\n")  # the output so far is kept


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), float("-inf"), 1e300])
def test_a_timeout_that_is_not_a_finite_number_in_range_is_refused(box, timeout):
    outcome = bash(box, "echo $$ > ran", timeout=timeout)
    assert outcome.is_error and "timeout" in outcome.text
    assert not (box.workspace / "ran").exists()
