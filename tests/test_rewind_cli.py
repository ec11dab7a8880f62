"""``mini-letta rewind`` for scripts: --list numbers the messages with the files changed since,
--to N --code-only restores the files, --to N also rewinds the conversation (--continue resumes
there), and a file changed by someone else is named and left alone."""

from __future__ import annotations

import pytest

from fault_support import cli, session_files
from mini_letta.sessions.store import load_session


def run_prompts(home, workspace, *prompts):
    first, *rest = prompts
    assert cli(["-p", first, "--provider", "demo", "--yolo"], home=home, cwd=workspace).returncode == 0
    for prompt in rest:
        done = cli(["-c", "-p", prompt, "--provider", "demo", "--yolo"], home=home, cwd=workspace)
        assert done.returncode == 0, done.stderr


def test_list_then_code_only_then_conversation(tmp_path, workspace):
    home = tmp_path / "home"
    (workspace / "a.txt").write_text("original\n")
    run_prompts(home, workspace, "write a.txt: first change", "write b.txt: created")
    listing = cli(["rewind", "--list"], home=home, cwd=workspace)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert "write a.txt: first change" in lines[0] and "2 files changed since: a.txt, b.txt" in lines[0]
    assert "write b.txt: created" in lines[1] and "1 file changed since: b.txt" in lines[1]

    code_only = cli(["rewind", "--to", "1", "--code-only"], home=home, cwd=workspace)
    assert code_only.returncode == 0, code_only.stderr
    assert (workspace / "a.txt").read_text() == "original\n" and not (workspace / "b.txt").exists()
    session = session_files(home)[0]
    assert len(load_session(session).messages_in_context) > 2  # the conversation was left as it was

    both = cli(["rewind", "--to", "2"], home=home, cwd=workspace)
    assert both.returncode == 0, both.stderr
    assert "write b.txt: created" in both.stdout
    assert [m.text for m in load_session(session).messages_in_context if m.role == "user"] == \
        ["write a.txt: first change"]


def test_a_file_changed_by_someone_else_is_left_unless_asked(tmp_path, workspace):
    home = tmp_path / "home"
    run_prompts(home, workspace, "write a.txt: agent")
    (workspace / "a.txt").write_text("my own edit\n")
    kept = cli(["rewind", "--to", "1", "--code-only"], home=home, cwd=workspace)
    assert kept.returncode == 1
    assert "Left a.txt as it is" in kept.stdout
    assert (workspace / "a.txt").read_text() == "my own edit\n"
    forced = cli(["rewind", "--to", "1", "--code-only", "--overwrite-changed"], home=home, cwd=workspace)
    assert forced.returncode == 0
    assert not (workspace / "a.txt").exists()


def test_a_message_number_out_of_range_is_one_clear_line(tmp_path, workspace):
    home = tmp_path / "home"
    run_prompts(home, workspace, "hello")
    done = cli(["rewind", "--to", "5"], home=home, cwd=workspace)
    assert done.returncode == 1
    assert done.stderr.strip() == ("mini-letta: --to 5: this session has messages 1 to 1 "
                                   "(see `mini-letta rewind --list`).")


def test_print_mode_says_once_that_commands_are_not_covered_outside_git(tmp_path, workspace):
    done = cli(["-p", "run echo hi", "--provider", "demo", "--yolo"], home=tmp_path / "home", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("not in a git work tree") == 1


def test_a_session_open_in_another_process_is_not_rewound(tmp_path, workspace):
    import subprocess
    import sys

    from test_session_lock import HOLD_LOCK

    home = tmp_path / "home"
    (workspace / "a.txt").write_text("original\n")
    run_prompts(home, workspace, "write a.txt: changed")
    session = session_files(home)[0]
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(session)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        refused = cli(["rewind", "--to", "1"], home=home, cwd=workspace)
    finally:
        holder.kill()
        holder.wait()
    assert refused.returncode == 1
    assert f"is open in another mini-letta process (pid {holder.pid}" in refused.stderr
    assert (workspace / "a.txt").read_text() != "original\n"  # nothing restored
    assert len(load_session(session).messages_in_context) > 1


def git_workspace(workspace):
    import os
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "U", "GIT_AUTHOR_EMAIL": "u@example.invalid",
           "GIT_COMMITTER_NAME": "U", "GIT_COMMITTER_EMAIL": "u@example.invalid"}
    subprocess.run("git init -q && echo kept > other.txt && git add -A && git commit -qm one", shell=True,
                   cwd=workspace, env=env, check=True)


UNSANDBOXED = {"MINI_LETTA_SANDBOX": "off"}


@pytest.mark.parametrize("next_turn", ["run echo appended >> f.txt", "write f.txt: the agent again"])
def test_a_hand_edit_between_two_turns_is_named_and_kept_unless_forced(tmp_path, workspace, next_turn):
    home = tmp_path / "home"
    git_workspace(workspace)
    run_prompts(home, workspace, "write f.txt: the agent")
    (workspace / "f.txt").write_text("my own edit\n")
    done = cli(["-c", "-p", next_turn, "--provider", "demo", "--yolo"], home=home, cwd=workspace, env=UNSANDBOXED)
    assert done.returncode == 0, done.stderr
    changed = (workspace / "f.txt").read_text()
    assert changed != "my own edit\n"

    kept = cli(["rewind", "--to", "1", "--code-only"], home=home, cwd=workspace)
    assert kept.returncode == 1
    assert "Left f.txt as it is: it was changed since by someone else (--force restores it too)." in kept.stdout
    assert (workspace / "f.txt").read_text() == changed
    forced = cli(["rewind", "--to", "1", "--code-only", "--force"], home=home, cwd=workspace)
    assert forced.returncode == 0, forced.stdout
    assert not (workspace / "f.txt").exists()  # as it was at message 1: not there yet
    assert "Restored 1 file as it was at message 1." in forced.stdout


def test_an_empty_nested_repository_does_not_stop_snapshots_and_the_rewind_restores(tmp_path, workspace):
    home = tmp_path / "home"
    git_workspace(workspace)
    done = cli(["-p", "run git init -q nested && echo changed > other.txt", "--provider", "demo", "--yolo"],
               home=home, cwd=workspace, env=UNSANDBOXED)
    assert done.returncode == 0 and "git failed" not in done.stderr, done.stderr
    listing = cli(["rewind", "--list"], home=home, cwd=workspace)
    assert "1 file changed since: other.txt" in listing.stdout and "snapshotted" not in listing.stdout
    restored = cli(["rewind", "--to", "1", "--code-only"], home=home, cwd=workspace)
    assert restored.returncode == 0, restored.stdout
    assert (workspace / "other.txt").read_text() == "kept\n"


def test_a_failed_snapshot_is_in_the_list_and_the_rewind_past_it_exits_non_zero(tmp_path, workspace):
    home = tmp_path / "home"
    git_workspace(workspace)
    (workspace / ".git" / "index").write_bytes(b"not an index")  # git can read nothing of it
    done = cli(["-p", "run echo changed > other.txt", "--provider", "demo", "--yolo"], home=home, cwd=workspace,
               env=UNSANDBOXED)
    assert "No checkpoint before this command: git failed" in done.stderr
    listing = cli(["rewind", "--list"], home=home, cwd=workspace)
    assert "1 command since could not be snapshotted (git failed)" in listing.stdout
    rewound = cli(["rewind", "--to", "1", "--code-only"], home=home, cwd=workspace)
    assert rewound.returncode == 1
    assert "Not all could be restored: 1 command since could not be snapshotted" in rewound.stdout
