"""history_repair.repair: what a loaded history becomes before it is sent (pure, no files)."""

from mini_letta.sessions.repair import INTERRUPTED_TEXT, repair
from mini_letta.messages import Message, ToolCall, validity_problems


def test_a_valid_history_comes_back_unchanged():
    call = ToolCall("call_1", "read_file", "{}")
    history = [Message.user("hi", seq=1), Message.assistant("", [call], seq=2),
               Message.tool_result(call, "text", seq=3), Message.assistant("done", seq=4)]
    assert repair(history, 5) == (history, 5, [])


def test_reused_call_ids_pair_each_call_with_the_result_after_it():
    # Some servers and scripted models number calls per reply, so the same id comes back.
    call = ToolCall("call_0", "read_file", '{"path": "x"}')
    first, second = Message.tool_result(call, "first", seq=3), Message.tool_result(call, "second", seq=5)
    history = [Message.user("go", seq=1), Message.assistant("", [call], seq=2), first,
               Message.assistant("", [call], seq=4), second, Message.assistant("", [call], seq=6)]
    repaired, next_seq, dropped = repair(history, 7)
    assert dropped == [] and validity_problems(repaired) == []
    assert [m.text for m in repaired if m.role == "tool"] == ["first", "second", INTERRUPTED_TEXT]
    assert next_seq == 8


def test_a_reply_before_the_first_user_message_goes_with_its_results():
    call = ToolCall("call_a", "glob", "{}")
    history = [Message.assistant("", [call], seq=1), Message.tool_result(call, "files", seq=2),
               Message.user("hello", seq=3)]
    repaired, _, dropped = repair(history, 4)
    assert [m.text for m in repaired] == ["hello"]
    assert dropped == ["a reply (seq 1) before the first user message (and the results of its 1 tool call)"]
