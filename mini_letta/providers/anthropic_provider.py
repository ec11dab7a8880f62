"""Anthropic Messages API, streamed.

With a key (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN`` or a placeholder for a local server),
sent without the ``anthropic`` SDK: the body is posted as built over httpx2
(:mod:`~mini_letta.providers.http_stream`) with the headers the SDK sends, and the events are read
as JSON. ``import anthropic`` alone takes about two seconds (its types are pydantic models), all of
it before the first request could go out. Without a key the SDK is imported after all, for what
only it knows: a credentials profile (``ANTHROPIC_PROFILE``, ``~/.config/anthropic``) or a
federation rule; it then only sends and raises its errors, and the events are read the same way.

The wire form (merged turns, empty blocks filled, cache breakpoints) is :mod:`~mini_letta.providers.anthropic_wire`'s.

Its own compaction (:meth:`AnthropicProvider.compact`, a layer of our plan: ``compaction/native.py``)
is one request of the part being summarised with ``context_management.edits`` holding
``compact_20260112`` (beta ``compact-2026-01-12``) with ``pause_after_compaction``: the API writes its
``compaction`` block (a readable summary, with ``encrypted_content``, ``signature`` and
``tool_changes`` to be sent back as they came) and stops with ``stop_reason: "compaction"``. Its
trigger is the request's input tokens and may not be set under 50,000, so a smaller part is never
sent to it (our own summary runs); a request under the trigger would be answered, not compacted,
which is taken as a refusal. ``clear_tool_uses_20250919`` is not asked for: our clearing layer
clears old tool results before a request is sent, where our count sees it.
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
from mini_letta.compaction.native import NativeSummary
from mini_letta.messages import Message, ToolCall, ToolSpec, Usage
from mini_letta.providers import errors_map, probe, retry
from mini_letta.providers.anthropic_wire import (PROVIDER, TurnJoiner, alternating, beside_blocks, compacted_lead, compaction_blocks,
                                                 message_form, min_cacheable_tokens, place_breakpoints,
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
# Its own compaction: the beta, the edit, and the smallest input-token trigger the API takes.
COMPACT_BETA = "compact-2026-01-12"
COMPACT_EDIT = "compact_20260112"
COMPACT_MIN_TRIGGER = 50_000
# Model families that compact (``compact_20260112``), from the first version that does.
_COMPACTING = {"opus": (4, 6), "sonnet": (4, 6)}
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
        # The wire form of a summary sent beside its compaction blocks, kept for that summary
        # object (so the turn joiner sees the same form on every request and reuses its turns).
        self._beside: tuple[Message | None, Any] = (None, None)

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
        headers = self._betas(model, bool(compaction_blocks(request.messages, split_one_million_suffix(model)[0])))
        return retry.attempt(lambda: self._send(body, headers), self._send_errors,
                             partial(self._map_error, model=model), self._read, self._read_whole)

    @staticmethod
    def _betas(model: str, compaction: bool) -> dict[str, str]:
        """The ``anthropic-beta`` header: the 1M window for a ``[1m]`` model, compaction for a request
        that compacts or carries a compaction block."""
        betas = [ONE_MILLION_BETA] if split_one_million_suffix(model)[1] else []
        betas += [COMPACT_BETA] if compaction else []
        return {"anthropic-beta": ",".join(betas)} if betas else {}

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
        forms = self._wire.forms(request.messages)
        blocks = compaction_blocks(request.messages, model_id)
        if blocks:
            forms[0] = self._beside_form(request.messages[0])
        messages = self._turns.encode(forms, tools, system, min_cacheable_tokens(model_id))
        if blocks:
            messages = b"[" + encode_body(compacted_lead(blocks))[1:-1] + b"," + messages[1:]
        tail = self._tail(tools, system)
        return b"".join((encode_body(head)[:-1], b',"messages":', messages,
                         b"," + encode_body(tail)[1:] if tail else b"}"))

    def _beside_form(self, summary: Message) -> Any:
        kept, form = self._beside
        if kept is not summary:
            form = message_form(beside_blocks(summary))
            self._beside = (summary, form)
        return form

    def request_params(self, request: Request, model: str) -> dict[str, Any]:
        """The request as JSON-ready data, converted afresh (what ``request_body`` serialises)."""
        model_id, head, tools, system = self._parts(request, model)
        blocks = compaction_blocks(request.messages, model_id)
        sent = [beside_blocks(request.messages[0]), *request.messages[1:]] if blocks else request.messages
        messages = to_anthropic_messages(sent)
        place_breakpoints(tools, system, messages, min_cacheable_tokens(model_id))
        if blocks:
            messages = compacted_lead(blocks) + messages
        return {**head, "messages": messages, **self._tail(tools, system)}

    # --- its own compaction ----------------------------------------------------------------------
    def compacts(self, model: str) -> bool:
        """Whether ``model`` has the API's own compaction: Opus and Sonnet from 4.6 on, asked with a
        key (the credentials-profile path sends through the SDK, which is not wired for it)."""
        return self._http is not None and compacting_model(split_one_million_suffix(model)[0])

    compaction_minimum = COMPACT_MIN_TRIGGER  # tokens: a smaller request is answered, not compacted

    def compact(self, request: Request, focus: str | None) -> tuple[NativeSummary, Usage | None]:
        """``request.messages`` compacted by the API into its ``compaction`` block; ``focus``
        (``/compact FOCUS``) goes as the edit's instructions. Raises ProviderError, also when the
        API answered without compacting."""
        model = request.model or self.model
        model_id = split_one_million_suffix(model)[0]
        params = self.request_params(request, model)
        params["messages"] = alternating(params["messages"])
        edit: dict[str, Any] = {"type": COMPACT_EDIT, "trigger": {"type": "input_tokens", "value": COMPACT_MIN_TRIGGER},
                                "pause_after_compaction": True}
        if focus:
            edit["instructions"] = focus
        params["context_management"] = {"edits": [edit]}
        body, headers = encode_body(params), self._betas(model, True)
        events = retry.attempt(lambda: self._send(body, headers), self._send_errors,
                               partial(self._map_error, model=model), self._read, self._read_whole)
        reply = next(event.message for event in events if isinstance(event, Done))
        blocks = [b for b in reply.meta.get("compaction") or [] if isinstance(b.get("content"), str) and b["content"]]
        if reply.stop_reason != "compaction" or not blocks:
            raise errors_map.broken_stream_error(self.name, "the answer holds no compaction (the request was "
                                                            "under the compaction trigger, or the model does not compact)")
        usage = _with_compaction_usage(reply.usage, reply.meta.get("compaction_usage"))
        text = "\n\n".join(block["content"] for block in blocks)
        return NativeSummary(PROVIDER, model_id, blocks, 0, text=text), usage

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
        compactions: dict[int, dict[str, Any]] = {}  # compaction blocks, by index
        meta: dict[str, Any] = {}
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
                elif block.get("type") == "compaction" and isinstance(event.get("index"), int):
                    compactions[event["index"]] = _compaction_start(block)
            elif kind == "content_block_delta":
                delta = _field(event, "delta") or {}
                if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str) and delta["text"]:
                    text.append(delta["text"])
                    yield TextDelta(delta["text"])
                elif delta.get("type") == "input_json_delta" and event.get("index") in calls:
                    if isinstance(delta.get("partial_json"), str):
                        calls[event["index"]]["arguments"].append(delta["partial_json"])
                elif delta.get("type") == "compaction_delta" and event.get("index") in compactions:
                    _compaction_delta(compactions[event["index"]], delta)
            elif kind == "message_delta":
                reason = (_field(event, "delta") or {}).get("stop_reason")
                stop_reason = reason if isinstance(reason, str) and reason else stop_reason
                _merge_usage(usage, _field(event, "usage"))
                spent = _compaction_iterations(_field(event, "usage"))
                if spent is not None:
                    meta["compaction_usage"] = spent
            elif kind == "message_stop":
                finished = True
        tool_calls = [ToolCall(c["id"], c["name"], "".join(c["arguments"]) or "{}") for _, c in sorted(calls.items())]
        if compactions:
            meta["compaction"] = [_compaction_block(block) for _, block in sorted(compactions.items())]
        message = Message.assistant("".join(text), tool_calls, usage=None if usage.is_empty else usage,
                                    stop_reason=stop_reason, meta=meta)
        # A stream that ends without message_stop was cut (by the network or the server): what
        # arrived is kept and the message says it is incomplete.
        yield Done(endings.mark(message, _ENDINGS.get(stop_reason or "", endings.END) if finished else endings.CUT))

    def _read_whole(self, body: bytes) -> Iterator[StreamEvent]:
        data = json.loads(body)
        if not isinstance(data, dict) or data.get("type") != "message" or not isinstance(data.get("content"), list):
            raise errors_map.broken_stream_error(self.name, "the server answered with JSON that is not a message")
        text: list[str] = []
        calls: list[ToolCall] = []
        meta: dict[str, Any] = {}
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
            elif block.get("type") == "compaction":
                meta.setdefault("compaction", []).append(_compaction_block(_compaction_start(block)))
        usage = Usage()
        _merge_usage(usage, _field(data, "usage"))
        spent = _compaction_iterations(_field(data, "usage"))
        if spent is not None:
            meta["compaction_usage"] = spent
        reply = Message.assistant("".join(text), calls, usage=None if usage.is_empty else usage,
                                  stop_reason=data.get("stop_reason"), meta=meta)
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


def compacting_model(model_id: str) -> bool:
    """``claude-<family>-<major>-<minor>[-date]`` of a family in ``_COMPACTING`` at its version or later."""
    parts = model_id.lower().split("-")
    if len(parts) < 4 or parts[0] != "claude" or parts[1] not in _COMPACTING:
        return False
    major, minor = parts[2], parts[3] if len(parts[3]) < 3 else "0"  # claude-opus-5-20270101: no minor
    if not (major.isdigit() and minor.isdigit()):
        return False
    return (int(major), int(minor)) >= _COMPACTING[parts[1]]


# A compaction block's fields sent back as they came (its ``content`` the readable summary).
_COMPACTION_FIELDS = ("content", "encrypted_content", "signature", "tool_changes")


def _compaction_start(block: dict[str, Any]) -> dict[str, Any]:
    started = {"type": "compaction", "content": []}
    for name in _COMPACTION_FIELDS[1:]:
        if block.get(name) is not None:
            started[name] = block[name]
    if isinstance(block.get("content"), str) and block["content"]:
        started["content"].append(block["content"])
    return started


def _compaction_delta(block: dict[str, Any], delta: dict[str, Any]) -> None:
    if isinstance(delta.get("content"), str):
        block["content"].append(delta["content"])
    for name in _COMPACTION_FIELDS[1:]:
        if delta.get(name) is not None:
            block[name] = delta[name]


def _compaction_block(block: dict[str, Any]) -> dict[str, Any]:
    """The block as it is sent back: a failed compaction's content is null, as the API sent it."""
    content = "".join(block["content"])
    return {**block, "content": content or None}


def _compaction_iterations(usage: dict[str, Any] | None) -> Usage | None:
    """What the compaction itself cost (``usage.iterations``' ``compaction`` entries), which the
    top-level usage leaves out; None when there is none."""
    iterations = usage.get("iterations") if usage else None
    entries = [e for e in iterations if isinstance(e, dict) and e.get("type") == "compaction"] \
        if isinstance(iterations, list) else []
    if not entries:
        return None
    spent = Usage()
    for entry in entries:
        part = Usage()
        _merge_usage(part, entry)
        spent = spent + part
    return spent


def _with_compaction_usage(usage: Usage | None, compaction: Usage | None) -> Usage | None:
    if compaction is None:
        return usage
    return compaction if usage is None else usage + compaction


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
