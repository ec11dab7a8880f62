"""What the recorder says and refuses: outside git it says once that commands are not covered; a
checkpoint that cannot be saved stops the change; a git snapshot is a commit no ref points to."""

from __future__ import annotations

import json
import os
import subprocess

from mini_letta.checkpoints.recorder import Checkpoints
from mini_letta.checkpoints.store import Store, folder_for
from mini_letta.messages import Message, ToolCall
from mini_letta.toolbox import Toolbox, approve_all


def recorded(workspace, session_path):
    toolbox = Toolbox(workspace, approve_all)
    notices = []
    checkpoints = Checkpoints(workspace, toolbox.ws.resolve, lambda: session_path, notices.append)
    toolbox.watch_changes = checkpoints.watch
    checkpoints.begin(Message.user("go"))
    return toolbox, notices


def bash(toolbox, command):
    return toolbox.run(ToolCall("c", "bash", json.dumps({"command": command})))


def test_outside_git_commands_are_said_once_to_be_not_covered(tmp_path, workspace):
    toolbox, notices = recorded(workspace, tmp_path / "s.jsonl")
    bash(toolbox, "echo a > a.txt")
    bash(toolbox, "echo b > b.txt")
    assert len(notices) == 1
    assert "not in a git work tree" in notices[0] and "cannot undo what commands and MCP tools change" in notices[0]


def test_a_checkpoint_that_cannot_be_saved_stops_the_change(tmp_path, workspace):
    (workspace / "a.txt").write_text("keep me\n")
    blocked = tmp_path / "s.checkpoints"
    blocked.write_text("a file where the checkpoint folder should be")
    toolbox, _ = recorded(workspace, tmp_path / "s.jsonl")
    outcome = toolbox.run(ToolCall("c", "write_file", json.dumps({"path": "a.txt", "content": "new\n"})))
    assert outcome.is_error and "Not changed: the checkpoint of a.txt could not be saved" in outcome.text
    assert (workspace / "a.txt").read_text() == "keep me\n"


def test_a_command_snapshot_is_a_tree_that_no_ref_points_to(tmp_path, workspace):
    env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x.invalid", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@x.invalid"}
    subprocess.run("git init -q && echo one > a.txt && git add -A && git commit -qm one", shell=True,
                   cwd=workspace, env=env, check=True)
    refs_before = subprocess.run(["git", "show-ref", "--head"], cwd=workspace, capture_output=True, text=True).stdout
    session = tmp_path / "s.jsonl"
    toolbox, notices = recorded(workspace, session)
    bash(toolbox, "echo two > a.txt")
    snapshot = next(e for e in Store(folder_for(session)).entries() if e["t"] == "snapshot")
    shown = subprocess.run(["git", "show", f"{snapshot['tree']}:a.txt"], cwd=workspace, capture_output=True,
                           text=True, check=True).stdout
    assert shown == "one\n"
    refs = subprocess.run(["git", "show-ref", "--head"], cwd=workspace, capture_output=True, text=True).stdout
    assert refs == refs_before and not notices


def test_a_restore_does_not_follow_a_folder_that_became_a_link_out_of_the_workspace(tmp_path, workspace):
    from mini_letta.checkpoints.restore import plan

    session = tmp_path / "s.jsonl"
    toolbox = Toolbox(workspace, approve_all)
    checkpoints = Checkpoints(workspace, toolbox.ws.resolve, lambda: session, lambda text: None)
    toolbox.watch_changes = checkpoints.watch
    message = Message.user("go")
    checkpoints.begin(message)
    toolbox.run(ToolCall("c", "write_file", json.dumps({"path": "sub/a.txt", "content": "x\n"})))
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "sub" / "a.txt").unlink()
    (workspace / "sub").rmdir()
    (workspace / "sub").symlink_to(outside)
    (outside / "a.txt").write_text("not ours\n")
    restore = plan(checkpoints.store(), workspace, message.id)
    assert [item.path for item in restore.blocked] == ["sub/a.txt"]
    assert "outside the workspace" in restore.blocked[0].problem


def test_a_restore_that_cannot_record_itself_changes_nothing_and_says_why(tmp_path, workspace):
    import pytest

    from mini_letta.checkpoints.restore import apply, plan
    from mini_letta.checkpoints.store import CheckpointError

    session = tmp_path / "s.jsonl"
    toolbox = Toolbox(workspace, approve_all)
    checkpoints = Checkpoints(workspace, toolbox.ws.resolve, lambda: session, lambda text: None)
    toolbox.watch_changes = checkpoints.watch
    message = Message.user("go")
    checkpoints.begin(message)
    (workspace / "a.txt").write_text("before\n")
    toolbox.run(ToolCall("c", "write_file", json.dumps({"path": "a.txt", "content": "after\n"})))
    store = checkpoints.store()
    restore = plan(store, workspace, message.id)
    # A log that cannot be written (a folder in its place: a read-only file would not stop root).
    store.log_path.unlink()
    store.log_path.mkdir()
    fresh = Store(store.folder)
    with pytest.raises(CheckpointError, match="No file was restored: the checkpoint log"):
        apply(fresh, workspace, restore.items)
    assert (workspace / "a.txt").read_text() == "after\n"


def test_outside_git_the_repl_says_before_any_command_that_commands_cannot_be_undone(workspace, monkeypatch):
    """Issue 37 item 2: a sandboxed command runs without asking, so where it cannot be undone the
    user must learn it before the first one, not after it overwrote a file."""
    import pytest

    from mini_letta.app import Options, build_agent

    monkeypatch.setenv("MINI_LETTA_SANDBOX", "workspace-write")
    options = Options(workspace=workspace)
    agent = build_agent(options, approve_all)
    if not agent.toolbox.sandbox.active:
        pytest.skip("bubblewrap cannot run here, so commands ask before they run")
    said = [text for text in options.notices.take() if "not in a git work tree" in text]
    assert len(said) == 1 and "git init" in said[0]
    bash(agent.toolbox, "echo a > a.txt")  # not said a second time, after the command
    assert not [text for text in options.notices.take() if "not in a git work tree" in text]
    assert agent.checkpoints.unrecorded_commands == 1


def test_inside_git_nothing_is_said_and_commands_are_recorded(tmp_path, workspace):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    toolbox, notices = recorded(workspace, tmp_path / "s.jsonl")
    checkpoints = toolbox.watch_changes.__self__
    assert checkpoints.coverage_notice() is None
    bash(toolbox, "echo a > a.txt")
    assert notices == [] and checkpoints.unrecorded_commands == 0
