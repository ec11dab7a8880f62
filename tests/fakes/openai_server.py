"""A fake OpenAI-compatible server: Chat Completions streaming, the model list, Ollama's native routes.

Routes:
- ``POST /v1/chat/completions`` (``stream: true``): the next scripted :class:`Reply` or :class:`Fault`.
- The self-description routes of llama.cpp, vLLM, LM Studio and Ollama (:mod:`fakes.local`).

Usage for a Reply is the API's own dict, e.g. ``openai_usage(100, 20, cached=80)``; left at DEFAULT it
is the server's own count of the request (:mod:`fakes.tokens`).
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

from . import DEFAULT, FakeHandler, FakeServer, Recorded, Reply, chunks
from .structure import openai_problem
from .tokens import count_reply


def openai_usage(prompt: int, completion: int, cached: int | None = None) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return usage


def overflow_fault_body(limit: int, actual: int) -> dict[str, Any]:
    """The body OpenAI sends when a request exceeds the window."""
    return {"error": {
        "message": f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
                   f"{actual} tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


class FakeOpenAIServer(FakeServer):
    completion_path = "/v1/chat/completions"

    def api_usage(self, prompt: int, completion: int, cached: int | None = None) -> dict[str, Any]:
        return openai_usage(prompt, completion, cached)

    @property
    def base_url(self) -> str:
        """What to pass as the OpenAI client's base URL (ends in ``/v1``)."""
        return self.root_url + "/v1"

    def route(self, handler: FakeHandler, request: Recorded) -> None:
        path = request.path.split("?")[0]
        if request.method == "POST" and path == "/v1/chat/completions":
            self.serve_completion(handler, request)
        elif not self.serve_info(handler, request):
            handler.send_json(404, self.error_body(404, f"no route {request.method} {path}"))

    # --- wire format ----------------------------------------------------------------------------
    def events(self, reply: Reply, body: dict[str, Any], prompt: int) -> Iterator[bytes]:
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": body.get("model", "")}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            payload = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])
            return _sse(payload)

        yield chunk({"role": "assistant", "content": ""})
        for piece in chunks(reply.text, reply.chunk_size):
            yield chunk({"content": piece})
        for piece in chunks(reply.refusal, reply.chunk_size):
            yield chunk({"refusal": piece})
        for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
            yield chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                         "function": {"name": name, "arguments": ""}}]})
            for piece in chunks(arguments, reply.chunk_size):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        finish = reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")
        if reply.finish:
            yield chunk({}, finish)
        usage = reply.usage
        if usage == DEFAULT:
            usage = openai_usage(prompt, max(1, count_reply(reply.text, reply.tool_calls)))
        if usage is not None and (body.get("stream_options") or {}).get("include_usage"):
            yield _sse(dict(base, choices=[], usage=usage))
        yield b"data: [DONE]\n\n"

    def structure_problem(self, body: dict[str, Any]) -> str | None:
        return openai_problem(body)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kinds = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}
        return {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                          "param": None, "code": kinds.get(status)}}

    def malformed_event(self) -> bytes:
        return b'data: {"id": "chatcmpl-fake", "choices": [{"index": 0, "delta": {"content": "x"\n\n'

    def error_event(self, body: dict[str, Any]) -> bytes:
        return _sse(body)


def _sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"
