"""Hooks and /trust in the REPL (issue 49): a PreToolUse hook blocks a command before it is asked
about; /trust runs the workspace's hooks and offers a skill written after the start."""

import json
import sys

from pty_support import AT_THE_PROMPT_AFTER_A_REPLY, screen_after
from skills_support import simple, write_skill


def test_a_pre_tool_use_hook_blocks_a_command_before_any_question(spawn, tmp_path):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    guard = tmp_path / "guard.py"
    guard.write_text("import json, sys\nif 'curl' in json.load(sys.stdin)['tool_input']['command']:\n"
                     "    print('no network from here', file=sys.stderr); sys.exit(2)\n")
    (home / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": f"{sys.executable} {guard}"}]}]}}))
    child = spawn()
    screen_after(child, r"context left")
    child.send("run curl http://example.com\r")
    shown = screen_after(child, r"Blocked by a PreToolUse hook: no network from here[\s\S]*"
                         + AT_THE_PROMPT_AFTER_A_REPLY)
    assert "[y]es" not in shown


def test_trust_runs_workspace_hooks_and_offers_a_skill_written_after_the_start(spawn, tmp_path):
    workspace = tmp_path / "ws"
    (workspace / ".mini-letta").mkdir(parents=True)
    (workspace / ".mini-letta" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Glob", "hooks": [{"type": "command", "command": "echo globs are off >&2; exit 2"}]}]}}))
    child = spawn()
    screen_after(child, r"not\s+run: this folder is not\s+trusted[\s\S]*context left")
    write_skill(workspace / ".claude/skills", "release-notes", simple("release-notes", "Write the notes."))
    child.send("/trust\r")
    shown = screen_after(child, r"Trusted[\s\S]*release-notes[\s\S]*context left")
    assert "not offered" not in shown.split("Trusted")[-1]
    child.send("ls\r")
    screen_after(child, r"Blocked by a PreToolUse hook: globs are off[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
