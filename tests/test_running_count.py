"""The conversation's running count: the same total as a full count after any sequence of what the
loop, compaction and /rewind do to the list, while an append counts only what it added."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from mini_letta.context.tokens import RunningCount, TokenCounter
from mini_letta.messages import Message, ToolCall


class CountingCounter(TokenCounter):
    """chars/4 counting that keeps how many messages it was asked about."""

    def __init__(self):
        super().__init__(None)
        self.asked = 0

    def count_message(self, message):
        self.asked += 1
        return super().count_message(message)


def _message(index: int, kind: int) -> Message:
    if kind == 0:
        return Message.user(f"question {index} " * (index % 7 + 1))
    if kind == 1:
        return Message.assistant(f"answer {index}", [ToolCall(f"call_{index}", "read_file", '{"path": "a.py"}')])
    return Message.tool_result(ToolCall(f"call_{index}", "read_file", "{}"), "line\n" * (index % 40))


operations = st.lists(st.tuples(st.sampled_from(["append", "append", "append", "clear", "withdraw", "compact",
                                                  "copy", "rewind"]),
                                st.integers(0, 10_000), st.integers(0, 2)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(operations)
def test_the_running_count_is_a_full_count_after_any_appends_replacements_and_compactions(steps):
    counter = TokenCounter(None)
    running = RunningCount(CountingCounter())
    messages: list[Message] = []
    for index, (operation, at, kind) in enumerate(steps):
        if operation == "append" or not messages:
            messages.append(_message(index, kind))  # in place, as Conversation.append
        elif operation == "clear":  # L1: a copy with the text replaced, in a new list
            position = at % len(messages)
            cleared = dataclasses.replace(messages[position], text="[cleared]", meta={"cleared": True})
            messages = messages[:position] + [cleared] + messages[position + 1:]
        elif operation == "withdraw":
            messages = [m for i, m in enumerate(messages) if i != at % len(messages)]
        elif operation == "compact":
            messages = [Message.user(f"summary {index}", kind="summary")] + messages[at % len(messages):]
        elif operation == "copy":  # a request's list(messages)
            messages = list(messages)
        else:  # /rewind: a prefix
            messages = messages[:at % len(messages)]
        assert running.of(messages) == counter.count_messages(messages)


def test_an_append_counts_only_the_new_message_whatever_the_length():
    counting = CountingCounter()
    running = RunningCount(counting)
    messages = [_message(i, i % 3) for i in range(5_000)]
    running.of(messages)
    for index in range(5_000, 5_010):
        messages.append(_message(index, index % 3))
        asked = counting.asked
        running.of(list(messages))  # the request's copy, as the loop passes it
        assert counting.asked - asked == 1
