"""Anthropic Messages API, streamed.

With a key (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN`` or a placeholder for a local server),
sent without the ``anthropic`` SDK: the body is posted as built over httpx2
(:mod:`~mini_letta.providers.http_stream`) with the headers the SDK sends, and the events are read
as JSON. ``import anthropic`` alone takes about two seconds (its types are pydantic models), all of
it before the first request could go out. Without a key the SDK is imported after all, for what
only it knows: a credentials profile (``ANTHROPIC_PROFILE``, ``~/.config/anthropic``) or a
federation rule; it then only sends and raises its errors, and the events are read the same way.

The wire form (merged turns, empty blocks filled, cache breakpoints) is :mod:`~mini_letta.providers.anthropic_wire`'s.
"""

from __future__ import annotations

import json
import os
import time
from functools import partial
from typing import Any, Iterator

from mini_letta import __version__, endings
from mini_letta.context.window import split_one_million_suffix
from mini_letta.errors import AuthenticationError, ProviderError
from mini_letta.messages import Message, ToolCall, ToolSpec, Usage
from mini_letta.providers import errors_map, probe, retry
from mini_letta.providers.anthropic_wire import (TurnJoiner, message_form, min_cacheable_tokens, place_breakpoints,
                                                 system_blocks, to_anthropic_messages)
from mini_letta.providers.http_stream import (HttpError, HttpRedirected, HttpStatusError, HttpStream, HttpTimeout,
                                              HttpUnreachable, Streamed, provider_error, stream_error)
from mini_letta.providers.network import client_timeout, reply_deadline
from mini_letta.trust.urls import shown_url
from mini_letta.providers.wire_cache import WireCache
from mini_letta.providers.base import (Done, Request, StreamEvent, TextDelta, ToolCallStarted, encode_body,
                                      function_tools)
from mini_letta.settings import SETTINGS

DEFAULT_BASE_URL = "https://api.anthropic.com"
# The API version the SDK pins (``anthropic._constants.ANTHROPIC_API_VERSION``; a test keeps the two
# equal), sent as its ``anthropic-version`` header.
API_VERSION = "2026-10-21"
# The API's opt-in to a 1M-token window, asked for by a ``[1m]`` suffix on the model name.
ONE_MILLION_BETA = "context-1m-2025-08-07"
# Stop reasons that leave the answer incomplete; end_turn, tool_use, stop_sequence, pause_turn finish it.
_ENDINGS = {"max_tokens": endings.MAX_TOKENS, "model_context_window_exceeded": endings.MAX_TOKENS,
            "refusal": endings.REFUSAL}


def custom_headers(raw: str | None) -> dict[str, str]:
    """``ANTHROPIC_CUSTOM_HEADERS``, read as the SDK reads it: one ``Name: value`` a line."""
    headers: dict[str, str] = {}
    for line in (raw or "").split("\n"):
        name, colon, value = line.partition(":")
        if colon and name.strip():
            headers[name.strip()] = value.strip()
    return headers


class AnthropicProvider:
    name = "anthropic"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float | None = None, max_retries: int | None = None):
        self.model = model
        self._read_timeout = client_timeout(timeout).read
        # Retries are ours (providers/retry.py), so the user hears of each one.
        self.max_retries = SETTINGS.providers.max_retries if max_retries is None else max_retries
        # As the SDK chooses: an explicit key, else ANTHROPIC_API_KEY, else ANTHROPIC_AUTH_TOKEN.
        self._key = api_key or os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN") or None
        self._client: Any = None  # the SDK's, only for credentials without a key
        if self._key is not None:
            self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
            self._http: HttpStream | None = HttpStream(self._headers(), client_timeout(timeout))
            self._send_errors: tuple[type[BaseException], ...] = (HttpError,)
        else:
            self._client = _credentials_client(base_url, timeout, self.key_env)
            self.base_url = str(self._client.base_url).rstrip("/")
            self._http = None
            import anthropic

            self._send_errors = (anthropic.AnthropicError,)
        self._window: int | None = None
        self._window_known = False
        self.served_window_source: str | None = None
        self._wire: WireCache[tuple[str, list[tuple[bytes, int]]]] = WireCache(message_form)
        self._turns = TurnJoiner()  # the last request's merged turns, for the next one to extend

    def _headers(self) -> dict[str, str]:
        """What the SDK sends with a key, but for its own telemetry (``X-Stainless-*``): the key as a
        bearer token (this SDK's way for both kinds), the API version, ``ANTHROPIC_CUSTOM_HEADERS``."""
        return {"Authorization": f"Bearer {self._key}", "anthropic-version": API_VERSION,
                "User-Agent": f"mini-letta/{__version__}",
                **custom_headers(os.environ.get("ANTHROPIC_CUSTOM_HEADERS"))}

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
        return self._key

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        return retry.with_retries(lambda: self._stream_once(request), self.max_retries)

    def _stream_once(self, request: Request) -> Iterator[StreamEvent]:
        model = request.model or self.model
        body = self.request_body(request, model)
        headers = {"anthropic-beta": ONE_MILLION_BETA} if split_one_million_suffix(model)[1] else {}
        return retry.attempt(lambda: self._send(body, headers), self._send_errors,
                             partial(self._map_error, model=model), self._read, self._read_whole)

    def _send(self, body: bytes, headers: dict[str, str]) -> Streamed:
        """What ``messages.create(stream=True)`` sends, without its walk over the messages (see
        :func:`~mini_letta.providers.base.encode_body`). With credentials the SDK sends it (its
        ``post`` takes the bytes as they are) and only its HTTP response is kept."""
        if self._http is not None:
            return self._http.post(self.base_url + "/v1/messages", body, headers)
        import anthropic
        from anthropic.types import Message as AnthropicMessage
        from anthropic.types import RawMessageStreamEvent

        deadline = time.monotonic() + reply_deadline()
        sent = self._client.post("/v1/messages", content=body, cast_to=AnthropicMessage, options={"headers": headers},
                                 stream=True, stream_cls=anthropic.Stream[RawMessageStreamEvent])
        return Streamed(sent.response, self._read_timeout, deadline)

    def request_body(self, request: Request, model: str) -> bytes:
        """``encode_body(request_params(...))``, byte for byte, with each message's blocks serialised
        once per session (:mod:`~mini_letta.providers.wire_cache`), merged into turns once, and joined."""
        model_id, head, tools, system = self._parts(request, model)
        messages = self._turns.encode(self._wire.forms(request.messages), tools, system, min_cacheable_tokens(model_id))
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

    def _read(self, stream: Streamed) -> Iterator[StreamEvent]:
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage = Usage()
        stop_reason: str | None = None
        finished = False
        for event in stream.events():
            if not isinstance(event, dict):
                raise ValueError(f"an event that is not a JSON object: {str(event)[:80]}")
            kind = event.get("type")
            if kind == "error":
                raise stream_error(event)
            if kind == "message_start":
                _merge_usage(usage, _field(event.get("message"), "usage"))
            elif kind == "content_block_start":
                block = _field(event, "content_block") or {}
                if block.get("type") == "tool_use" and isinstance(event.get("index"), int):
                    call_id, call_name = str(block.get("id") or ""), str(block.get("name") or "")
                    calls[event["index"]] = {"id": call_id, "name": call_name, "arguments": []}
                    yield ToolCallStarted(call_id, call_name)
                elif block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"]:
                    text.append(block["text"])
                    yield TextDelta(block["text"])
            elif kind == "content_block_delta":
                delta = _field(event, "delta") or {}
                if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str) and delta["text"]:
                    text.append(delta["text"])
                    yield TextDelta(delta["text"])
                elif delta.get("type") == "input_json_delta" and event.get("index") in calls:
                    if isinstance(delta.get("partial_json"), str):
                        calls[event["index"]]["arguments"].append(delta["partial_json"])
            elif kind == "message_delta":
                reason = (_field(event, "delta") or {}).get("stop_reason")
                stop_reason = reason if isinstance(reason, str) and reason else stop_reason
                _merge_usage(usage, _field(event, "usage"))
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
        _merge_usage(usage, _field(data, "usage"))
        reply = Message.assistant("".join(text), calls, usage=None if usage.is_empty else usage,
                                  stop_reason=data.get("stop_reason"))
        yield Done(endings.mark(reply, _ENDINGS.get(data.get("stop_reason") or "", endings.END)))

    def _map_error(self, exc: BaseException, model: str, mid_stream: bool = False) -> ProviderError:
        if self._client is not None:  # the SDK sent it: its errors, in the same terms
            exc = _from_sdk(exc)
        return provider_error(exc, provider=self.name, base_url=self.base_url, read_timeout=self._read_timeout,
                              key_env=self.key_env, model=model, mid_stream=mid_stream)


def _credentials_client(base_url: str | None, timeout: float | None, key_env: str) -> Any:
    """The SDK's client for what only it reads: a credentials profile or a federation rule."""
    import anthropic

    try:
        # Redirects are not followed (http_stream's rule: the credentials would go along); one arrives
        # as a status error, said as a redirect by _from_sdk.
        client = anthropic.Anthropic(base_url=base_url, timeout=client_timeout(timeout), max_retries=0,
                                     http_client=anthropic.DefaultHttpxClient(follow_redirects=False))
    except anthropic.AnthropicError as exc:  # a configured credentials profile that cannot be read
        raise AuthenticationError(f"no usable credentials for anthropic ({errors_map.one_line(str(exc))}): "
                                  f"set {key_env} or pass --provider demo.", provider="anthropic") from None
    if client.api_key is None and client.auth_token is None and client.credentials is None:
        raise errors_map.missing_key_error("anthropic", key_env)
    return client


def _from_sdk(exc: BaseException) -> BaseException:
    """The SDK's error as :mod:`~mini_letta.providers.http_stream`'s (which the mapping reads)."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return HttpTimeout(str(exc))
    if isinstance(exc, anthropic.APIConnectionError):
        unreachable = HttpUnreachable(str(exc.__cause__ or exc))
        unreachable.__cause__ = exc.__cause__
        return unreachable
    if isinstance(exc, anthropic.APIStatusError) and 300 <= exc.status_code < 400:
        return HttpRedirected(shown_url(exc.response.request.url), shown_url(exc.response.headers.get("location", "")))
    if isinstance(exc, anthropic.APIStatusError):
        # An `error` event inside a 200 stream arrives as a status error carrying the 200.
        return HttpStatusError(exc.message, exc.status_code if exc.status_code >= 400 else None, exc.body, exc.response)
    return exc


def _field(data: Any, name: str) -> dict[str, Any] | None:
    """``data[name]`` when both are JSON objects."""
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else None


def _merge_usage(total: Usage, reported: Any) -> None:
    """message_start carries the input side, message_delta the (cumulative) output count."""
    if reported is None:
        return
    for source, target in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                           ("cache_read_input_tokens", "cache_read_tokens"),
                           ("cache_creation_input_tokens", "cache_write_tokens")):
        value = reported.get(source)
        if isinstance(value, int) and not isinstance(value, bool):
            setattr(total, target, value)
