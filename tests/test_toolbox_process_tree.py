"""bash without a sandbox stops the whole process tree, not only the group, and says truthfully
which processes it could not stop (a ``setsid`` child used to survive while the result said
"they were stopped")."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from mini_letta.messages import ToolCall
from mini_letta.toolbox import Toolbox, approve_all
from mini_letta.toolbox import processes
from test_toolbox_shell import alive, all_gone


@pytest.fixture
def box(tmp_path: Path) -> Toolbox:
    root = tmp_path / "ws"
    root.mkdir()
    return Toolbox(root, approve_all)


def bash(box: Toolbox, command: str, **extra):
    return box.run(ToolCall("call_1", "bash", json.dumps({"command": command, **extra})))


def test_a_setsid_child_holding_the_output_is_stopped_when_the_shell_exits(box):
    outcome = bash(box, "echo started; setsid sleep 100 & echo $! > bg.pid")
    pid = int((box.workspace / "bg.pid").read_text())
    assert all_gone(pid, seconds=1)
    assert "started" in outcome.text and "they were stopped" in outcome.text


def test_a_setsid_child_is_killed_at_the_timeout(box):
    outcome = bash(box, "setsid sleep 100 & echo $! > bg.pid; sleep 100", timeout=1)
    pid = int((box.workspace / "bg.pid").read_text())
    assert all_gone(pid, seconds=1)
    assert "timed out after 1 s" in outcome.text and "child processes were killed" in outcome.text


def test_a_process_that_cannot_be_stopped_is_named_instead_of_called_stopped(box, monkeypatch):
    # A process of another user refuses our signals with EPERM; stand one in by refusing them for
    # the setsid'd sleep (found by its name) and check what the model is told.
    real_kill = os.kill

    def refusing_kill(pid, signum):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            name = ""
        if name == "sleep" and signum != 0:
            raise PermissionError(1, "Operation not permitted")
        real_kill(pid, signum)

    monkeypatch.setattr(processes.os, "kill", refusing_kill)
    outcome = bash(box, "echo started; setsid sleep 100 & echo $! > bg.pid")
    pid = int((box.workspace / "bg.pid").read_text())
    try:
        assert alive(pid)
        assert "they were stopped" not in outcome.text
        assert f"1 of its processes could not be stopped and are still running: {pid} (sleep)" in outcome.text
    finally:
        real_kill(pid, signal.SIGKILL)
