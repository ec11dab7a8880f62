"""The OpenAI Responses API's wire form: input items from our messages, a reply from output items.

Field names are those of the openai SDK's ``openai.types.responses`` (read, never imported):

- a user message: ``{"type": "message", "role": "user", "content": [input_text, input_image]}``
  (``content`` a plain string when there is only text); a compaction summary is user text;
- an assistant message: the reasoning items it came with (``meta["reasoning"]``), its text as
  ``{"type": "message", "role": "assistant", "content": "..."}`` (with its ``phase`` when the
  server gave one: the codex models want it back), then one ``function_call`` item per tool call;
- a tool result: ``{"type": "function_call_output", "call_id": ..., "output": ...}``.

Reasoning items are sent back only to the model that made them: their ``encrypted_content`` is
sealed for it, and another model rejects the request. Requests go with ``store: false``, so
nothing is kept on OpenAI's side and every item travels whole.

Usage: ``input_tokens`` includes ``input_tokens_details.cached_tokens`` (and
``cache_write_tokens``), as Chat Completions' ``prompt_tokens`` does; they are split out so that
:class:`~mini_letta.messages.Usage` keeps its convention (input excludes the cache).
"""

from __future__ import annotations

import fnmatch
from functools import lru_cache
from typing import Any

from mini_letta import endings
from mini_letta.context.window import split_one_million_suffix
from mini_letta.messages import Message, ToolCall, ToolSpec, Usage, native_of, new_id
from mini_letta.resources import data

PROVIDER = "openai-responses"  # the provider's name, as its compaction items record it
INCLUDE_REASONING = "reasoning.encrypted_content"
# How the Responses API says a model does not reason (so ``include`` must go).
NO_ENCRYPTED_CONTENT = "encrypted content is not supported"
# Incomplete reasons (``incomplete_details.reason``) in the core's vocabulary; others cut the reply.
_INCOMPLETE = {"max_output_tokens": endings.MAX_TOKENS, "content_filter": endings.CONTENT_FILTER}
# The stop reasons kept on the message (Anthropic's names, as the other providers record them).
_STOP_REASONS = {endings.MAX_TOKENS: "max_tokens", endings.CONTENT_FILTER: "content_filter",
                 endings.REFUSAL: "refusal"}


# --- which models ---------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _models() -> dict[str, list[str]]:
    return data("responses_models.json")


def _matches(model: str, key: str) -> bool:
    name = split_one_million_suffix(model)[0].strip().lower()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _models()[key])


def responses_only(model: str) -> bool:
    """Whether OpenAI serves ``model`` by the Responses API alone (``data/responses_models.json``)."""
    return _matches(model, "responses_only")


def reasons(model: str) -> bool:
    """Whether ``model`` returns reasoning items (and so accepts ``include: [reasoning.encrypted_content]``)."""
    return _matches(model, "reasoning") and not _matches(model, "not_reasoning")


# --- our messages as input items ------------------------------------------------------------------
def function_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """``tools`` as Responses function tools: flat, not nested under ``function`` as in Chat Completions."""
    return [{"type": "function", "name": spec.name, "description": spec.description,
             "parameters": spec.parameters, "strict": False} for spec in tools]


def message_items(message: Message, model: str) -> list[dict[str, Any]]:
    """The input items of one message; ``model`` (the id sent) decides whether its reasoning goes."""
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "", "output": message.text}]
    if message.role == "assistant":
        items = list(reasoning_for(message, model))
        if message.text or not message.tool_calls:
            item: dict[str, Any] = {"type": "message", "role": "assistant", "content": message.text}
            if isinstance(message.meta.get("phase"), str):
                item["phase"] = message.meta["phase"]
            items.append(item)
        items += [{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
                  for c in message.tool_calls]
        return items
    if message.images:
        parts: list[dict[str, Any]] = [{"type": "input_text", "text": message.text}] if message.text else []
        parts += [{"type": "input_image", "detail": "auto", "image_url": f"data:{image.media_type};base64,{image.data}"}
                  for image in message.images]
        return [{"type": "message", "role": "user", "content": parts}]
    # User text and summaries alike; a summary the Responses API compacted sends its sealed item first.
    return native_items(message, model) + [{"type": "message", "role": "user", "content": message.text}]


def native_items(message: Message, model: str) -> list[dict[str, Any]]:
    """The compaction items of a summary this API made for ``model`` (``compaction/native.py``)."""
    native = native_of(message)
    if native is None or native.get("provider") != PROVIDER or native.get("model") != model:
        return []
    return [item for item in native["items"] if isinstance(item, dict)]


def reasoning_for(message: Message, model: str) -> list[dict[str, Any]]:
    """The reasoning items ``message`` carries, when they were made by ``model``."""
    kept = message.meta.get("reasoning")
    if not isinstance(kept, dict) or kept.get("model") != model or not isinstance(kept.get("items"), list):
        return []
    return [item for item in kept["items"] if isinstance(item, dict)]


# --- a reply from its output items ---------------------------------------------------------------
class Reply:
    """A reply being assembled from output items (streamed as events, or whole in one body)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[str, dict[str, Any]] = {}  # item id -> {"id": call_id, "name", "arguments"}
        self.reasoning: list[dict[str, Any]] = []
        self.phase: str | None = None
        self.refused = False
        self.usage: Usage | None = None
        self.status: str | None = None  # "completed", "incomplete"; None: the stream never said
        self.incomplete_reason: str | None = None

    def start_call(self, item: dict[str, Any]) -> dict[str, Any] | None:
        """A ``function_call`` item begun; returns the call when it is new."""
        key = str(item.get("id") or item.get("call_id") or len(self.calls))
        if key in self.calls:
            return None
        call = {"id": str(item.get("call_id") or new_id("call_")), "name": str(item.get("name") or ""),
                "arguments": [item["arguments"]] if isinstance(item.get("arguments"), str) and item["arguments"] else []}
        self.calls[key] = call
        return call

    def add_arguments(self, item_id: Any, delta: str) -> None:
        call = self.calls.get(str(item_id))
        if call is not None:
            call["arguments"].append(delta)

    def finish_item(self, item: dict[str, Any]) -> None:
        """An output item as ``response.output_item.done`` (or a whole body) gives it: complete."""
        kind = item.get("type")
        if kind == "reasoning":
            self.reasoning.append({key: item[key] for key in ("type", "id", "summary", "encrypted_content")
                                   if key in item})
        elif kind == "function_call":
            call = self.calls.get(str(item.get("id") or item.get("call_id"))) or self.start_call(item)
            if call is not None and isinstance(item.get("arguments"), str):
                call["arguments"] = [item["arguments"]]  # the whole, whatever the deltas said
        elif kind == "message" and isinstance(item.get("phase"), str):
            self.phase = item["phase"]

    def finish(self, response: dict[str, Any]) -> None:
        """``response.completed`` / ``response.incomplete``: the status, its reason and the usage."""
        self.status = response.get("status") if isinstance(response.get("status"), str) else "completed"
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        self.incomplete_reason = reason if isinstance(reason, str) else None
        if isinstance(response.get("usage"), dict):
            self.usage = normalise_usage(response["usage"])

    def ending(self) -> str:
        if self.status is None:
            return endings.CUT
        if self.status == "incomplete":
            return _INCOMPLETE.get(self.incomplete_reason or "", endings.CUT)
        return endings.REFUSAL if self.refused else endings.END

    def message(self, model: str) -> Message:
        tool_calls = [ToolCall(c["id"], c["name"], "".join(c["arguments"])) for c in self.calls.values()]
        ending = self.ending()
        stop = _STOP_REASONS.get(ending) or ("tool_use" if tool_calls else "end_turn")
        message = Message.assistant("".join(self.text), tool_calls, usage=self.usage,
                                    stop_reason=None if ending == endings.CUT else stop)
        if self.reasoning:
            message.meta["reasoning"] = {"model": model, "items": self.reasoning}
        if self.phase:
            message.meta["phase"] = self.phase
        return endings.mark(message, ending)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def normalise_usage(usage: dict[str, Any]) -> Usage | None:
    """The Responses API's usage in our terms; None when it reports no input (no anchor)."""
    total = _count(usage.get("input_tokens"))
    if not total:
        return None
    details = usage.get("input_tokens_details") if isinstance(usage.get("input_tokens_details"), dict) else {}
    cached = min(total, _count(details.get("cached_tokens")))
    written = min(total - cached, _count(details.get("cache_write_tokens")))
    output = _count(usage.get("output_tokens"))
    out_details = usage.get("output_tokens_details") if isinstance(usage.get("output_tokens_details"), dict) else {}
    return Usage(input_tokens=total - cached - written, cache_read_tokens=cached, cache_write_tokens=written,
                 output_tokens=output, reasoning_tokens=min(output, _count(out_details.get("reasoning_tokens"))))
