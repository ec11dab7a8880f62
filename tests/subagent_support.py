"""A fake OpenAI server that plays a parent and its subagents: each request is answered by the role
its system prompt shows (the parent, a subagent, the summarizer), so children running side by side
get their own replies whatever order their requests arrive in. It counts with its own tokenizer and
enforces ``n_ctx`` like every fake (tests/fakes)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from fakes import Fault, Reply
from fakes.openai_server import FakeOpenAIServer

SUBAGENT_MARK = "working for another agent"
SUMMARIZER_MARK = "You write context checkpoints"
# The summary request that shares the conversation's cached prefix ends with this instruction.
SHARED_SUMMARY_MARK = "this conversation is about to be compacted"


def system_text(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    content = first.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content)
    return content if first.get("role") in ("system", "developer") else ""


def first_user_text(body: dict[str, Any]) -> str:
    for message in body["messages"]:
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def tool_results(body: dict[str, Any]) -> list[str]:
    return [m.get("content") or "" for m in body["messages"] if m.get("role") == "tool"]


def call(name: str, **arguments: Any) -> tuple[str, str, str]:
    call.counter += 1
    return (f"call_{call.counter}", name, json.dumps(arguments))


call.counter = 0


class TeamServer(FakeOpenAIServer):
    """``parent(body, step)`` and ``child(body, step)`` give each reply; ``step`` counts the replies
    served to that conversation so far (a child is known by its first user message, which survives
    its compactions). Summaries are answered with ``summary``."""

    def __init__(self, parent: Callable[[dict, int], Reply | Fault], child: Callable[[dict, int], Reply | Fault],
                 summary: str = "Summary: the files read so far were audited; findings are in the carry-over."):
        super().__init__()
        self.parent, self.child, self.summary = parent, child, summary
        self._local = threading.local()
        self.steps: dict[str, int] = {}
        self.child_requests: list[dict[str, Any]] = []
        self.parent_requests: list[dict[str, Any]] = []
        self.summary_requests: list[dict[str, Any]] = []

    def serve_completion(self, handler, request) -> None:
        self._local.body = request.body
        super().serve_completion(handler, request)

    def next_reply(self) -> Reply | Fault | None:
        body = self._local.body
        system = system_text(body)
        with self.lock:
            last = body["messages"][-1]
            last_text = last.get("content") if isinstance(last.get("content"), str) else json.dumps(last.get("content"))
            if SUMMARIZER_MARK in system or (last.get("role") == "user" and SHARED_SUMMARY_MARK in (last_text or "")):
                self.summary_requests.append(body)
                return Reply(text=self.summary)
            role = "child" if SUBAGENT_MARK in system else "parent"
            key = role + ":" + (first_user_text(body) if role == "child" else "")
            step = self.steps.get(key, 0)
            self.steps[key] = step + 1
            (self.child_requests if role == "child" else self.parent_requests).append(body)
        return (self.child if role == "child" else self.parent)(body, step)
