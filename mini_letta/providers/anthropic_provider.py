"""Anthropic Messages API, streamed. The only module that imports ``anthropic`` (about a second to import).

The wire form (merged turns, empty blocks filled, cache breakpoints) is :mod:`~mini_letta.providers.anthropic_wire`'s.
"""

from __future__ import annotations

import json
import threading
from functools import partial
from typing import Any, Iterator

import anthropic
import httpx2
from anthropic.types import Message as AnthropicMessage
from anthropic.types import RawMessageStreamEvent

from mini_letta import endings
from mini_letta.context.window import split_one_million_suffix
from mini_letta.errors import AuthenticationError, ProviderError
from mini_letta.messages import Message, ToolCall, ToolSpec, Usage
from mini_letta.providers import errors_map, probe, retry
from mini_letta.providers.anthropic_wire import (encode_messages, message_form, min_cacheable_tokens,
                                                 place_breakpoints, system_blocks, to_anthropic_messages)
from mini_letta.providers.network import MAX_RETRIES, client_timeout
from mini_letta.providers.wire_cache import WireCache
from mini_letta.providers.base import (Done, Request, StreamEvent, TextDelta, ToolCallStarted, encode_body,
                                      function_tools)

# The API's opt-in to a 1M-token window, asked for by a ``[1m]`` suffix on the model name.
ONE_MILLION_BETA = "context-1m-2025-08-07"
# Stop reasons that leave the answer incomplete; end_turn, tool_use, stop_sequence, pause_turn finish it.
_ENDINGS = {"max_tokens": endings.MAX_TOKENS, "model_context_window_exceeded": endings.MAX_TOKENS,
            "refusal": endings.REFUSAL}


# A reply with text, a tool call and usage, for ``warm``: every event a real reply is parsed into.
_WARM_EVENTS = b"".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in (
    {"type": "message_start", "message": {"id": "msg_warm", "type": "message", "role": "assistant", "model": "warm",
                                          "content": [], "stop_reason": None, "stop_sequence": None,
                                          "usage": {"input_tokens": 1, "output_tokens": 1,
                                                    "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1,
     "content_block": {"type": "tool_use", "id": "toolu_warm", "name": "warm", "input": {}}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
     "usage": {"output_tokens": 2}},
    {"type": "message_stop"},
))


class AnthropicProvider:
    name = "anthropic"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float | None = None, max_retries: int | None = None):
        self.model = model
        self._read_timeout = client_timeout(timeout).read
        # Retries are ours (providers/retry.py), so the user hears of each one.
        self.max_retries = MAX_RETRIES if max_retries is None else max_retries
        # Left unset, the SDK reads ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN / ANTHROPIC_BASE_URL itself.
        try:
            self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=client_timeout(timeout),
                                               max_retries=0)
        except anthropic.AnthropicError as exc:  # a configured credentials profile that cannot be read
            raise AuthenticationError(f"no usable credentials for anthropic ({errors_map.one_line(str(exc))}): "
                                      f"set {self.key_env} or pass --provider demo.", provider=self.name) from None
        if self._client.api_key is None and self._client.auth_token is None and self._client.credentials is None:
            raise errors_map.missing_key_error(self.name, self.key_env)
        self.base_url = str(self._client.base_url).rstrip("/")
        self._window: int | None = None
        self._window_known = False
        self.served_window_source: str | None = None
        self._wire: WireCache[tuple[str, list[tuple[bytes, int]]]] = WireCache(message_form)
        # Held by ``warm``; a reply is read only once no warm-up is under way in another thread
        # (the start-up's), since pydantic's building of a model is not thread-safe.
        self._warming = threading.RLock()

    def served_window(self) -> int | None:
        """Asked once of a server that is not Anthropic's own (llama-server, Ollama and LM Studio also
        speak this API); Anthropic serves every model at its full window, which the table knows."""
        if not self._window_known:
            served = probe.served_window(self.base_url, self.model, api="anthropic", api_key=self._probe_key())
            self._window = served.window if served else None
            self.served_window_source = served.source if served else None
            self._window_known = True
        return self._window

    def served_floor(self, system: str, tools: list[ToolSpec]) -> probe.ServedFloor | None:
        """llama-server renders an Anthropic request through the same chat template as an OpenAI
        one, so it is asked in the OpenAI shape."""
        return probe.served_floor(self.base_url, system, function_tools(tools), api="anthropic",
                                  api_key=self._probe_key())

    def template_supports_tools(self) -> bool | None:
        return probe.template_supports_tools(self.base_url)

    @property
    def serves_concurrently(self) -> bool:
        return probe.serves_concurrently(self.base_url)

    def listed_models(self) -> list[str]:
        """The model ids the server lists, in its order ([] when it lists none)."""
        return probe.server_models(self.base_url, api="anthropic", api_key=self._probe_key())

    def _probe_key(self) -> str | None:
        return self._client.api_key or self._client.auth_token

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        return retry.with_retries(lambda: self._stream_once(request), self.max_retries)

    def _stream_once(self, request: Request) -> Iterator[StreamEvent]:
        model = request.model or self.model
        body = self.request_body(request, model)
        headers = {"anthropic-beta": ONE_MILLION_BETA} if split_one_million_suffix(model)[1] else {}
        return retry.attempt(lambda: self._send(body, headers), anthropic.AnthropicError,
                             partial(self._map_error, model=model), self._read, self._read_whole)

    def _send(self, body: bytes, headers: dict[str, str]) -> anthropic.Stream[RawMessageStreamEvent]:
        """What ``messages.create(stream=True)`` sends, without its walk over the messages (see
        :func:`~mini_letta.providers.base.encode_body`)."""
        return self._client.post("/v1/messages", content=body, cast_to=AnthropicMessage, options={"headers": headers},
                                 stream=True, stream_cls=anthropic.Stream[RawMessageStreamEvent])

    def request_body(self, request: Request, model: str) -> bytes:
        """``encode_body(request_params(...))``, byte for byte, with each message's blocks serialised
        once per session (:mod:`~mini_letta.providers.wire_cache`) and joined."""
        model_id, head, tools, system = self._parts(request, model)
        messages = encode_messages(self._wire.forms(request.messages), tools, system, min_cacheable_tokens(model_id))
        tail = self._tail(tools, system)
        return b"".join((encode_body(head)[:-1], b',"messages":', messages,
                         b"," + encode_body(tail)[1:] if tail else b"}"))

    def request_params(self, request: Request, model: str) -> dict[str, Any]:
        """The request as JSON-ready data, converted afresh (what ``request_body`` serialises)."""
        model_id, head, tools, system = self._parts(request, model)
        messages = to_anthropic_messages(request.messages)
        place_breakpoints(tools, system, messages, min_cacheable_tokens(model_id))
        return {**head, "messages": messages, **self._tail(tools, system)}

    @staticmethod
    def _parts(request: Request, model: str) -> tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        """(model id, the parameters before the messages, tools, system blocks)."""
        model_id = split_one_million_suffix(model)[0]
        head = {"model": model_id, "max_tokens": request.max_tokens, "stream": True}
        tools = [{"name": s.name, "description": s.description, "input_schema": s.parameters}
                 for s in request.tools]
        return model_id, head, tools, system_blocks(request.system, request.system_stable_chars)

    @staticmethod
    def _tail(tools: list[dict[str, Any]], system: list[dict[str, Any]]) -> dict[str, Any]:
        tail: dict[str, Any] = {}
        if tools:
            tail["tools"] = tools
        if system:
            tail["system"] = system
        return tail

    def warm(self) -> None:
        """Do now, with no request, what the first reply would otherwise wait for: the SDK completes
        its pydantic event models on first use. The REPL calls this at start-up."""
        with self._warming:
            response = httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=_WARM_EVENTS,
                                       request=httpx2.Request("POST", self.base_url + "/v1/messages"))
            stream = anthropic.Stream(cast_to=RawMessageStreamEvent, response=response, client=self._client)
            for _event in self._read(stream):
                pass

    def _read(self, stream: Any) -> Iterator[StreamEvent]:
        with self._warming:  # a warm-up under way finishes first (the request is already sent)
            pass
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage = Usage()
        stop_reason: str | None = None
        finished = False
        for event in stream:
            kind = event.type
            if kind == "message_start":
                _merge_usage(usage, event.message.usage)
            elif kind == "content_block_start":
                block = event.content_block
                if block.type == "tool_use":
                    calls[event.index] = {"id": block.id, "name": block.name, "arguments": []}
                    yield ToolCallStarted(block.id, block.name)
                elif block.type == "text" and block.text:
                    text.append(block.text)
                    yield TextDelta(block.text)
            elif kind == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta" and delta.text:
                    text.append(delta.text)
                    yield TextDelta(delta.text)
                elif delta.type == "input_json_delta" and event.index in calls:
                    calls[event.index]["arguments"].append(delta.partial_json)
            elif kind == "message_delta":
                stop_reason = event.delta.stop_reason or stop_reason
                _merge_usage(usage, event.usage)
            elif kind == "message_stop":
                finished = True
        tool_calls = [ToolCall(c["id"], c["name"], "".join(c["arguments"]) or "{}") for _, c in sorted(calls.items())]
        message = Message.assistant("".join(text), tool_calls, usage=None if usage.is_empty else usage,
                                    stop_reason=stop_reason)
        # A stream that ends without message_stop was cut (by the network or the server): what
        # arrived is kept and the message says it is incomplete.
        yield Done(endings.mark(message, _ENDINGS.get(stop_reason or "", endings.END) if finished else endings.CUT))

    def _read_whole(self, body: bytes) -> Iterator[StreamEvent]:
        data = json.loads(body)
        if not isinstance(data, dict) or data.get("type") != "message" or not isinstance(data.get("content"), list):
            raise errors_map.broken_stream_error(self.name, "the server answered with JSON that is not a message")
        text: list[str] = []
        calls: list[ToolCall] = []
        for block in data["content"]:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                text.append(block["text"])
                yield TextDelta(block["text"])
            elif block.get("type") == "tool_use" and block.get("name"):
                call = ToolCall(block.get("id") or "", block["name"], json.dumps(block.get("input") or {}))
                calls.append(call)
                yield ToolCallStarted(call.id, call.name)
        usage = Usage()
        _merge_usage(usage, anthropic.types.Usage.model_validate(data["usage"]) if isinstance(data.get("usage"), dict)
                     else None)
        reply = Message.assistant("".join(text), calls, usage=None if usage.is_empty else usage,
                                  stop_reason=data.get("stop_reason"))
        yield Done(endings.mark(reply, _ENDINGS.get(data.get("stop_reason") or "", endings.END)))

    def _map_error(self, exc: BaseException, model: str, mid_stream: bool = False) -> ProviderError:
        if isinstance(exc, (anthropic.APITimeoutError, httpx2.TimeoutException)):
            return errors_map.timeout_error(self.name, self._read_timeout)
        if isinstance(exc, (anthropic.APIConnectionError, httpx2.TransportError)) and mid_stream:
            return errors_map.broken_stream_error(self.name, str(exc.__cause__ or exc))
        if isinstance(exc, anthropic.APIConnectionError):
            return errors_map.connection_error(self.name, self.base_url, str(exc.__cause__ or exc))
        if isinstance(exc, anthropic.APIStatusError):
            # An `error` event inside a 200 stream arrives as a status error carrying the 200.
            status = exc.status_code if exc.status_code >= 400 else None
            return errors_map.status_error(self.name, status, exc.body, exc.message, model=model,
                                           key_env=self.key_env)
        return errors_map.broken_stream_error(self.name, f"{type(exc).__name__}: {exc}")


def _merge_usage(total: Usage, reported: Any) -> None:
    """message_start carries the input side, message_delta the (cumulative) output count."""
    if reported is None:
        return
    for source, target in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                           ("cache_read_input_tokens", "cache_read_tokens"),
                           ("cache_creation_input_tokens", "cache_write_tokens")):
        value = getattr(reported, source, None)
        if value is not None:
            setattr(total, target, value)
