"""The REPL with the sandbox on, in a pseudo-terminal: commands run without a question, the status
bar and /sandbox name the mode."""

from __future__ import annotations

import pytest

from pty_support import screen_after

pytestmark = pytest.mark.usefixtures("bubblewrap")


def test_a_command_runs_in_the_sandbox_without_asking_and_the_mode_is_shown(spawn, tmp_path):
    repl = spawn(env_extra={"MINI_LETTA_SANDBOX": "workspace-write"})
    screen_after(repl, r"context left[^\n]*sandbox: workspace-write")  # the status bar
    repl.send("run touch made-inside; touch /usr/mini-letta-pty-escape\r")
    seen = screen_after(repl, r"Read-only file system[\s\S]*context left")
    assert "[y]es · [n]o" not in seen
    assert (tmp_path / "ws" / "made-inside").exists()
    repl.send("/sandbox\r")
    screen_after(repl, r"Sandbox: workspace-write \(the workspace and a private /tmp writable")


def test_with_the_sandbox_off_the_repl_says_at_start_that_commands_run_unsandboxed(spawn):
    repl = spawn(env_extra={"MINI_LETTA_SANDBOX": "off"})
    seen = screen_after(repl, r"commands run unsandboxed[\s\S]*context left")
    assert seen.count("commands run unsandboxed") == 1
