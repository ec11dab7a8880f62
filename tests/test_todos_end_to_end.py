"""The task list through the real command against a fake server: after ``todo_write`` the list is
in every request, the first after each compaction included, and in the first request after ``-c``
(following a ``/compact`` in another process too); ``-p --output-format json`` reports it."""

from __future__ import annotations

import json
from pathlib import Path

from fakes import Reply
from fault_support import session_files
from test_skills_end_to_end import SkillServer, run, sent_text

READS = 16
STEPS = [{"content": "Read the quarterly notes", "status": "completed"},
         {"content": "Draft the regional summary", "status": "in_progress", "activeForm": "Drafting the regional summary"},
         {"content": "Check every figure against notes_7", "status": "pending"}]
MARK = "Check every figure against notes_7"


def todo_call(call_id: str = "call_todo") -> tuple[str, str, str]:
    return (call_id, "todo_write", json.dumps({"todos": STEPS}))


def compactions(home: Path) -> int:
    (path,) = session_files(home)
    return sum(json.loads(line).get("type") == "compaction" for line in path.read_text().splitlines())


def test_the_task_list_is_in_the_first_request_after_two_compactions_and_after_continue(tmp_path, workspace):
    home = tmp_path / "home"
    for index in range(READS):
        (workspace / f"notes_{index}.md").write_text("".join(
            f"Note {index}.{n}: the quarterly figures moved by {n} percent in region {n % 7}.\n" for n in range(260)))
    with SkillServer() as server:
        server.enqueue(Reply(tool_calls=[todo_call()]),
                       *(Reply(tool_calls=[(f"call_{i}", "read_file", json.dumps({"path": f"notes_{i}.md"}))])
                         for i in range(READS)),
                       Reply(text="Drafted."))
        first = run(server, home, workspace, "-p", "summarise the notes", window=8_192)
        assert first["todos"] == STEPS
        assert compactions(home) >= 2
        chats = server.chat_requests()
        # The model's own call falls out of the context at the first compaction; every request after
        # it still carries the list.
        assert MARK not in sent_text(chats[0])
        assert all(MARK in sent_text(body) for body in chats[1:])
        # Across -c: the next request of another process, then after a /compact in yet another.
        server.enqueue(Reply(text="Going on."))
        before = len(server.chat_requests())
        resumed = run(server, home, workspace, "-c", "-p", "go on")
        (after_continue,) = server.chat_requests()[before:]
        assert MARK in sent_text(after_continue)
        assert resumed["todos"] == STEPS
        compacted = run(server, home, workspace, "-c", "-p", "/compact")
        assert compacted["stopped"] == "compacted" and compacted["todos"] == STEPS
        server.enqueue(Reply(text="Still going."))
        before = len(server.chat_requests())
        run(server, home, workspace, "-c", "-p", "go on")
        (after_compact,) = server.chat_requests()[before:]
        assert MARK in sent_text(after_compact)


def test_a_refused_list_changes_nothing_and_the_model_reads_why(tmp_path, workspace):
    home = tmp_path / "home"
    with SkillServer() as server:
        bad = {"todos": [{"content": "Ship it", "status": "done"}]}
        server.enqueue(Reply(tool_calls=[todo_call()]), Reply(tool_calls=[("call_bad", "todo_write", json.dumps(bad))]),
                       Reply(text="Fixed."))
        result = run(server, home, workspace, "-p", "plan it")
        assert result["todos"] == STEPS
        answer = server.chat_requests()[-1]["messages"][-1]
        assert answer["role"] == "tool" and "use one of pending, in_progress, completed" in answer["content"]
