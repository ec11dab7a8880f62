"""A fake Anthropic Messages API: ``POST /v1/messages`` with ``stream: true``, SSE events as the real one,
and the self-description routes of local servers (:mod:`fakes.local`), as llama-server answers both.

Usage for a Reply is Anthropic's dict, e.g. ``anthropic_usage(10, 20, cache_creation=300, cache_read=5000)``;
the input side goes out in ``message_start``, the output count in ``message_delta``, as the real API does.
``Reply(usage=None)`` reports zeros (the real API always sends a usage object); left at DEFAULT the
input side is the server's own count of the request (:mod:`fakes.tokens`).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from . import DEFAULT, FakeHandler, FakeServer, Recorded, Reply, chunks
from .structure import anthropic_problem
from .tokens import count_reply


def anthropic_usage(input_tokens: int, output_tokens: int, cache_creation: int = 0,
                    cache_read: int = 0) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_creation, "cache_read_input_tokens": cache_read}


def overflow_fault_body(limit: int, actual: int) -> dict[str, Any]:
    """The body Anthropic sends when a prompt exceeds the window."""
    return {"type": "error", "error": {"type": "invalid_request_error",
                                       "message": f"prompt is too long: {actual} tokens > {limit} maximum"}}


class FakeAnthropicServer(FakeServer):
    completion_path = "/v1/messages"

    def api_usage(self, prompt: int, completion: int, cached: int | None = None) -> dict[str, Any]:
        return anthropic_usage(prompt - (cached or 0), completion, cache_read=cached or 0)

    @property
    def base_url(self) -> str:
        """What to pass as the Anthropic client's base URL (the SDK appends ``/v1/messages``)."""
        return self.root_url

    def route(self, handler: FakeHandler, request: Recorded) -> None:
        path = request.path.split("?")[0]
        if request.method == "POST" and path == "/v1/messages":
            self.serve_completion(handler, request)
        elif not self.serve_info(handler, request):
            handler.send_json(404, self.error_body(404, f"no route {request.method} {path}"))

    length_stop = "max_tokens"

    def events(self, reply: Reply, body: dict[str, Any], prompt: int) -> Iterator[bytes]:
        usage = reply.usage
        if usage == DEFAULT:
            usage = anthropic_usage(prompt, max(1, count_reply(reply.text, reply.tool_calls)))
        usage = usage or anthropic_usage(0, 0)
        start_usage = dict(usage, output_tokens=1)
        yield _event("message_start", {"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", ""),
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}})
        yield _event("ping", {"type": "ping"})
        index = 0
        if reply.text:
            yield _event("content_block_start", {"type": "content_block_start", "index": index,
                                                 "content_block": {"type": "text", "text": ""}})
            for piece in chunks(reply.text, reply.chunk_size):
                yield _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                     "delta": {"type": "text_delta", "text": piece}})
            yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        for call_id, name, arguments in reply.tool_calls:
            yield _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": call_id, "name": name, "input": {}}})
            for piece in chunks(arguments, reply.chunk_size):
                yield _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                     "delta": {"type": "input_json_delta", "partial_json": piece}})
            yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        if not reply.finish:
            return
        yield _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                       "usage": {"output_tokens": usage["output_tokens"]}})
        yield _event("message_stop", {"type": "message_stop"})

    def structure_problem(self, body: dict[str, Any]) -> str | None:
        return anthropic_problem(body)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kinds = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                 404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}
        return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}

    def malformed_event(self) -> bytes:
        return b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {\n\n'

    def error_event(self, body: dict[str, Any]) -> bytes:
        return _event("error", body)


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
