"""Bad configuration: invalid environment values and options, an unusable user folder, a full disk
while saving, and corrupt memory and session files. Each ends in clear one-line messages, never a
traceback, and loses nothing that was already saved.
"""

from __future__ import annotations

import json

import pytest
from fakes import Reply
from fault_support import Recorder, check_history, cli, error_lines, openai_agent, session_files

from mini_letta.notices import Notices
from mini_letta.memory import memory_path
from mini_letta.sessions.store import load_session


def print_run(server, home, workspace, prompt="hello", *extra, env=None):
    return cli(["-p", prompt, "--provider", "openai", "--base-url", server.base_url, *extra], home=home,
               cwd=workspace, env=env)


BAD_ENV = {
    "CODEAGENT_MAX_CONTEXT_TOKENS": "lots",
    "CODEAGENT_AUTO_COMPACT_WINDOW": "-5",
    "CODEAGENT_MODEL_LIMIT": "0",
    "MINI_LETTA_TIMEOUT": "soon",
    "MINI_LETTA_MAX_RETRIES": "-1",
}


@pytest.mark.bad_input
def test_bad_environment_values_are_each_reported_once_and_ignored(server, tmp_path, workspace):
    server.enqueue(Reply(text="works anyway"))
    completed = print_run(server, tmp_path / "home", workspace, env=BAD_ENV)
    assert completed.returncode == 0 and completed.stdout.strip() == "works anyway"
    lines = error_lines(completed.stderr)
    for name, value in BAD_ENV.items():
        assert sum(f"Ignoring {name}={value!r}" in line for line in lines) == 1, lines


@pytest.mark.parametrize("args, words", [
    (["--provider", "bogus"], "Unknown provider"),
    (["--provider", "openai", "--base-url", "not a url at all"], "is not a server address"),
    (["--provider", "anthropic"], "no API key for anthropic"),
    (["--resume", "no-such-session", "--provider", "demo"], "No session"),
    (["--continue", "--provider", "demo"], "No earlier session"),
], ids=["provider", "base-url", "missing-key", "resume", "continue"])
@pytest.mark.bad_input
def test_bad_options_end_in_one_line(tmp_path, workspace, args, words):
    completed = cli(["-p", "hi", *args], home=tmp_path / "home", cwd=workspace)
    assert completed.returncode != 0
    [line] = error_lines(completed.stderr)
    assert line.startswith("mini-letta: ") and words in line


@pytest.mark.bad_input
def test_empty_api_key_is_a_missing_key(tmp_path, workspace):
    completed = cli(["-p", "hi", "--provider", "openai"], home=tmp_path / "home", cwd=workspace,
                    env={"OPENAI_API_KEY": ""})
    assert completed.returncode == 1
    [line] = error_lines(completed.stderr)
    assert "no API key for openai" in line


@pytest.mark.fault
def test_a_user_folder_that_cannot_be_used_is_one_clear_line(server, tmp_path, workspace):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the data folder should be")
    completed = print_run(server, blocker, workspace)
    assert completed.returncode == 1
    lines = error_lines(completed.stderr)
    assert all(line.startswith("mini-letta: ") for line in lines)
    assert "Cannot create the sessions folder" in lines[-1] and str(blocker) in lines[-1]
    assert blocker.read_text() == "a file where the data folder should be"


@pytest.mark.fault
def test_a_full_disk_while_saving_keeps_the_conversation_and_what_was_saved(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    server.enqueue(Reply(text="saved fine"), Reply(text="not saved"), Reply(text="still talking"))
    agent.run_turn("before the disk fills")
    saved = load_session(agent.session.path).all_messages
    # /dev/full fails every write with ENOSPC, exactly like a full disk.
    agent.session._file = open("/dev/full", "ab")
    events = Recorder()
    assert agent.run_turn("while the disk is full", events).text == "not saved"
    assert agent.run_turn("and after").text == "still talking"
    [notice] = [n for n in events.notices if "disk is full" in n]
    assert "\n" not in notice and notice.count("no longer being saved") == 1 and "No space left" not in notice
    loaded = load_session(agent.session.path)
    assert loaded.warnings == [] and [m.id for m in loaded.all_messages] == [m.id for m in saved]
    assert [m.text for m in agent.conversation.messages if m.role == "user"] == [
        "before the disk fills", "while the disk is full", "and after"]


@pytest.mark.fault
def test_core_memory_that_cannot_be_saved_is_reported_and_the_turn_goes_on(monkeypatch, server, workspace):
    channel = Notices()
    agent = openai_agent(monkeypatch, server, workspace, notices=channel)
    monkeypatch.setattr(agent.memory, "path", agent.memory.path.parent / "full" / "memory.json")
    (agent.memory.path.parent.parent).mkdir(parents=True, exist_ok=True)
    (agent.memory.path.parent).symlink_to("/dev/full")  # every write under it fails
    call = ("m1", "core_memory_append", json.dumps({"label": "human", "content": "likes tea"}))
    server.enqueue(Reply(tool_calls=[call]), Reply(text="noted"))
    assert agent.run_turn("remember I like tea").text == "noted"
    assert any("changed but not saved" in n for n in channel.take())
    assert "likes tea" in agent.memory.render()
    check_history(agent, "remember I like tea")


@pytest.mark.fault
def test_a_corrupt_memory_file_is_set_aside_and_defaults_used(server, tmp_path, workspace):
    home = tmp_path / "home"
    path = memory_path(workspace.resolve(), home)
    path.parent.mkdir(parents=True)
    path.write_text('{"blocks": [ {"label": 12')
    server.enqueue(Reply(text="fine"))
    completed = print_run(server, home, workspace)
    assert completed.returncode == 0 and completed.stdout.strip() == "fine"
    [line] = error_lines(completed.stderr)
    assert "damaged" in line and "defaults" in line
    assert list(path.parent.glob(path.name + ".corrupt-*"))


def start_session(server, home, workspace) -> list:
    server.enqueue(Reply(tool_calls=[("c1", "glob", '{"pattern": "*"}')]), Reply(text="first answer"))
    assert print_run(server, home, workspace, "first prompt").returncode == 0
    return session_files(home)


@pytest.mark.parametrize("damage", ["garbage-line", "torn-tail", "bad-message", "binary-junk"])
@pytest.mark.fault
def test_continue_repairs_a_damaged_session_and_keeps_every_intact_message(server, tmp_path, workspace, damage):
    home = tmp_path / "home"
    [path] = start_session(server, home, workspace)
    intact = [m.id for m in load_session(path).all_messages]
    extra = {"garbage-line": b"{this is not json\n", "torn-tail": b'{"type":"message","message":{"role":"us',
             "bad-message": b'{"type":"message","message":{"role":"wizard","text":"x"}}\n',
             "binary-junk": b"\x00\xff\xfe\x00junk\n"}[damage]
    with open(path, "ab") as file:
        file.write(extra)
    server.enqueue(Reply(text="second answer"))
    completed = print_run(server, home, workspace, "second prompt", "--continue")
    assert completed.returncode == 0 and completed.stdout.strip() == "second answer"
    assert all("line" in line for line in error_lines(completed.stderr))
    loaded = load_session(path)
    ids = [m.id for m in loaded.all_messages]
    assert ids[:len(intact)] == intact and loaded.all_messages[-2].text == "second prompt"
    sent = server.requests_to("/v1/chat/completions")[-1].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["first prompt", "second prompt"]


@pytest.mark.fault
def test_a_session_file_without_a_header_is_skipped_with_a_notice(server, tmp_path, workspace):
    home = tmp_path / "home"
    [path] = start_session(server, home, workspace)
    path.write_bytes(b"\x89PNG not a session at all\n")
    completed = print_run(server, home, workspace, "again", "--continue")
    assert completed.returncode == 1
    lines = error_lines(completed.stderr)
    assert any("no valid header" in line for line in lines) and "No earlier session" in lines[-1]
    listing = cli(["sessions"], home=home, cwd=workspace)
    assert listing.returncode == 0 and "no valid header" in listing.stderr + listing.stdout
