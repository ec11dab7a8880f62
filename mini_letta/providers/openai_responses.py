"""OpenAI's Responses API (``POST /v1/responses``), streamed: the only way to OpenAI's codex and
``*-pro`` models (``data/responses_models.json``), and a choice for any other (``--provider openai-responses``).

Sent as the Chat Completions provider sends (:class:`~mini_letta.providers.openai_provider.OpenAIProvider`,
whose key, address, headers, served-window probes and error mapping this one shares): the body is
built here as JSON-ready data, each message's items serialised once per session, and posted over
httpx2 (:mod:`~mini_letta.providers.http_stream`). The wire form is :mod:`~mini_letta.providers.responses_wire`'s.

What the request says: ``instructions`` (the system prompt), ``input`` (the conversation as
items), ``store: false`` (nothing kept on OpenAI's side, so no ``previous_response_id``: every
request is whole, which our budget counts), ``include: ["reasoning.encrypted_content"]`` for a model
that reasons (its reasoning comes back sealed and is sent back with the assistant message it
belongs to), ``prompt_cache_key`` (the session id), ``max_output_tokens``.

The events read: ``response.output_item.added`` / ``.done`` (function calls begin; reasoning
items and whole calls end), ``response.output_text.delta``, ``response.refusal.delta``,
``response.function_call_arguments.delta``, ``response.completed`` / ``response.incomplete``
(status, ``incomplete_details.reason``, usage), ``response.failed`` and ``error`` (raised as the
other providers raise an error event). A stream that ends before its response finished was cut.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Iterator

from mini_letta.context.window import split_one_million_suffix
from mini_letta.errors import ProviderError
from mini_letta.compaction.native import NativeSummary
from mini_letta.messages import Message, Usage
from mini_letta.providers import errors_map, retry
from mini_letta.providers.base import Done, Request, StreamEvent, TextDelta, ToolCallStarted, encode_body
from mini_letta.providers.http_stream import HttpError, HttpStatusError, Streamed
from mini_letta.providers.openai_provider import OpenAIProvider
from mini_letta.providers.responses_wire import (INCLUDE_REASONING, NO_ENCRYPTED_CONTENT, PROVIDER, Reply,
                                                 function_tools, message_items, normalise_usage, reasons)
from mini_letta.providers.wire_cache import WireCache



class ResponsesProvider(OpenAIProvider):
    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float | None = None, max_retries: int | None = None):
        super().__init__(model, name=PROVIDER, base_url=base_url, api_key=api_key, timeout=timeout,
                         max_retries=max_retries)
        # A message's items depend on the model they go to (its reasoning goes only to the model
        # that made it): ``_wire`` for this provider's model, one more cache per other model asked
        # (a summarizer's).
        self._wire = WireCache(lambda message: _encoded_items(message, split_one_million_suffix(self.model)[0]))
        self._others: dict[str, WireCache[bytes]] = {}
        # Models that answered "encrypted content is not supported": asked without ``include`` from then on.
        self._no_reasoning: set[str] = set()

    # --- the request --------------------------------------------------------------------------
    def stream(self, request: Request) -> Iterator[StreamEvent]:
        model_id = split_one_million_suffix(request.model or self.model)[0]
        try:
            yield from super().stream(request)
        except ProviderError as error:
            # Our table said this model reasons and OpenAI says it does not: ask again without.
            if model_id in self._no_reasoning or NO_ENCRYPTED_CONTENT not in str(error).lower() \
                    or not getattr(error, "before_reply", False):
                raise
            self._no_reasoning.add(model_id)
            yield from super().stream(request)

    def _stream_once(self, request: Request) -> Iterator[StreamEvent]:
        model = request.model or self.model
        body = self.request_body(request, model)
        model_id = split_one_million_suffix(model)[0]
        return retry.attempt(lambda: self._http.post(self.base_url + "/responses", body), (HttpError,),
                             partial(self._map_error, model=model), partial(self._read_events, model=model_id),
                             partial(self._read_body, model=model_id))

    def request_body(self, request: Request, model: str) -> bytes:
        """``encode_body(request_params(...))``, byte for byte, each message's items serialised once."""
        head, tail = self._params(request, model)
        model_id = head["model"]
        if model_id == split_one_million_suffix(self.model)[0]:
            cache = self._wire
        else:
            cache = self._others.get(model_id) or self._others.setdefault(
                model_id, WireCache(lambda message: _encoded_items(message, model_id)))
        fragments = [fragment for fragment in cache.forms(request.messages) if fragment]
        return b"".join((encode_body(head)[:-1], b',"input":[', b",".join(fragments), b"],", encode_body(tail)[1:]))

    def request_params(self, request: Request, model: str) -> dict[str, Any]:
        """The request as JSON-ready data, converted afresh (what ``request_body`` serialises)."""
        head, tail = self._params(request, model)
        items = [item for message in request.messages for item in message_items(message, head["model"])]
        return {**head, "input": items, **tail}

    def _params(self, request: Request, model: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The parameters before the input items and those after them."""
        model_id = split_one_million_suffix(model)[0]
        head: dict[str, Any] = {"model": model_id}
        if request.system:
            head["instructions"] = request.system
        tail: dict[str, Any] = {"stream": True, "store": False, "max_output_tokens": request.max_tokens}
        if reasons(model_id) and model_id not in self._no_reasoning:
            tail["include"] = [INCLUDE_REASONING]
        if request.cache_key:
            tail["prompt_cache_key"] = request.cache_key
        if request.tools:
            tail["tools"] = function_tools(request.tools)
        return head, tail

    # --- its own compaction ----------------------------------------------------------------------
    def compacts(self, model: str) -> bool:
        """Whether to ask this server for its own compaction (``POST /responses/compact``); a server
        that turns out not to have it answers with an error, and our own summary runs."""
        return True

    def compact(self, request: Request, focus: str | None) -> tuple[NativeSummary, Usage | None]:
        """``request.messages`` compacted by the server into its sealed ``compaction`` item; ``focus``
        (``/compact FOCUS``) goes as the compaction's instructions. Raises ProviderError."""
        model_id = split_one_million_suffix(request.model or self.model)[0]
        body: dict[str, Any] = {"model": model_id,
                                "input": [item for m in request.messages for item in message_items(m, model_id)]}
        if focus:
            body["instructions"] = focus
        try:
            reply = self._http.post(self.base_url + "/responses/compact", encode_body(body))
            try:
                data = json.loads(reply.body())
            finally:
                reply.close()
        except (HttpError, ValueError) as exc:
            raise self._map_error(exc, model=model_id) from None
        output = data.get("output") if isinstance(data, dict) else None
        items = [i for i in output if isinstance(i, dict) and i.get("type") == "compaction"] if isinstance(output, list) else []
        if not items or not all(isinstance(i.get("encrypted_content"), str) for i in items):
            raise errors_map.broken_stream_error(self.name, "the compaction answer holds no compaction item")
        usage = normalise_usage(data["usage"]) if isinstance(data.get("usage"), dict) else None
        items = [{"type": "compaction", "id": i.get("id"), "encrypted_content": i["encrypted_content"]} for i in items]
        tokens = usage.output_tokens if usage is not None else 0
        return NativeSummary(PROVIDER, model_id, items, tokens), usage

    # --- the reply ----------------------------------------------------------------------------
    def _read_events(self, stream: Streamed, model: str) -> Iterator[StreamEvent]:
        reply = Reply()
        for event in stream.events():
            if not isinstance(event, dict):
                raise ValueError(f"an event that is not a JSON object: {str(event)[:80]}")
            kind = event.get("type")
            if kind == "response.output_text.delta" or kind == "response.refusal.delta":
                delta = event.get("delta")
                if isinstance(delta, str) and delta:
                    # The model's words on why it declines are its reply, shown like any text.
                    reply.refused = reply.refused or kind == "response.refusal.delta"
                    reply.text.append(delta)
                    yield TextDelta(delta)
            elif kind == "response.function_call_arguments.delta":
                if isinstance(event.get("delta"), str):
                    reply.add_arguments(event.get("item_id"), event["delta"])
            elif kind == "response.output_item.added":
                item = _dict(event.get("item"))
                if item.get("type") == "function_call":
                    call = reply.start_call(item)
                    if call is not None:
                        yield ToolCallStarted(call["id"], call["name"])
            elif kind == "response.output_item.done":
                item = _dict(event.get("item"))
                started = item.get("type") == "function_call" and reply.start_call(item)
                if started:  # a call whose beginning was never announced
                    yield ToolCallStarted(started["id"], started["name"])
                reply.finish_item(item)
            elif kind in ("response.completed", "response.incomplete"):
                reply.finish(_dict(event.get("response")))
            elif kind == "response.failed":
                response = _dict(event.get("response"))
                error = _dict(response.get("error"))
                raise HttpStatusError(str(error.get("message") or "the response failed"), None, {"error": error})
            elif kind == "error":
                raise HttpStatusError(str(event.get("message") or "An error occurred during streaming"), None, event)
        yield Done(reply.message(model))

    def _read_body(self, body: bytes, model: str) -> Iterator[StreamEvent]:
        """A whole response object, for servers that ignore ``stream``."""
        data = json.loads(body)
        if not isinstance(data, dict) or not isinstance(data.get("output"), list):
            raise errors_map.broken_stream_error(self.name, "the server answered with JSON that is not a response")
        if data.get("status") == "failed":
            error = _dict(data.get("error"))
            raise HttpStatusError(str(error.get("message") or "the response failed"), None, {"error": error})
        reply = Reply()
        for item in (i for i in data["output"] if isinstance(i, dict)):
            if item.get("type") == "message":
                for part in (p for p in item.get("content") or [] if isinstance(p, dict)):
                    text = part.get("text") if part.get("type") == "output_text" else part.get("refusal")
                    if isinstance(text, str) and text:
                        reply.refused = reply.refused or part.get("type") == "refusal"
                        reply.text.append(text)
                        yield TextDelta(text)
            elif item.get("type") == "function_call":
                call = reply.start_call(item)
                if call is not None:
                    yield ToolCallStarted(call["id"], call["name"])
            reply.finish_item(item)
        reply.finish(data)
        yield Done(reply.message(model))


def _encoded_items(message: Message, model_id: str) -> bytes:
    """``message``'s input items as they go in the ``input`` array, joined (empty for none)."""
    return b",".join(encode_body(item) for item in message_items(message, model_id))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
