"""Sessions: append-only JSONL that survives crashes, resumes from the last compaction, hides secrets."""

import errno
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from mini_letta.notices import Notices
from mini_letta import config
from mini_letta.errors import SessionError
from mini_letta.messages import Message, ToolCall, Usage, validity_problems
from mini_letta.sessions.repair import INTERRUPTED_TEXT
from mini_letta.sessions.store import SessionWriter, load_session
from mini_letta.sessions.listing import find_session, list_sessions, newest_session, session_table


@pytest.fixture
def home():
    return config.home()


@pytest.fixture
def workspace(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def numbered(count, start=1):
    """Alternating user/assistant messages with sequence numbers, as Conversation.append would give."""
    messages = []
    for seq in range(start, start + count):
        if seq % 2:
            messages.append(Message.user(f"question {seq}", seq=seq))
        else:
            messages.append(Message.assistant(f"answer {seq}", seq=seq, usage=Usage(100 * seq, 10)))
    return messages


def dicts(messages):
    return [m.to_dict() for m in messages]


def test_session_id_is_short_sortable_and_the_header_is_first(home, workspace):
    writer = SessionWriter.create(home, workspace, "openai", "gpt-4o")
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", writer.id)
    assert writer.path == home / "sessions" / f"{writer.id}.jsonl"
    header = json.loads(writer.path.read_text().splitlines()[0])
    assert {k: header[k] for k in ("type", "format", "id", "workspace", "provider", "model")} == {
        "type": "header", "format": 1, "id": writer.id, "workspace": str(workspace.resolve()),
        "provider": "openai", "model": "gpt-4o",
    }
    assert header["started"]
    assert writer.path.stat().st_mode & 0o777 == 0o600


def test_messages_round_trip(home, workspace):
    messages = numbered(5)
    with SessionWriter.create(home, workspace, "demo", "demo") as writer:
        for message in messages:
            writer.append_message(message)
    loaded = load_session(writer.path)
    assert dicts(loaded.messages_in_context) == dicts(messages)
    assert dicts(loaded.all_messages) == dicts(messages)
    assert (loaded.next_seq, loaded.boundary_seq, loaded.warnings) == (6, 0, [])
    assert loaded.id == writer.id


def test_compaction_rebuilds_summary_plus_kept_plus_later_messages(home, workspace):
    before = numbered(6)
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    for message in before:
        writer.append_message(message)
    cleared = Message.from_dict(before[4].to_dict())
    cleared.text = "[cleared]"
    summary = Message.user("Summary of earlier work.", kind="summary", seq=8)
    record = {"trigger": "context_pressure", "messages_before": 6, "messages_after": 3}
    writer.append_compaction(record, 7, [summary, cleared, before[5]])
    after = numbered(2, start=9)
    for message in after:
        writer.append_message(message)

    loaded = load_session(writer.path)
    assert dicts(loaded.messages_in_context) == dicts([summary, cleared, before[5], *after])
    assert dicts(loaded.all_messages) == dicts([*before, summary, *after])
    assert loaded.boundary_seq == 7 and loaded.next_seq == 11
    assert loaded.compactions == [dict(record, boundary_seq=7)]
    entry = json.loads(writer.path.read_text().splitlines()[7])
    assert [m["id"] for m in entry["messages"]] == [cleared.id], "unchanged kept messages are not logged again"


def test_the_last_compaction_wins(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    first = numbered(4)
    for message in first:
        writer.append_message(message)
    summary1 = Message.user("first summary", kind="summary", seq=6)
    writer.append_compaction({"trigger": "manual"}, 5, [summary1, first[3]])
    second = numbered(2, start=7)
    for message in second:
        writer.append_message(message)
    summary2 = Message.user("second summary", kind="summary", seq=10)
    writer.append_compaction({"trigger": "context_overflow"}, 9, [summary2, second[1]])
    loaded = load_session(writer.path)
    assert dicts(loaded.messages_in_context) == dicts([summary2, second[1]])
    assert [c["trigger"] for c in loaded.compactions] == ["manual", "context_overflow"]
    assert loaded.boundary_seq == 9


def test_resume_appends_to_the_same_file(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user("one", seq=1))
    writer.close()
    resumed = SessionWriter.open_existing(writer.path)
    resumed.append_message(Message.assistant("two", seq=2))
    resumed.append_memory_edit("human", "append", 12)
    loaded = load_session(writer.path)
    assert [m.text for m in loaded.all_messages] == ["one", "two"]
    assert json.loads(writer.path.read_text().splitlines()[-1]) == {
        "type": "memory_edit", "label": "human", "action": "append", "chars": 12}


def test_compaction_after_resume_logs_only_changed_and_synthetic_messages(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user("go", seq=1))
    writer.append_message(Message.assistant("", [ToolCall("call_x", "bash", "{}")], seq=2))
    writer.close()
    loaded = load_session(writer.path)
    resumed = SessionWriter.open_existing(writer.path, loaded=loaded)
    user, assistant, synthetic = loaded.messages_in_context
    assistant.text = "edited after logging"
    summary = Message.user("summary", kind="summary", seq=loaded.next_seq)
    kept = [user, assistant, synthetic]
    resumed.append_compaction({"trigger": "manual"}, loaded.next_seq + 1, [summary, *kept])
    entry = json.loads(writer.path.read_text().splitlines()[-1])
    assert [m["id"] for m in entry["messages"]] == [assistant.id, synthetic.id]
    reloaded = load_session(writer.path)
    assert dicts(reloaded.messages_in_context) == dicts([summary, *kept])
    assert reloaded.warnings == []


def test_a_resume_takes_each_message_lines_fingerprint_from_the_bytes_it_read(home, workspace, monkeypatch):
    """What the writer would compute for the message as loaded, without serialising it again; a
    message a compaction replaced has none (its line is not the version that counts)."""
    from mini_letta.sessions import store as session

    writer = SessionWriter.create(home, workspace, "demo", "demo")
    call = ToolCall("call_é", "bash", '{"command": "echo ünïcode"}')
    messages = [Message.user("naïve — question", seq=1, meta={"turn": 1}),
                Message.assistant("", [call], seq=2, usage=Usage(120, 7, cache_read_tokens=3)),
                Message.tool_result(call, "ünïcode\n", seq=3)]
    for message in messages:
        writer.append_message(message)
    cleared = Message.from_dict(messages[2].to_dict())
    cleared.text = "[cleared]"
    writer.append_compaction({"trigger": "manual"}, 4, messages[:2] + [cleared])
    writer.close()
    loaded = load_session(writer.path)
    assert loaded.logged[messages[2].id].text == "[cleared]"
    assert set(loaded.fingerprints) == {messages[0].id, messages[1].id}
    for message_id, fingerprint in loaded.fingerprints.items():
        assert fingerprint == session.fingerprint(loaded.logged[message_id].to_dict())
    computed = []
    monkeypatch.setattr(session, "fingerprint", lambda data: computed.append(data["id"]) or "computed")
    resumed = SessionWriter.open_existing(writer.path, loaded=loaded)
    resumed.close()
    assert computed == [messages[2].id]


def test_a_redacted_line_fingerprints_as_the_redacted_message_it_loads_as(home, workspace, monkeypatch):
    from mini_letta.sessions import store as session

    secret = "sk-proj-" + "Zq8" * 16
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user(f"my key is {secret}", seq=1))
    writer.close()
    loaded = load_session(writer.path)
    (message,) = loaded.messages_in_context
    assert secret not in message.text
    assert loaded.fingerprints[message.id] == session.fingerprint(message.to_dict())


_CHILD = """
import sys
from pathlib import Path
from mini_letta.messages import Message
from mini_letta.sessions.store import SessionWriter
writer = SessionWriter.create(Path(sys.argv[1]), sys.argv[2], "demo", "demo")
print(writer.path, flush=True)
index = 0
while True:
    writer.append_message(Message.user(f"entry {index} " + "x" * 50_000, seq=index + 1))
    print(index, flush=True)
    index += 1
"""


def test_sigkill_mid_write_loses_nothing_that_was_fully_written(home, workspace):
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(home), str(workspace)],
                             stdout=subprocess.PIPE, text=True)
    try:
        path = Path(child.stdout.readline().strip())
        reported = [child.stdout.readline() for _ in range(30)]
        assert reported[-1].strip() == "29"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    confirmed = [int(line) for line in child.stdout.read().split()] or [29]
    child.stdout.close()
    size_before = path.stat().st_size

    loaded = load_session(path)
    texts = [m.text.split(" ")[0:2] for m in loaded.all_messages]
    assert texts == [["entry", str(i)] for i in range(len(texts))], "entries are contiguous from the start"
    assert len(texts) >= confirmed[-1] + 1
    assert all(w.startswith(f"line {len(texts) + 2}:") for w in loaded.warnings), loaded.warnings
    assert path.stat().st_size == size_before


def test_a_tool_loop_is_fsynced_once_at_the_end_of_its_turn_and_written_entry_by_entry(home, workspace,
                                                                                          monkeypatch):
    """Each entry is one write (in the file as soon as it is appended: a killed process loses
    nothing appended), but only a durable point pays for an fsync: here the reply that ends the
    turn. A compaction is one too; what is still unsynced is synced on close."""
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[-1])
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    synced.clear()
    turn = [Message.user("read both", seq=1)]
    for step in range(3):
        call = ToolCall(f"call_{step}", "read_file", "{}")
        turn += [Message.assistant("", [call], seq=2 + 2 * step),
                 Message.tool_result(call, f"file {step}", seq=3 + 2 * step)]
    turn.append(Message.assistant("Both read.", seq=8))
    for message in turn:
        writer.append_message(message)
        assert load_session(writer.path).all_messages[-1].id == message.id
        assert len(synced) == (1 if message is turn[-1] else 0)
    writer.append_message(Message.user("and now", seq=9))
    writer.append_compaction({"trigger": "manual"}, 10, [turn[0], turn[-1]])
    assert len(synced) == 2
    writer.append_message(Message.user("one more", seq=11))
    writer.close()
    assert len(synced) == 3


def test_torn_last_line_is_skipped_and_the_next_entry_starts_on_its_own_line(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user("kept", seq=1))
    writer.close()
    with open(writer.path, "ab") as file:
        file.write(b'{"type":"message","message":{"role":"assist')
    loaded = load_session(writer.path)
    assert [m.text for m in loaded.all_messages] == ["kept"]
    assert loaded.warnings == ["line 3: incomplete (the session ended while writing it); skipped"]

    resumed = SessionWriter.open_existing(writer.path)
    resumed.append_message(Message.assistant("after the crash", seq=2))
    loaded = load_session(writer.path)
    assert [m.text for m in loaded.all_messages] == ["kept", "after the crash"]
    assert loaded.warnings == ["line 3: not valid JSON; skipped"]


def test_corrupt_middle_line_is_skipped_with_its_number_and_the_file_is_untouched(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    for message in numbered(4):
        writer.append_message(message)
    lines = writer.path.read_bytes().split(b"\n")
    lines[2] = b'{"type": "message", "mess\x00age": garbage'
    writer.path.write_bytes(b"\n".join(lines))
    raw = writer.path.read_bytes()

    loaded = load_session(writer.path)
    assert [m.text for m in loaded.all_messages] == ["question 1", "question 3", "answer 4"]
    assert loaded.warnings[0] == "line 3: not valid JSON; skipped"
    assert writer.path.read_bytes() == raw


def test_compaction_without_summary_and_a_summary_in_the_middle_round_trip(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    messages = numbered(4)
    for message in messages:
        writer.append_message(message)
    cleared = Message.from_dict(messages[1].to_dict())
    cleared.text = "[cleared]"
    record = {"trigger": "context_pressure", "layers": ["L1"]}
    writer.append_compaction(record, 5, [messages[0], cleared, *messages[2:]])
    merged = Message.user("merged summary", kind="summary", seq=6)
    writer.append_compaction({"trigger": "manual"}, 7, [messages[0], merged, messages[3]])
    loaded = load_session(writer.path)
    assert dicts(loaded.messages_in_context) == dicts([messages[0], merged, messages[3]])
    assert loaded.warnings == []
    assert len(loaded.all_messages) == 5  # four originals and the summary; the cleared copy replaces one


def test_killed_mid_tool_gets_synthetic_error_results(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user("read two files", seq=1))
    calls = [ToolCall("call_a", "read_file", '{"path": "a"}'), ToolCall("call_b", "read_file", '{"path": "b"}')]
    writer.append_message(Message.assistant("", calls, seq=2))
    writer.append_message(Message.tool_result(calls[0], "contents of a", seq=3))
    raw = writer.path.read_bytes()

    loaded = load_session(writer.path)
    last = loaded.messages_in_context[-1]
    assert (last.role, last.tool_call_id, last.is_error, last.text) == ("tool", "call_b", True, INTERRUPTED_TEXT)
    assert validity_problems(loaded.messages_in_context) == []
    assert loaded.next_seq == 5 and last.seq == 4
    assert writer.path.read_bytes() == raw


def test_unanswered_calls_in_the_middle_are_answered_after_a_resume(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user("go", seq=1))
    writer.append_message(Message.assistant("", [ToolCall("call_x", "bash", "{}")], seq=2))
    writer.append_message(Message.user("are you there?", seq=3))
    loaded = load_session(writer.path)
    assert [m.role for m in loaded.messages_in_context] == ["user", "assistant", "tool", "user"]
    assert validity_problems(loaded.messages_in_context) == []


def test_secrets_are_absent_from_the_file_but_kept_in_memory(home, workspace, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "literal-anthropic-key-value")
    secret_key = "sk-proj-Qw3rTy8uIoPaSdFgHjKl1234567890"
    message = Message.user(f"my key is {secret_key} and literal-anthropic-key-value", seq=1)
    call = ToolCall("c1", "bash", json.dumps({"command": "curl -H 'Authorization: Bearer tok_abc123xyz'"}))
    assistant = Message.assistant("", [call], seq=2)
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(message)
    writer.append_message(assistant)
    raw = writer.path.read_bytes()
    for secret in (secret_key, "literal-anthropic-key-value", "tok_abc123xyz"):
        assert secret.encode() not in raw
    assert raw.count(b"[REDACTED]") == 3
    assert secret_key in message.text and "tok_abc123xyz" in assistant.tool_calls[0].arguments


def test_list_sessions_newest_first_with_summaries(home, workspace, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    paths = []
    for index, (ws, started) in enumerate([(workspace, "2026-01-01T10:00:00+00:00"),
                                           (other, "2026-01-02T10:00:00+00:00"),
                                           (workspace, "2026-01-03T10:00:00+00:00")]):
        writer = SessionWriter.create(home, ws, "demo", "demo")
        writer.header["started"] = started
        lines = writer.path.read_text().splitlines()
        writer.path.write_text(json.dumps(writer.header) + "\n" + "\n".join(lines[1:]))
        writer.append_message(Message.user(f"prompt {index}", seq=1))
        writer.append_message(Message.assistant("x" * 400, seq=2, usage=Usage(1000 + index, 50)))
        paths.append(writer.path)

    everything = list_sessions(home)
    assert [s.path for s in everything] == paths[::-1]
    mine = list_sessions(home, workspace)
    assert [s.first_prompt for s in mine] == ["prompt 2", "prompt 0"]
    assert [(s.message_count, s.tokens) for s in mine] == [(2, 1052), (2, 1050)]
    assert newest_session(home, workspace) == paths[2]
    assert newest_session(home, tmp_path) is None


def test_newest_session_reads_headers_and_loads_no_session_the_writer_wrote(home, workspace, tmp_path,
                                                                           monkeypatch):
    """``-c`` asks before the prompt is drawn: it must not load every session there is (nor the
    one it picks: the start-up loads that one)."""
    from mini_letta.sessions import listing as session_list

    other = tmp_path / "elsewhere"
    other.mkdir()
    made = []
    for day, (ws, replied) in enumerate(((workspace, True), (other, True), (workspace, True), (workspace, False))):
        writer = SessionWriter.create(home, ws, "demo", "demo")
        writer.header["started"] = f"2026-01-0{day + 1}T10:00:00+00:00"
        writer.path.write_text(json.dumps(writer.header) + "\n")
        writer.append_message(Message.user("a question", seq=1))
        if replied:
            writer.append_message(Message.assistant("an answer", seq=2))
        writer.close()
        made.append(writer.path)
    loads = []
    real_load = session_list.load_session
    monkeypatch.setattr(session_list, "load_session", lambda path: loads.append(path) or real_load(path))
    assert newest_session(home, workspace) == made[2]
    assert loads == [made[3]]  # the newest, with no reply: loaded to be sure, then passed over


def test_tokens_fall_back_to_a_chars_estimate_without_usage(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user("y" * 401, seq=1))
    assert list_sessions(home)[0].tokens == 101


def test_usage_from_before_the_last_compaction_is_not_reported(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    old = Message.assistant("z" * 40, seq=2, usage=Usage(90_000, 100))
    writer.append_message(Message.user("q", seq=1))
    writer.append_message(old)
    writer.append_compaction({"trigger": "manual"}, 3, [Message.user("s" * 80, kind="summary", seq=4), old])
    assert list_sessions(home)[0].tokens == 30  # (80 + 40) chars / 4


def test_header_only_session_is_listed_and_a_corrupt_header_is_skipped_with_a_notice(home, workspace):
    empty = SessionWriter.create(home, workspace, "demo", "demo")
    broken = home / "sessions" / "20200101-000000-bad000.jsonl"
    broken.write_text('{"type": "head\n{"type":"message"}\n')
    channel = Notices()
    summaries = list_sessions(home, say=channel.say)
    assert [(s.id, s.message_count, s.first_prompt) for s in summaries] == [(empty.id, 0, "")]
    notices = channel.take()
    assert len(notices) == 1 and "no valid header" in notices[0] and broken.name in notices[0]
    with pytest.raises(SessionError, match="no valid header"):
        load_session(broken)


def test_find_session_by_id_or_unique_prefix(home, workspace):
    folder = home / "sessions"
    folder.mkdir(parents=True)
    ids = ["20260101-100000-aaaaaa", "20260101-100000-abbbbb", "20260102-090000-cccccc"]
    for session_id in ids:
        (folder / f"{session_id}.jsonl").write_text(json.dumps({"type": "header", "id": session_id}) + "\n")
    assert find_session(home, ids[2]) == folder / f"{ids[2]}.jsonl"
    assert find_session(home, "20260102") == folder / f"{ids[2]}.jsonl"
    with pytest.raises(SessionError, match="ambiguous: it matches 20260101-100000-abbbbb, 20260101-100000-aaaaaa"):
        find_session(home, "20260101-100000-a")
    with pytest.raises(SessionError) as info:
        find_session(home, "1999")
    assert str(info.value).startswith(f"No session '1999'. Recent sessions: {ids[2]}")
    assert ids[1] in str(info.value) and ids[0] in str(info.value)
    assert str(info.value).endswith("resume one with `mini-letta -r <id>`.")


def test_find_session_with_no_sessions_says_so(home):
    with pytest.raises(SessionError, match="there are no saved sessions yet"):
        find_session(home, "2026")


class FullDisk:
    """A session file on a disk that fills up after ``room`` bytes (part of a write may land)."""

    def __init__(self, path, room):
        self.file = open(path, "ab")
        self.room = room

    def write(self, data):
        if len(data) > self.room:
            self.file.write(data[: self.room])
            self.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.file.write(data)

    def flush(self):
        self.file.flush()

    def fileno(self):
        return self.file.fileno()

    def close(self):
        self.file.close()


def test_disk_full_raises_session_error_and_a_later_write_starts_a_clean_line(home, workspace):
    disks = []

    def opener(path, mode):
        disks.append(FullDisk(path, room=600))
        return disks[-1]

    writer = SessionWriter.create(home, workspace, "demo", "demo", file_opener=opener)
    writer.append_message(Message.user("fits", seq=1))
    with pytest.raises(SessionError) as info:
        writer.append_message(Message.user("does not fit " * 40, seq=2))
    assert str(info.value) == f"Cannot save to session file {writer.path}: the disk is full."
    disks[0].room = 10_000  # space was freed
    writer.append_message(Message.user("after space was freed", seq=3))
    loaded = load_session(writer.path)
    assert [m.text for m in loaded.all_messages] == ["fits", "after space was freed"]
    assert loaded.warnings == ["line 3: not valid JSON; skipped"]


def test_disk_full_while_creating_raises_session_error(home, workspace):
    def opener(path, mode):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(SessionError, match="Cannot create session file .*No space left on device"):
        SessionWriter.create(home, workspace, "demo", "demo", file_opener=opener)


def test_unusable_sessions_folder_raises_session_error(home, workspace):
    home.mkdir(parents=True)
    (home / "sessions").write_text("a file where the folder should be")  # fails for root too
    with pytest.raises(SessionError, match="Cannot create the sessions folder"):
        SessionWriter.create(home, workspace, "demo", "demo")
    with pytest.raises(SessionError, match="Cannot read the sessions folder"):
        list_sessions(home)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permission bits")
def test_read_only_session_file_raises_session_error_on_resume(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.close()
    writer.path.chmod(0o400)
    with pytest.raises(SessionError, match="Cannot open session file .* for writing"):
        SessionWriter.open_existing(writer.path)


def test_missing_sessions_folder_lists_nothing(home):
    assert list_sessions(home) == []


def test_session_table_shows_one_row_per_session(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user("fix the\nflaky test " + "w" * 100, seq=1))
    console = Console(record=True, width=200)
    console.print(session_table(list_sessions(home)))
    text = console.export_text()
    assert writer.id in text
    assert "fix the flaky test " + "w" * 40 in text and "w" * 100 not in text


def test_valid_json_that_is_not_a_message_is_skipped_with_a_warning(home, workspace):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user("fine", seq=1))
    with open(writer.path, "a") as file:
        file.write('{"type":"message","message":{"role":"robot","text":"?"}}\n')
        file.write('{"type":"message","message":{"role":"user","seq":"seven"}}\n')
    loaded = load_session(writer.path)
    assert [m.text for m in loaded.all_messages] == ["fine"]
    assert loaded.warnings == ["line 3: malformed message; skipped", "line 4: malformed message; skipped"]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(min_value=0.0, max_value=1.0))
def test_a_file_cut_at_any_byte_loads_every_complete_entry(home, workspace, cut):
    folder = home / "sessions"
    source = next(folder.glob("source*"), None)
    if source is None:
        writer = SessionWriter.create(home, workspace, "demo", "demo")
        for message in numbered(6):
            writer.append_message(message)
        writer.close()
        source = writer.path.rename(folder / "source.jsonl")
    raw = source.read_bytes()
    end = int(len(raw) * cut)
    target = folder / "cut.jsonl"
    target.write_bytes(raw[:end])
    complete_lines = raw[:end].count(b"\n")
    if complete_lines == 0 and not raw[:end].strip().endswith(b"}"):
        with pytest.raises(SessionError):
            load_session(target)
        return
    loaded = load_session(target)
    texts = [m.text for m in loaded.all_messages]
    assert texts == [m.text for m in numbered(6)][: len(texts)]
    assert len(texts) >= complete_lines - 1
