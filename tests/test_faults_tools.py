"""Tool abuse driven by a model over the real wire: escapes from the workspace, huge and binary
files, floods of output, commands that never end or leave children behind, and print-mode writes.
"""

from __future__ import annotations

import json
import pytest
from fakes import Reply
from fault_support import check_history, cli, openai_agent, session_files, wait_dead

from mini_letta.sessions.store import load_session
from mini_letta.toolbox import deny_with

SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"


@pytest.fixture
def workspace(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "inside.txt").write_text("harmless\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (folder / "link_out.txt").symlink_to(outside / "secret.txt")
    (folder / "dir_out").symlink_to(outside, target_is_directory=True)
    return folder


def call_tool(agent, server, name, arguments, prompt="do it"):
    """One model-made tool call through the real loop; returns the tool result the model reads."""
    server.enqueue(Reply(tool_calls=[("call_t", name, json.dumps(arguments))], chunk_size=200), Reply(text="done"))
    agent.run_turn(prompt)
    [result] = [m for m in agent.conversation.messages[-3:] if m.role == "tool"]
    check_history(agent, prompt)
    return result


ESCAPES = [
    ("read_file", {"path": "../outside/secret.txt"}),
    ("read_file", {"path": "ABS/outside/secret.txt"}),
    ("read_file", {"path": "link_out.txt"}),
    ("read_file", {"path": "dir_out/secret.txt"}),
    ("read_file", {"path": "/etc/passwd"}),
    ("grep", {"pattern": "TOP-SECRET", "path": ".."}),
    ("grep", {"pattern": "TOP-SECRET", "path": "dir_out"}),
    ("edit_file", {"path": "link_out.txt", "old_string": "TOP", "new_string": "PWNED"}),
]


@pytest.mark.parametrize("name, arguments", ESCAPES,
                         ids=["dotdot", "absolute", "symlink-file", "symlink-dir", "etc-passwd", "grep-parent",
                              "grep-symlink-dir", "edit-through-symlink"])
def test_paths_outside_the_workspace_are_refused_and_reveal_nothing(monkeypatch, server, workspace, name,
                                                                      arguments):
    arguments = {k: v.replace("ABS", str(workspace.parent)) for k, v in arguments.items()}
    agent = openai_agent(monkeypatch, server, workspace)
    result = call_tool(agent, server, name, arguments)
    assert result.is_error and "outside the workspace" in result.text
    assert SECRET not in result.text
    assert (workspace.parent / "outside" / "secret.txt").read_text() == SECRET + "\n"


def test_glob_and_grep_of_the_workspace_skip_symlinks_that_point_out(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    found = call_tool(agent, server, "glob", {"pattern": "**/*"})
    assert "inside.txt" in found.text and "secret.txt" not in found.text
    searched = call_tool(agent, server, "grep", {"pattern": "TOP-SECRET"}, prompt="search")
    assert SECRET not in searched.text


@pytest.mark.parametrize("path", ["../escaped.txt", "ABS/escaped.txt", "dir_out/escaped.txt", "link_out.txt"])
def test_writes_outside_the_workspace_are_refused_even_with_approval(monkeypatch, server, workspace, path):
    path = path.replace("ABS", str(workspace.parent))
    agent = openai_agent(monkeypatch, server, workspace)
    result = call_tool(agent, server, "write_file", {"path": path, "content": "pwned"})
    assert result.is_error and "outside the workspace" in result.text
    assert not (workspace.parent / "escaped.txt").exists()
    assert not (workspace.parent / "outside" / "escaped.txt").exists()
    assert (workspace.parent / "outside" / "secret.txt").read_text() == SECRET + "\n"


def test_a_ten_megabyte_file_is_read_within_the_output_cap(monkeypatch, server, workspace):
    line = "x" * 99 + "\n"
    (workspace / "big.log").write_text(line * 100_000)
    (workspace / "one_line.txt").write_text("y" * 10_000_000)
    agent = openai_agent(monkeypatch, server, workspace)
    # The cap in force when each call runs (it follows the room left, so it is smaller afterwards).
    many_cap = agent.tool_output_chars()
    many = call_tool(agent, server, "read_file", {"path": "big.log"})
    single_cap = agent.tool_output_chars()
    single = call_tool(agent, server, "read_file", {"path": "one_line.txt"}, prompt="the long line")
    for result, cap in ((many, many_cap), (single, single_cap)):
        assert not result.is_error and len(result.text) <= cap <= 60_000
    assert "offset" in many.text  # says how to read on


def test_a_binary_file_is_described_not_dumped(monkeypatch, server, workspace):
    (workspace / "image.bin").write_bytes(bytes(range(256)) * 4000)
    agent = openai_agent(monkeypatch, server, workspace)
    result = call_tool(agent, server, "read_file", {"path": "image.bin"})
    assert result.is_error and "looks binary" in result.text and len(result.text) < 300


def test_a_command_printing_fifty_megabytes_keeps_head_and_tail_only(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    command = "echo FIRST; head -c 50000000 /dev/zero | tr '\\0' a; echo; echo LAST"
    cap = agent.tool_output_chars()  # in force when the command runs
    result = call_tool(agent, server, "bash", {"command": command})
    assert len(result.text) <= cap <= 60_000
    assert result.text.startswith("FIRST") and "LAST" in result.text and "cut from the middle" in result.text
    # The session file holds the capped result, not 50 MB.
    assert agent.session.path.stat().st_size < 200_000


@pytest.mark.parametrize("command", [
    "echo $$ > pids; sleep 60",
    "sleep 60 & echo $! > pids; sleep 60 & echo $! >> pids; wait",
    "bash -c 'trap \"\" TERM; echo $$ > pids; sleep 60' ",
    # Commands that close their output and go on: the deadline must not depend on the pipe.
    "echo $$ > pids; exec >/dev/null 2>&1; sleep 60",
    "exec >build.log 2>&1; echo $$ > pids; sleep infinity",
    "sleep 60 >/dev/null 2>&1 & echo $! > pids; exec >&- 2>&-; wait",
], ids=["never-ends", "children", "child-ignoring-sigterm", "closes-its-output", "logs-to-a-file",
        "closes-output-and-waits-on-a-child"])
def test_a_command_that_outlives_its_timeout_is_killed_with_its_children(monkeypatch, server, workspace, command):
    agent = openai_agent(monkeypatch, server, workspace)
    result = call_tool(agent, server, "bash", {"command": command, "timeout": 1})
    assert result.is_error and "timed out after 1 s" in result.text
    pids = [int(p) for p in (workspace / "pids").read_text().split()]
    assert pids and all(wait_dead(pid) for pid in pids)


def test_a_background_child_holding_the_output_open_is_stopped(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    result = call_tool(agent, server, "bash", {"command": "sleep 60 & echo $! > pids; echo started"})
    assert "started" in result.text and "background processes" in result.text
    assert wait_dead(int((workspace / "pids").read_text()))


def test_writes_and_commands_are_denied_without_approval(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace, approver=deny_with("Denied: no."))
    written = call_tool(agent, server, "write_file", {"path": "new.txt", "content": "x"})
    ran = call_tool(agent, server, "bash", {"command": "touch ran.txt"}, prompt="run")
    edited = call_tool(agent, server, "edit_file", {"path": "inside.txt", "old_string": "harmless",
                                                    "new_string": "changed"}, prompt="edit")
    assert all(r.is_error and r.text == "Denied: no." for r in (written, ran, edited))
    assert not (workspace / "new.txt").exists() and not (workspace / "ran.txt").exists()
    assert (workspace / "inside.txt").read_text() == "harmless\n"


@pytest.mark.bad_input
def test_print_mode_refuses_writes_and_commands_unless_yolo(server, tmp_path, workspace):
    # Outside the sandbox (or with none), a command needs approval, which print mode cannot ask for.
    calls = [("c1", "write_file", json.dumps({"path": "new.txt", "content": "hello"})),
             ("c2", "bash", json.dumps({"command": "touch ran.txt", "sandbox": False}))]
    server.enqueue(Reply(tool_calls=calls), Reply(text="could not"))
    home = tmp_path / "home-p"
    args = ["-p", "make files", "--provider", "openai", "--base-url", server.base_url, "--output-format", "json"]
    completed = cli(args, home=home, cwd=workspace)
    assert completed.returncode == 0 and json.loads(completed.stdout)["result"] == "could not"
    assert not (workspace / "new.txt").exists() and not (workspace / "ran.txt").exists()
    results = [m for m in load_session(session_files(home)[0]).all_messages if m.role == "tool"]
    assert len(results) == 2 and all(m.is_error and "--yolo" in m.text for m in results)

    server.enqueue(Reply(tool_calls=calls), Reply(text="made them"))
    completed = cli(args + ["--yolo"], home=home, cwd=workspace)
    assert completed.returncode == 0
    assert (workspace / "new.txt").read_text() == "hello" and (workspace / "ran.txt").exists()
