"""FIFOs, sockets and devices in the workspace are refused at once by every tool that reads or writes
files: opening a FIFO waits for a writer, so a tool that tried would hang the agent."""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest

from mini_letta.messages import ToolCall
from mini_letta.toolbox import Toolbox, approve_all
from mini_letta.toolbox.files import special_kind

# Far longer than any of these calls takes; only a call that blocks on the FIFO reaches it.
HANG = 20


@pytest.fixture
def box(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("needle in a file\n")
    os.mkfifo(root / "pipe")
    os.mkfifo(root / "pipe.txt")
    return Toolbox(root, approve_all)


def run(box, name, **arguments):
    """Run the tool in a thread so that a blocked call fails the test instead of hanging the suite."""
    result = {}
    worker = threading.Thread(target=lambda: result.update(
        outcome=box.run(ToolCall("c1", name, json.dumps(arguments)))), daemon=True)
    worker.start()
    worker.join(HANG)
    assert "outcome" in result, f"{name} blocked on a special file"
    return result["outcome"]


def test_read_file_refuses_a_fifo(box):
    outcome = run(box, "read_file", path="pipe")
    assert outcome.is_error and "FIFO" in outcome.text and "not a regular file" in outcome.text


def test_read_file_refuses_a_device_and_a_socket(box, tmp_path):
    os.symlink("/dev/zero", box.workspace / "zero")  # a link inside pointing out is refused anyway
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(box.workspace / "sock"))
        outcome = run(box, "read_file", path="sock")
    assert outcome.is_error and "socket" in outcome.text
    assert run(box, "read_file", path="zero").is_error
    # The link above is refused for leaving the workspace; the device check itself, on a device:
    assert special_kind(os.stat("/dev/null").st_mode) == "a character device"


def test_grep_skips_fifos_in_a_folder_and_refuses_one_named_directly(box):
    outcome = run(box, "grep", pattern="needle")
    assert not outcome.is_error and "notes.txt:1: needle in a file" in outcome.text
    named = run(box, "grep", pattern="needle", path="pipe")
    assert named.is_error and "FIFO" in named.text


def test_glob_lists_only_regular_files(box):
    outcome = run(box, "glob", pattern="*")
    assert outcome.text.splitlines() == ["notes.txt"]
    assert run(box, "glob", pattern="pipe.txt").text == "No files match pipe.txt."


def test_edit_and_write_refuse_a_fifo(box):
    edited = run(box, "edit_file", path="pipe.txt", old_string="a", new_string="b")
    assert edited.is_error and "FIFO" in edited.text
    written = run(box, "write_file", path="pipe.txt", content="data\n")
    assert written.is_error and "FIFO" in written.text


def test_a_write_to_a_fifo_is_refused_before_anyone_is_asked(box):
    asked = []
    box.approver = lambda call, summary: asked.append(call) or True
    outcome = run(box, "edit_file", path="pipe.txt", old_string="a", new_string="b")
    assert outcome.is_error and "FIFO" in outcome.text
    assert asked == []


def test_the_approval_diff_does_not_read_a_fifo(box):
    from mini_letta.repl.diffs import change_preview

    call = ToolCall("c1", "write_file", json.dumps({"path": "pipe.txt", "content": "x\n"}))
    result = {}
    worker = threading.Thread(target=lambda: result.update(preview=change_preview(call, box.ws.resolve)), daemon=True)
    worker.start()
    worker.join(HANG)
    assert "preview" in result, "the diff blocked on a FIFO"
