"""A subagent's transcript is written into the parent's session file, redacted, and never loaded
into the parent's context."""

from __future__ import annotations

import threading

from mini_letta.messages import Message
from mini_letta.sessions.store import SessionWriter, load_session
from mini_letta.subagents.transcript import NestedWriter, read_transcripts


def test_child_entries_are_in_the_parents_file_but_not_in_its_context(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-" + "Q7x" * 16)
    parent = SessionWriter.create(tmp_path / "home", tmp_path, "openai", "gpt-test")
    parent.append_message(Message.user("audit the package"))
    lock = threading.Lock()
    child = NestedWriter(parent, "sub_1", {"agent": "explore", "description": "read it"}, lock)
    child.append_message(Message.user("read every file"))
    child.append_message(Message.assistant("the key is " + "sk-proj-" + "Q7x" * 16))
    child.end({"status": "done", "steps": 1})
    child.close()
    parent.append_message(Message.assistant("done"))
    parent.close()

    loaded = load_session(parent.path)
    assert [m.text for m in loaded.messages_in_context] == ["audit the package", "done"]
    assert loaded.warnings == []
    runs = read_transcripts(parent.path)
    entries = runs["sub_1"]
    assert [entry["type"] for entry in entries] == ["header", "message", "message", "end"]
    assert entries[0]["agent"] == "explore" and entries[0]["parent"] == parent.id
    assert Message.from_dict(entries[1]["message"]).text == "read every file"
    assert "[REDACTED]" in Message.from_dict(entries[2]["message"]).text
    assert [m.text for m in loaded.all_messages] == ["audit the package", "done"]
    assert "Q7x" * 16 not in parent.path.read_text()
