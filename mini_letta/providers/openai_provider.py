"""OpenAI Chat Completions, streamed, for OpenAI itself and OpenAI-compatible servers (Ollama, vLLM, ...).

Sent without the ``openai`` SDK: the body is built here as JSON-ready data and posted as bytes
(:mod:`~mini_letta.providers.http_stream`, over httpx2, which the SDK itself uses), and the
reply's chunks are read as JSON. What the SDK did besides is done here the same way: the key and
address from ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID``
as headers, an error body read as its ``error`` object, an error event inside the stream raised.
``import openai`` alone took ~0.8 s of every start, all of it before the first request could go
out (its types are pydantic models).
"""

from __future__ import annotations

import json
import os
from functools import partial
from typing import Any, Iterator

from mini_letta import endings, __version__
from mini_letta.context.window import split_one_million_suffix
from mini_letta.errors import ProviderError
from mini_letta.messages import Message, ToolCall, ToolSpec, Usage, new_id
from mini_letta.providers import errors_map, probe, retry
from mini_letta.providers.http_stream import HttpError, HttpStream, Streamed, provider_error, stream_error
from mini_letta.providers.network import client_timeout
from mini_letta.providers.wire_cache import WireCache
from mini_letta.providers.base import (Done, Request, StreamEvent, TextDelta, ToolCallStarted, encode_body,
                                      function_tools)
from mini_letta.settings import SETTINGS

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Chat Completions finish reasons in the vocabulary the core uses (Anthropic's).
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens"}
# Finish reasons that leave the answer incomplete; every other one (stop, tool_calls, ...) is a finish.
_ENDINGS = {"length": endings.MAX_TOKENS, "content_filter": endings.CONTENT_FILTER, "refusal": endings.REFUSAL}


def _ending(finish: str | None, refused: bool) -> str:
    """``refused``: the reply carried OpenAI's ``refusal`` text, which comes with an ordinary "stop"."""
    if finish is None:
        return endings.CUT
    return endings.REFUSAL if refused else _ENDINGS.get(finish, endings.END)


class OpenAIProvider:
    """``name`` is "openai" or "ollama"; it decides the error hints and how the served window is found."""

    def __init__(self, model: str, *, name: str = "openai", base_url: str | None = None, api_key: str | None = None,
                 timeout: float | None = None, max_retries: int | None = None):
        self.name = name
        self.model = model
        self.key_env = "OLLAMA_API_KEY" if name == "ollama" else "OPENAI_API_KEY"
        self._read_timeout = client_timeout(timeout).read
        # Retries are ours (providers/retry.py), so the user hears of each one.
        self.max_retries = SETTINGS.providers.max_retries if max_retries is None else max_retries
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not self.api_key:
            raise errors_map.missing_key_error(name, self.key_env)
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._http = HttpStream(self._headers(), client_timeout(timeout))
        self._window: int | None = None
        self._window_known = False
        self.served_window_source: str | None = None
        self._wire: WireCache[bytes] = WireCache(lambda message: encode_body(openai_message(message)))

    def _headers(self) -> dict[str, str]:
        """What the SDK sent besides its own telemetry headers (``X-Stainless-*``)."""
        headers = {"Authorization": f"Bearer {self.api_key}", "User-Agent": f"mini-letta/{__version__}"}
        for variable, header in (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")):
            if os.environ.get(variable):
                headers[header] = os.environ[variable]
        return headers

    # --- the request --------------------------------------------------------------------------
    def stream(self, request: Request) -> Iterator[StreamEvent]:
        return retry.with_retries(lambda: self._stream_once(request), self.max_retries)

    def _stream_once(self, request: Request) -> Iterator[StreamEvent]:
        model = request.model or self.model
        body = self.request_body(request, model)
        return retry.attempt(lambda: self._http.post(self.base_url + "/chat/completions", body), (HttpError,),
                             partial(self._map_error, model=model), self._read, self._read_whole)

    def request_body(self, request: Request, model: str) -> bytes:
        """``encode_body(request_params(...))``, byte for byte, with each message serialised once per
        session (:mod:`~mini_letta.providers.wire_cache`) and the fragments joined."""
        head, tail = self._params(request, model)
        fragments = self._wire.forms(request.messages)
        if request.system:
            fragments = [encode_body({"role": "system", "content": request.system}), *fragments]
        return b"".join((encode_body(head)[:-1], b',"messages":[', b",".join(fragments), b"],",
                         encode_body(tail)[1:]))

    def request_params(self, request: Request, model: str) -> dict[str, Any]:
        """The request as JSON-ready data, converted afresh (what ``request_body`` serialises)."""
        head, tail = self._params(request, model)
        return {**head, "messages": to_openai_messages(request.system, request.messages), **tail}

    def _params(self, request: Request, model: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The parameters before the messages and those after them."""
        head = {"model": split_one_million_suffix(model)[0]}
        params: dict[str, Any] = {"stream": True, "stream_options": {"include_usage": True}}
        # OpenAI's newer models refuse `max_tokens`; most compatible servers only know `max_tokens`.
        limit_key = "max_completion_tokens" if "api.openai.com" in self.base_url else "max_tokens"
        params[limit_key] = request.max_tokens
        # OpenAI caches prefixes by itself and routes by this key; compatible servers may reject a
        # parameter they do not know, so only OpenAI gets it.
        if request.cache_key and "api.openai.com" in self.base_url:
            params["prompt_cache_key"] = request.cache_key
        if request.tools:
            params["tools"] = function_tools(request.tools)
        return head, params

    def _read(self, stream: Streamed) -> Iterator[StreamEvent]:
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        aliases: dict[int, int] = {}  # the server's tool-call index -> ours
        usage: Usage | None = None
        finish: str | None = None
        refused = False
        for chunk in stream.events():
            if not isinstance(chunk, dict):
                raise ValueError(f"an event that is not a JSON object: {str(chunk)[:80]}")
            if chunk.get("error"):
                raise stream_error(chunk)
            if isinstance(chunk.get("usage"), dict):
                usage = normalise_usage(chunk["usage"])
            for choice in _dicts(chunk.get("choices")):
                delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
                content = delta.get("content")
                if isinstance(content, str) and content:
                    text.append(content)
                    yield TextDelta(content)
                refusal = delta.get("refusal")
                if isinstance(refusal, str) and refusal:
                    # The model's words on why it declines are its reply, shown like any text.
                    refused = True
                    text.append(refusal)
                    yield TextDelta(refusal)
                for piece in _dicts(delta.get("tool_calls")):
                    started = _add_tool_call_piece(calls, piece, aliases)
                    if started:
                        yield ToolCallStarted(started["id"], started["name"])
                if isinstance(choice.get("finish_reason"), str) and choice["finish_reason"]:
                    finish = choice["finish_reason"]
        # A stream that ends without a finish reason was cut (by the network or the server): what
        # arrived is kept and the message says it is incomplete.
        tool_calls = [ToolCall(c["id"], c["name"], "".join(c["arguments"])) for _, c in sorted(calls.items())]
        message = Message.assistant("".join(text), tool_calls, usage=usage,
                                    stop_reason=_STOP_REASONS.get(finish, finish) if finish else None)
        yield Done(endings.mark(message, _ending(finish, refused)))

    def _read_whole(self, body: bytes) -> Iterator[StreamEvent]:
        """A non-streamed completion, for servers that ignore ``stream``."""
        data = json.loads(body)
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
            raise errors_map.broken_stream_error(self.name, "the server answered with JSON that is not a completion")
        choice = data["choices"][0] if isinstance(data["choices"][0], dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        text = message.get("content") if isinstance(message.get("content"), str) else ""
        refusal = message.get("refusal") if isinstance(message.get("refusal"), str) else ""
        text = text or refusal
        if text:
            yield TextDelta(text)
        calls = []
        for entry in message.get("tool_calls") or []:
            function = entry.get("function") if isinstance(entry, dict) else None
            if isinstance(function, dict) and function.get("name"):
                call = ToolCall(entry.get("id") or new_id("call_"), function["name"], function.get("arguments") or "{}")
                calls.append(call)
                yield ToolCallStarted(call.id, call.name)
        usage = normalise_usage(data["usage"]) if isinstance(data.get("usage"), dict) else None
        finish = choice.get("finish_reason") or ("tool_calls" if calls else "stop")
        reply = Message.assistant(text, calls, usage=usage, stop_reason=_STOP_REASONS.get(finish, finish))
        yield Done(endings.mark(reply, _ending(finish, bool(refusal))))

    def _map_error(self, exc: BaseException, model: str, mid_stream: bool = False) -> ProviderError:
        return provider_error(exc, provider=self.name, base_url=self.base_url, read_timeout=self._read_timeout,
                              key_env=self.key_env, model=model, mid_stream=mid_stream, error_object=True)

    # --- what the server serves --------------------------------------------------------------
    def served_window(self) -> int | None:
        """Best effort, asked once (see :mod:`mini_letta.providers.probe`); sets ``served_window_source``."""
        if not self._window_known:
            served = probe.served_window(self.base_url, self.model, api_key=self.api_key,
                                         load_ollama_model=self.name == "ollama")
            self._window = served.window if served else None
            self.served_window_source = served.source if served else None
            self._window_known = True
        return self._window

    def served_floor(self, system: str, tools: list[ToolSpec]) -> probe.ServedFloor | None:
        return probe.served_floor(self.base_url, system, function_tools(tools), api_key=self.api_key)

    def template_supports_tools(self) -> bool | None:
        return probe.template_supports_tools(self.base_url)

    @property
    def serves_concurrently(self) -> bool:
        return probe.serves_concurrently(self.base_url)

    def listed_models(self) -> list[str]:
        """The model ids the server lists, in its order ([] when it lists none)."""
        return probe.server_models(self.base_url, api_key=self.api_key)


# --- conversion ---------------------------------------------------------------------------------
def to_openai_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    converted: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    converted += [openai_message(message) for message in messages]
    return converted


def openai_message(message: Message) -> dict[str, Any]:
    """One message in the Chat Completions form; each converts on its own (no merging)."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
    if message.role == "assistant":
        entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            entry["tool_calls"] = [{"id": c.id, "type": "function",
                                    "function": {"name": c.name, "arguments": c.arguments}}
                                   for c in message.tool_calls]
        elif not message.text:
            entry["content"] = ""
        return entry
    if message.images:
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
        parts += [{"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}
                  for image in message.images]
        return {"role": "user", "content": parts}
    return {"role": "user", "content": message.text}  # user text and compaction summaries alike


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The JSON objects in a list from the server (a missing or malformed list is none)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def normalise_usage(usage: dict[str, Any]) -> Usage | None:
    """``prompt_tokens`` already includes the cached tokens (llama.cpp reports them the same way):
    split them out so nothing counts twice. Reasoning tokens are part of ``completion_tokens`` but
    never sent back, so they are kept apart from the context size."""
    prompt = _count(usage.get("prompt_tokens"))
    if not prompt:
        return None  # some local servers report zeros or nothing: no anchor, the local count stands
    details = usage.get("prompt_tokens_details")
    cached = min(prompt, _count(details.get("cached_tokens")) if isinstance(details, dict) else 0)
    output = _count(usage.get("completion_tokens"))
    completion_details = usage.get("completion_tokens_details")
    reasoning = _count(completion_details.get("reasoning_tokens")) if isinstance(completion_details, dict) else 0
    return Usage(input_tokens=prompt - cached, cache_read_tokens=cached, output_tokens=output,
                 reasoning_tokens=min(output, reasoning))


def _add_tool_call_piece(calls: dict[int, dict[str, Any]], piece: dict[str, Any],
                         aliases: dict[int, int]) -> dict[str, Any] | None:
    """Merge one streamed tool-call fragment; returns the call when its name first becomes known."""
    server_index = piece.get("index") if isinstance(piece.get("index"), int) else None
    piece_id = piece.get("id") if isinstance(piece.get("id"), str) else ""
    if server_index is not None:
        index = aliases.get(server_index, server_index)
        taken = calls.get(index)
        # Ollama numbers every parallel call 0: a new id at a taken index starts a new call, and
        # later fragments at that index belong to it.
        if taken is not None and piece_id and taken["id"] and piece_id != taken["id"]:
            index = max(calls) + 1
            aliases[server_index] = index
    elif piece_id or not calls:  # servers that omit the index start each call with its id
        index = len(calls)
    else:
        index = max(calls)
    call = calls.setdefault(index, {"id": "", "name": "", "arguments": [], "started": False})
    if piece_id and not call["started"]:
        call["id"] = piece_id
    function = piece.get("function")
    if isinstance(function, dict):
        if isinstance(function.get("name"), str) and function["name"] and not call["name"]:
            call["name"] = function["name"]
        if isinstance(function.get("arguments"), str) and function["arguments"]:
            call["arguments"].append(function["arguments"])
    if call["name"] and not call["started"]:
        call["id"] = call["id"] or new_id("call_")
        call["started"] = True
        return call
    return None
