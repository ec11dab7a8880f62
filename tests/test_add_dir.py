"""--add-dir and /add-dir: more folders the file tools read and write as the workspace."""

from __future__ import annotations

import json

from fault_support import cli
from mini_letta.checkpoints.recorder import Checkpoints
from mini_letta.checkpoints.store import folder_for
from mini_letta.messages import Message, ToolCall
from mini_letta.toolbox import Toolbox, approve_all


def test_print_mode_reads_an_added_folder_and_refuses_what_is_not_added(tmp_path, workspace):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("shared notes here\n")
    prompt = f"read {other / 'notes.txt'}"
    added = cli(["-p", prompt, "--provider", "demo", "--add-dir", str(other)], home=tmp_path / "h", cwd=workspace)
    assert added.returncode == 0 and "shared notes here" in added.stdout, added.stderr
    plain = cli(["-p", prompt, "--provider", "demo"], home=tmp_path / "h", cwd=workspace)
    assert "shared notes here" not in plain.stdout and "Denied" in plain.stdout
    missing = cli(["-p", "hi", "--provider", "demo", "--add-dir", str(tmp_path / "nope")], home=tmp_path / "h",
                  cwd=workspace)
    assert missing.returncode == 1 and "is not a directory" in missing.stderr


def test_a_write_in_an_added_folder_is_made_and_not_taken_into_the_checkpoints(tmp_path, workspace):
    other = tmp_path / "other"
    other.mkdir()
    toolbox = Toolbox(workspace, approve_all)
    toolbox.add_dir(other)
    session = tmp_path / "s.jsonl"
    checkpoints = Checkpoints(workspace, toolbox.ws.resolve, lambda: session, lambda text: None)
    toolbox.watch_changes = checkpoints.watch
    checkpoints.begin(Message.user("go"))
    outcome = toolbox.run(ToolCall("c1", "write_file", json.dumps({"path": str(other / "n.txt"), "content": "x\n"})))
    assert not outcome.is_error and (other / "n.txt").read_text() == "x\n"
    inside = toolbox.run(ToolCall("c2", "write_file", json.dumps({"path": "w.txt", "content": "y\n"})))
    assert not inside.is_error
    recorded = (folder_for(session) / "log.jsonl").read_text() if (folder_for(session) / "log.jsonl").exists() else ""
    paths = [json.loads(line).get("path") for line in recorded.splitlines() if line.strip()]
    assert "w.txt" in paths and not any("n.txt" in str(p) for p in paths)
