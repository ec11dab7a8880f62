"""A resumed session's conversation as the updates that first showed it (``session/load``): your
messages, the replies, each tool call with its result, and the summary that stands for what a
compaction replaced (as a thought: it is mini-letta's, not the model's words)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from acp import start_tool_call, text_block, tool_content, update_agent_message_text, update_agent_thought_text, \
    update_user_message_text

from mini_letta.acp import tool_calls
from mini_letta.toolbox.builtins import describe_call


def updates(messages, resolve: Callable[[str], Path]) -> Iterator[Any]:
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    for message in messages:
        if message.kind == "summary":
            yield update_agent_thought_text("Earlier conversation, as summarized:\n" + message.text)
        elif message.role == "user":
            if message.text:
                yield update_user_message_text(message.text)
        elif message.role == "assistant":
            if message.text:
                yield update_agent_message_text(message.text)
            for call in message.tool_calls:
                result = results.get(call.id)
                status = "failed" if result is None or result.is_error else "completed"
                content = [tool_content(text_block(result.text))] if result is not None and result.text else None
                yield start_tool_call(call.id, describe_call(call), kind=tool_calls.kind(call.name), status=status,
                                      locations=tool_calls.locations(call, resolve), content=content,
                                      raw_input=tool_calls.arguments(call))
