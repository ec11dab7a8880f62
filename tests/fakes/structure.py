"""The message-structure checks real APIs make, with their own wording (HTTP 400).

A history whose tool calls and results do not pair up (two processes appending to one session
file did that) is rejected by OpenAI and Anthropic on every later request; the fakes reject it too,
so a test that sends one fails the way a user would.
"""

from __future__ import annotations

from typing import Any


def openai_problem(body: dict[str, Any]) -> str | None:
    open_calls: list[str] = []
    for message in body.get("messages") or []:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in open_calls:
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                        "message with 'tool_calls'.")
            open_calls.remove(message["tool_call_id"])
            continue
        if open_calls:
            break
        open_calls = [call.get("id") for call in message.get("tool_calls") or []] if role == "assistant" else []
    if open_calls:
        return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(open_calls)}")
    return None


def anthropic_problem(body: dict[str, Any]) -> str | None:
    messages = body.get("messages") or []
    if messages and messages[0].get("role") != "user":
        return "messages: the first message must use the \"user\" role"
    previous_uses: set[str] = set()
    for index, message in enumerate(messages):
        blocks = message.get("content") if isinstance(message.get("content"), list) else []
        if index and message.get("role") == messages[index - 1].get("role"):
            return f"messages.{index}: roles must alternate between \"user\" and \"assistant\""
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        for position, block in enumerate(blocks):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in previous_uses:
                return (f"messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` "
                        f"blocks: {block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                        "`tool_use` block in the previous message.")
        missing = sorted(previous_uses - set(results))
        if missing:
            return (f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
                    "in the next message.")
        previous_uses = {b.get("id") for b in blocks if b.get("type") == "tool_use"}
    if previous_uses:
        return (f"messages.{len(messages)}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(sorted(previous_uses))}. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message.")
    return None


def responses_problem(body: dict[str, Any]) -> str | None:
    """The Responses API's checks: every output answers a call made before it, every call is answered."""
    calls: set[str] = set()
    answered: set[str] = set()
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            return "Invalid type for 'input': expected an object."
        if item.get("type") == "function_call":
            calls.add(item.get("call_id"))
        elif item.get("type") == "function_call_output":
            if item.get("call_id") not in calls:
                return f"No tool call found for function call output with call_id {item.get('call_id')}."
            answered.add(item.get("call_id"))
    missing = sorted(c for c in calls - answered if c)
    if missing:
        return f"No tool output found for function call {missing[0]}."
    return None
