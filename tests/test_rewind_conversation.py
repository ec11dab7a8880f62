"""Going back in the conversation: the context becomes exactly the history before the chosen
message, the session file only grows (a ``rewind`` entry), conversation_search still finds the later
turns, a resumed session starts from the rewound state, and "summarize from here" summarizes only
the later part."""

from __future__ import annotations

from agent_support import make_agent, script, sized_text, tool_call

from mini_letta import config
from mini_letta.app import open_session
from mini_letta.checkpoints.restore import apply
from mini_letta.checkpoints.rewind import code_plan, rewind_conversation, rewind_points, summary_from
from mini_letta.messages import Message
from mini_letta.sessions.store import SessionWriter, load_session, read_history


def agent_with_session(tmp_path, replies, summary="SUMMARY OF THE LATER PART"):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = SessionWriter.create(config.home(), workspace, "scripted", "scripted")
    return make_agent(script(replies, summary=summary), workspace, session=session, checkpoints=True)


def test_conversation_rewind_is_an_entry_and_a_resume_starts_from_the_rewound_state(tmp_path):
    agent = agent_with_session(tmp_path, [Message.assistant("one"), Message.assistant("two"),
                                          Message.assistant("three with zebra")])
    for text in ("first", "second", "third mentions zebra"):
        agent.run_turn(text)
    size_before = agent.session.path.stat().st_size
    before_second = list(agent.conversation.messages[:2])
    points = rewind_points(agent.conversation.messages, agent.checkpoints.store())
    assert [p.message.text for p in points] == ["first", "second", "third mentions zebra"]
    freed = rewind_conversation(agent, points[1].message)
    assert freed > 0
    assert agent.conversation.messages == before_second
    assert agent.session.path.stat().st_size > size_before  # appended, nothing rewritten
    loaded = load_session(agent.session.path)
    assert [m.id for m in loaded.messages_in_context] == [m.id for m in before_second]
    assert any("zebra" in m.text for _, m in read_history(agent.session.path))
    agent.session.close()  # as when the process ends: a resume is the session's next writer
    conversation, writer, _ = open_session(agent.session.path)
    assert [m.text for m in conversation.messages] == ["first", "one"]
    writer.close()


def test_summarize_from_here_keeps_the_earlier_part_verbatim_and_summarizes_only_the_rest(tmp_path):
    seen = []

    def summarizer(request):
        seen.append("\n".join(m.text for m in request.messages))
        return "SUMMARY OF THE LATER PART"

    agent = agent_with_session(tmp_path, [Message.assistant("reply kiwi"), Message.assistant("reply mango"),
                                          Message.assistant("reply papaya")], summary=summarizer)
    for text in ("ask kiwi", "ask mango", "ask papaya"):
        agent.run_turn(text)
    points = rewind_points(agent.conversation.messages, agent.checkpoints.store())
    summary = summary_from(agent, points[1].message)
    rewind_conversation(agent, points[1].message, summary)
    assert [m.text for m in agent.conversation.messages[:2]] == ["ask kiwi", "reply kiwi"]
    assert "SUMMARY OF THE LATER PART" in agent.conversation.messages[2].text
    assert len(agent.conversation.messages) == 3
    assert "mango" in seen[0] and "papaya" in seen[0] and "kiwi" not in seen[0]
    loaded = load_session(agent.session.path)
    assert [m.text for m in loaded.messages_in_context] == [m.text for m in agent.conversation.messages]


def test_the_list_names_the_files_changed_since_each_message_and_code_restore_uses_it(tmp_path):
    agent = agent_with_session(tmp_path, [tool_call("write_file", path="a.txt", content="v1\n"),
                                          Message.assistant("wrote"),
                                          tool_call("write_file", path="b.txt", content="b\n"),
                                          Message.assistant("wrote b")])
    agent.run_turn("make a")
    agent.run_turn("make b")
    points = rewind_points(agent.conversation.messages, agent.checkpoints.store())
    assert points[0].files == ["a.txt", "b.txt"] and points[1].files == ["b.txt"]
    plan = code_plan(agent.checkpoints.store(), agent.workspace, points[0])
    assert {(i.path, i.action) for i in plan.items} == {("a.txt", "delete"), ("b.txt", "delete")}
    assert apply(agent.checkpoints.store(), agent.workspace, plan.items) == []
    assert not (agent.workspace / "a.txt").exists() and not (agent.workspace / "b.txt").exists()


def test_checkpoints_are_private_and_live_next_to_the_session(tmp_path):
    agent = agent_with_session(tmp_path, [tool_call("write_file", path="a.txt", content="secret\n"),
                                          Message.assistant("done")])
    (agent.workspace / "a.txt").write_text("before\n")
    agent.run_turn("change a")
    folder = agent.session.path.with_suffix(".checkpoints")
    assert folder.is_dir() and (folder.stat().st_mode & 0o777) == 0o700
    for path in folder.rglob("*"):
        assert (path.stat().st_mode & 0o777) == (0o700 if path.is_dir() else 0o600), path


def test_a_file_changed_by_someone_else_is_set_apart(tmp_path):
    agent = agent_with_session(tmp_path, [tool_call("write_file", path="a.txt", content="agent\n"),
                                          Message.assistant("done")])
    agent.run_turn("change a")
    (agent.workspace / "a.txt").write_text("the user's own edit\n")
    point = rewind_points(agent.conversation.messages, agent.checkpoints.store())[0]
    plan = code_plan(agent.checkpoints.store(), agent.workspace, point)
    assert [i.path for i in plan.contested] == ["a.txt"] and not plan.safe


def test_messages_compacted_into_the_summary_are_listed_for_their_files(tmp_path):
    # Long replies, so that a summary is smaller than what it replaces.
    agent = agent_with_session(tmp_path, [tool_call("write_file", path="a.txt", content="v1\n"),
                                          Message.assistant(sized_text(600, 1)), Message.assistant(sized_text(600, 2)),
                                          Message.assistant(sized_text(600, 3))])
    for text in ("make a", "second", "third"):
        agent.run_turn(text)
    record = agent.compact_now()
    assert record.layers and agent.conversation.messages[0].kind == "summary"
    in_context = [m.text for m in agent.conversation.messages if m.role == "user" and m.kind == "normal"]
    points = rewind_points(agent.conversation.messages, agent.checkpoints.store(), read_history(agent.session.path))
    assert [p.message.text for p in points if not p.in_context] == \
        [t for t in ("make a", "second", "third") if t not in in_context]
    first = points[0]
    assert first.message.text == "make a" and not first.in_context and first.files == ["a.txt"]
    plan = code_plan(agent.checkpoints.store(), agent.workspace, first)
    assert [(i.path, i.action) for i in plan.items] == [("a.txt", "delete")]
