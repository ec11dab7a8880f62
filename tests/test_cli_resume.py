"""Starting on an earlier session: a bad id is an error before the REPL opens (listing recent
sessions, non-zero exit, with and without a terminal), and --continue skips sessions in which the user
said nothing."""

from __future__ import annotations

import json

import pexpect

from fault_support import cli, session_files
from mini_letta.sessions.store import load_session


def test_a_bad_resume_id_without_a_terminal_fails_and_lists_recent_sessions(tmp_path, workspace):
    home = tmp_path / "home"
    assert cli(["-p", "fix the parser", "--provider", "demo"], home=home, cwd=workspace).returncode == 0
    known = session_files(home)[0].stem
    completed = cli(["-r", "nosuchid"], home=home, cwd=workspace, stdin="")
    assert completed.returncode == 1
    assert "No session 'nosuchid'" in completed.stderr
    assert known in completed.stderr and "fix the parser" in completed.stderr
    assert len(session_files(home)) == 1  # nothing was started


def test_a_bad_resume_id_in_a_terminal_fails_before_the_repl_opens(spawn):
    child = spawn("-r", "nosuchid")
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 1
    assert "No session 'nosuchid'" in child.before
    assert "context left" not in child.before and "›" not in child.before


def test_continue_without_any_conversation_fails_before_the_repl_opens(tmp_path, workspace):
    completed = cli(["--continue"], home=tmp_path / "home", cwd=workspace, stdin="")
    assert completed.returncode == 1
    assert "No earlier session with a conversation" in completed.stderr


def test_continue_skips_a_session_in_which_the_user_said_nothing(tmp_path, workspace):
    home = tmp_path / "home"
    assert cli(["-p", "the real conversation", "--provider", "demo"], home=home, cwd=workspace).returncode == 0
    real = session_files(home)[0]
    header = json.loads(real.read_text().splitlines()[0])
    # A start-and-quit a minute later: a session file with a header and nothing else.
    empty = real.with_name("29991231-235959-ffffff.jsonl")
    empty.write_text(json.dumps(dict(header, id=empty.stem, started="2999-12-31T23:59:59+00:00")) + "\n")
    completed = cli(["--continue", "-p", "and more", "--provider", "demo"], home=home, cwd=workspace)
    assert completed.returncode == 0, completed.stderr
    texts = [m.text for m in load_session(real).all_messages if m.role == "user"]
    assert texts == ["the real conversation", "and more"]
    assert empty.read_text().count("\n") == 1


def _refused_url() -> str:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def test_a_print_run_that_failed_before_any_reply_leaves_no_session_for_continue(tmp_path, workspace):
    home = tmp_path / "home"
    assert cli(["-p", "the real conversation", "--provider", "demo"], home=home, cwd=workspace).returncode == 0
    real = session_files(home)[0]
    failed = cli(["-p", "hi", "--base-url", _refused_url(), "--model", "m", "--output-format", "json"],
                 home=home, cwd=workspace)
    assert failed.returncode == 1 and "nothing is listening there" in failed.stderr
    assert json.loads(failed.stdout)["session_id"] is None
    assert session_files(home) == [real]
    assert {p.stem for p in (home / "sessions").glob("*.lock")} <= {real.stem}  # its lock went with it
    completed = cli(["--continue", "-p", "and more", "--provider", "demo"], home=home, cwd=workspace)
    assert completed.returncode == 0, completed.stderr
    assert [m.text for m in load_session(real).all_messages if m.role == "user"] == ["the real conversation",
                                                                                    "and more"]


def test_continue_skips_a_session_whose_message_never_got_a_reply(tmp_path, workspace):
    home = tmp_path / "home"
    assert cli(["-p", "the real conversation", "--provider", "demo"], home=home, cwd=workspace).returncode == 0
    real = session_files(home)[0]
    lines = real.read_text().splitlines()
    header = json.loads(lines[0])
    first_user = next(line for line in lines[1:] if json.loads(line).get("message", {}).get("role") == "user")
    # A later session (the REPL's, say) whose one message failed: a user message, no reply.
    unanswered = real.with_name("29991231-235959-ffffff.jsonl")
    unanswered.write_text(json.dumps(dict(header, id=unanswered.stem, started="2999-12-31T23:59:59+00:00",
                                          mode="repl")) + "\n" + first_user + "\n")
    completed = cli(["--continue", "-p", "and more", "--provider", "demo"], home=home, cwd=workspace)
    assert completed.returncode == 0, completed.stderr
    assert [m.text for m in load_session(real).all_messages if m.role == "user"][-1] == "and more"


def test_print_sessions_are_marked_in_the_listing(tmp_path, workspace):
    home = tmp_path / "home"
    assert cli(["-p", "from a script", "--provider", "demo"], home=home, cwd=workspace).returncode == 0
    assert json.loads(session_files(home)[0].read_text().splitlines()[0])["mode"] == "print"
    listing = cli(["sessions"], home=home, cwd=workspace, env={"COLUMNS": "150"})
    assert "(-p) from a script" in listing.stdout
