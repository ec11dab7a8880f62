"""Provider-neutral, typed conversation messages.

Every provider converts to and from these in its own module; the core (counting, budget,
compaction, the agent loop, sessions) only ever sees these types.

Roles:
- ``user``: text typed by the person, or a compaction summary (``kind == "summary"``).
- ``assistant``: model text plus zero or more tool calls; carries the provider's usage report.
- ``tool``: the result of exactly one tool call, linked by ``tool_call_id``.
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from dataclasses import dataclass, field, fields
from typing import Any, Literal

Role = Literal["user", "assistant", "tool"]
Kind = Literal["normal", "summary"]


def new_id(prefix: str = "") -> str:
    return prefix + uuid.uuid4().hex[:24]


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # the raw JSON text the model produced, possibly invalid

    def parse_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; raises ValueError with a model-readable reason."""
        text = self.arguments.strip() or "{}"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})") from None
        if not isinstance(value, dict):
            raise ValueError("arguments must be a JSON object")
        return value


@dataclass
class Usage:
    """What the provider reported for one reply, normalised across APIs.

    ``input_tokens`` excludes cache reads and writes (Anthropic's convention). The OpenAI adapter
    subtracts ``cached_tokens`` from ``prompt_tokens`` so that nothing is counted twice.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # Part of ``output_tokens`` spent on hidden reasoning, which is never sent back to the model.
    reasoning_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        """Size of the context the reply leaves behind: the whole prompt plus the visible reply."""
        visible_output = max(0, self.output_tokens - self.reasoning_tokens)
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens + visible_output

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def is_empty(self) -> bool:
        """Some local servers report zero usage; such a report is no anchor."""
        return self.prompt_tokens <= 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass
class Image:
    media_type: str  # e.g. "image/png"
    data: str  # base64


@dataclass
class Message:
    role: Role
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    images: list[Image] = field(default_factory=list)
    kind: Kind = "normal"
    usage: Usage | None = None
    stop_reason: str | None = None
    # Position in the session's creation order. Assigned by Conversation.append; a compaction
    # records the sequence number it happened at, and usage on messages created before it is void.
    seq: int = 0
    id: str = field(default_factory=lambda: new_id("msg_"))
    created: float = field(default_factory=time.time)
    # Free-form annotations the core keeps (e.g. {"cleared": True} after L1, {"interrupted": True}).
    meta: dict[str, Any] = field(default_factory=dict)

    # --- constructors -------------------------------------------------------------------------
    @classmethod
    def user(cls, text: str, **kw: Any) -> Message:
        return cls(role="user", text=text, **kw)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: list[ToolCall] | None = None, **kw: Any) -> Message:
        return cls(role="assistant", text=text, tool_calls=list(tool_calls or []), **kw)

    @classmethod
    def tool_result(cls, call: ToolCall, text: str, is_error: bool = False, **kw: Any) -> Message:
        return cls(role="tool", text=text, tool_call_id=call.id, tool_name=call.name, is_error=is_error, **kw)

    # --- serialisation (sessions) -------------------------------------------------------------
    # Both directions run once per message on every save and every resume, so they do only what
    # they must: ``dataclasses.asdict`` deep-copies every field through a generic recursion (about
    # 60% of a resume's time at 5,000 messages); here only the containers are copied.
    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in _MESSAGE_FIELDS}
        data["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls]
        data["images"] = [{"media_type": i.media_type, "data": i.data} for i in self.images]
        usage = self.usage
        data["usage"] = {name: getattr(usage, name) for name in _USAGE_FIELDS} if usage is not None else None
        data["meta"] = copy.deepcopy(self.meta) if self.meta else {}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """The message ``to_dict`` gave; keys it does not know (a newer version's) are left out."""
        complete = data.keys() == _KNOWN_FIELDS
        known = dict(data) if complete else {k: v for k, v in data.items() if k in _KNOWN_FIELDS}
        calls, images, usage = data.get("tool_calls"), data.get("images"), data.get("usage")
        known["tool_calls"] = [ToolCall(**c) for c in calls] if calls else []
        known["images"] = [Image(**i) for i in images] if images else []
        known["usage"] = Usage(**usage) if usage else None
        if not complete:
            return cls(**known)
        # Every field is there, as the writer writes them: the generated __init__ would only
        # assign them one by one (40% of this method's time).
        message = object.__new__(cls)
        message.__dict__ = known
        return message


_MESSAGE_FIELDS = tuple(f.name for f in fields(Message))
_KNOWN_FIELDS = frozenset(_MESSAGE_FIELDS)
_USAGE_FIELDS = tuple(f.name for f in fields(Usage))


@dataclass
class ToolSpec:
    """A tool as the model sees it: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def native_of(message: Message) -> dict[str, Any] | None:
    """The provider's own compaction items a summary message carries (``compaction/native.py``), if any."""
    native = message.meta.get("native") if message.kind == "summary" else None
    return native if isinstance(native, dict) and isinstance(native.get("items"), list) else None


def native_tokens(message: Message) -> int:
    """What those items add to ``message``'s size, as their provider counted them."""
    native = native_of(message)
    tokens = native.get("tokens") if native else 0
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else 0


def tool_call_ids(messages: list[Message]) -> set[str]:
    return {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}


def tool_result_ids(messages: list[Message]) -> set[str]:
    return {m.tool_call_id for m in messages if m.role == "tool" and m.tool_call_id}


def validity_problems(messages: list[Message]) -> list[str]:
    """Why this list would be rejected by OpenAI or Anthropic; empty when both accept it.

    Rules: every tool result directly follows (within its block of results) the assistant message
    that made the call; every tool call has exactly one result; the first message is a user
    message; two assistant messages never touch (Anthropic needs alternation once tool results and
    user messages are merged into one user turn).
    """
    problems: list[str] = []
    if messages and messages[0].role != "user":
        problems.append(f"first message has role {messages[0].role!r}, not 'user'")
    pending: set[str] = set()
    previous_role: str | None = None
    for index, message in enumerate(messages):
        if message.role == "tool":
            if message.tool_call_id not in pending:
                problems.append(f"message {index}: tool result {message.tool_call_id!r} has no open call")
            pending.discard(message.tool_call_id or "")
        else:
            if pending:
                problems.append(f"message {index}: calls {sorted(pending)} have no result")
                pending = set()
            if message.role == "assistant":
                if previous_role == "assistant":
                    problems.append(f"message {index}: two assistant messages in a row")
                ids = [c.id for c in message.tool_calls]
                if len(set(ids)) != len(ids) or any(not i for i in ids):
                    problems.append(f"message {index}: tool call ids missing or repeated")
                pending = set(ids)
        previous_role = message.role
    if pending:
        problems.append(f"calls {sorted(pending)} at the end have no result")
    return problems
