"""A fake OpenAI Responses API: ``POST /v1/responses`` with ``stream: true``, its events as the real
one sends them, and the routes on which local servers describe themselves (:mod:`fakes.local`).

The stream of a :class:`~fakes.Reply`: ``response.created``, ``response.in_progress``, then per
output item ``response.output_item.added``, its deltas (``response.output_text.delta``,
``response.refusal.delta``, ``response.function_call_arguments.delta``) and
``response.output_item.done``, then ``response.completed`` with the usage, or
``response.incomplete`` with ``incomplete_details.reason`` when ``Reply.stop_reason`` is one
(``max_output_tokens``, ``content_filter``). ``Reply.reasoning`` is a reasoning item before the
text, its ``encrypted_content`` (only when the request ``include``s it) sealed for the model: an
item sent back to another model, or one this server never issued, is rejected, as OpenAI rejects it.

It disagrees with us as the real one does: it counts the request with its own tokenizer
(:mod:`fakes.tokens`; a reasoning item counts as the text it seals), reports that as
``input_tokens`` (cached tokens inside it), and enforces ``n_ctx`` (input + ``max_output_tokens``)
with the Responses API's own overflow wording, as an HTTP 400 or, with ``overflow_in_stream``, as
``response.failed`` (what OpenAI does once the stream has begun). ``stream_errors`` chooses the
in-stream error of ``Reply.error_after``: an ``error`` event or ``response.failed``. Tool calls
and their outputs must pair up (:func:`fakes.structure.responses_problem`).
"""

from __future__ import annotations

import base64
import json
from typing import Any, Iterator

from . import DEFAULT, FakeHandler, FakeServer, Fault, Recorded, Reply, chunks
from .structure import responses_problem
from .tokens import count_reply, count_responses_request, count_text

OVERFLOW_MESSAGE = "Your input exceeds the context window of this model. Please adjust your input and try again."
_INCOMPLETE = ("max_output_tokens", "content_filter")


def responses_usage(input_tokens: int, output_tokens: int, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": input_tokens + output_tokens}


def overflow_body() -> dict[str, Any]:
    return {"error": {"message": OVERFLOW_MESSAGE, "type": "invalid_request_error", "param": "input",
                      "code": "context_length_exceeded"}}


def seal(text: str, model: str) -> str:
    """The fake's ``encrypted_content``: opaque to the client, readable by the fake (to count it)."""
    return "enc_" + base64.b64encode(json.dumps([model, text]).encode()).decode()


def unseal(content: str) -> tuple[str, str] | None:
    """(model, text) of content this fake sealed; None for anything else."""
    if not isinstance(content, str) or not content.startswith("enc_"):
        return None
    try:
        model, text = json.loads(base64.b64decode(content[4:]))
    except (ValueError, TypeError):
        return None
    return model, text


class FakeResponsesServer(FakeServer):
    length_stop = "max_output_tokens"
    completion_path = "/v1/responses"

    def api_usage(self, prompt: int, completion: int, cached: int | None = None) -> dict[str, Any]:
        return responses_usage(prompt, completion, cached=cached or 0)

    def __init__(self) -> None:
        super().__init__()
        self.overflow_style = "responses"
        self.overflow_in_stream = False
        self.stream_errors = "error"  # or "response.failed"
        # POST /v1/responses/compact: answered with a sealed summary, or with this Fault (a refusal).
        self.compact_fault: Fault | None = None
        self.compactions: list[str] = []  # the summaries it sealed
        self._sequence = 0

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    def route(self, handler: FakeHandler, request: Recorded) -> None:
        path = request.path.split("?")[0]
        if request.method == "POST" and path == self.completion_path:
            self.serve_completion(handler, request)
        elif request.method == "POST" and path == "/v1/responses/compact":
            self.serve_compact(handler, request.body if isinstance(request.body, dict) else {})
        elif not self.serve_info(handler, request):
            handler.send_json(404, self.error_body(404, f"no route {request.method} {path}"))

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        return count_responses_request(body if self.tools_in_template else {k: v for k, v in body.items() if k != "tools"})

    # --- rejections -----------------------------------------------------------------------------
    def structure_problem(self, body: dict[str, Any]) -> str | None:
        problem = responses_problem(body)
        if problem is not None:
            return problem
        for item in body.get("input") or []:
            if not isinstance(item, dict) or item.get("type") not in ("reasoning", "compaction"):
                continue
            sealed = unseal(item.get("encrypted_content"))
            if sealed is None or sealed[0] != body.get("model"):
                return f"The encrypted content for item {item.get('id')} could not be verified."
        return None

    def serve_compact(self, handler: FakeHandler, body: dict[str, Any]) -> None:
        """The user messages as they were, then one compaction item sealing a summary (what the
        summary says: the first words of each user message, and what was compacted before)."""
        problem = self.structure_problem(body)
        if problem is not None:
            handler.send_json(400, self.error_body(400, problem))
            return
        if self.compact_fault is not None:
            fault = self.compact_fault
            handler.send_json(fault.status, fault.body or self.error_body(fault.status, fault.message), fault.headers)
            return
        model = body.get("model", "")
        users, earlier = [], []
        for item in body.get("input") or []:
            if item.get("type") == "compaction":
                earlier.append(unseal(item["encrypted_content"])[1])
            elif item.get("role") == "user":
                users.append(item)
        texts = [u["content"] if isinstance(u["content"], str) else "" for u in users]
        summary = " ".join(earlier + ["Compacted: " + "; ".join(t[:40] for t in texts)])
        if body.get("instructions"):
            summary += " Focus: " + body["instructions"]
        with self.lock:
            self.compactions.append(summary)
        item = {"type": "compaction", "id": f"cmp_fake{len(self.compactions)}", "encrypted_content": seal(summary, model)}
        handler.send_json(200, {"id": "resp_compact", "object": "response.compaction", "created_at": 0,
                                "output": users + [item],
                                "usage": responses_usage(count_responses_request(body), count_text(summary))})

    def overflow_body(self, prompt: int, max_tokens: int, n_ctx: int) -> dict[str, Any]:
        if self.overflow_style != "responses":
            return super().overflow_body(prompt, max_tokens, n_ctx)
        return overflow_body()

    def reject_overflow(self, handler: FakeHandler, prompt: int, max_tokens: int, n_ctx: int) -> None:
        if not self.overflow_in_stream:
            super().reject_overflow(handler, prompt, max_tokens, n_ctx)
            return
        handler.start_stream()
        handler.write_chunk(self._event("response.created", {"response": {"id": "resp_fake", "status": "in_progress"}}))
        handler.write_chunk(self._event("response.failed", {"response": {
            "id": "resp_fake", "status": "failed", "output": [], "error": overflow_body()["error"]}}))
        handler.end_stream()

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kinds = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}
        return {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                          "param": None, "code": kinds.get(status)}}

    def malformed_event(self) -> bytes:
        return b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "delta": \n\n'

    def error_event(self, body: dict[str, Any]) -> bytes:
        error = body.get("error") if isinstance(body.get("error"), dict) else {"message": str(body)}
        if self.stream_errors == "response.failed":
            return self._event("response.failed", {"response": {"id": "resp_fake", "status": "failed", "output": [],
                                                                "error": error}})
        return self._event("error", {"code": error.get("code"), "message": error.get("message"), "param": None})

    # --- the stream -----------------------------------------------------------------------------
    def _event(self, kind: str, payload: dict[str, Any]) -> bytes:
        self._sequence += 1
        data = {"type": kind, "sequence_number": self._sequence, **payload}
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()

    def events(self, reply: Reply, body: dict[str, Any], prompt: int) -> Iterator[bytes]:
        model = body.get("model", "")
        response = {"id": "resp_fake", "object": "response", "model": model, "status": "in_progress", "output": []}
        yield self._event("response.created", {"response": response})
        yield self._event("response.in_progress", {"response": response})
        output: list[dict[str, Any]] = []
        if reply.reasoning:
            item: dict[str, Any] = {"type": "reasoning", "id": f"rs_fake{len(self.requests)}",
                                    "summary": [{"type": "summary_text", "text": reply.reasoning[:40]}]}
            yield self._event("response.output_item.added", {"output_index": len(output), "item": item})
            if "reasoning.encrypted_content" in (body.get("include") or []):
                item = dict(item, encrypted_content=seal(reply.reasoning, model))
            yield self._event("response.output_item.done", {"output_index": len(output), "item": item})
            output.append(item)
        text, kind = (reply.refusal, "refusal") if reply.refusal else (reply.text, "output_text")
        if text:
            index, item_id = len(output), f"msg_fake{len(self.requests)}"
            item = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}
            yield self._event("response.output_item.added", {"output_index": index, "item": item})
            for piece in chunks(text, reply.chunk_size):
                yield self._event(f"response.{kind}.delta", {"item_id": item_id, "output_index": index,
                                                             "content_index": 0, "delta": piece})
            part = {"type": "refusal", "refusal": text} if reply.refusal else {"type": "output_text", "text": text,
                                                                                "annotations": []}
            item = dict(item, status="completed", content=[part])
            yield self._event("response.output_item.done", {"output_index": index, "item": item})
            output.append(item)
        for call_id, name, arguments in reply.tool_calls:
            index, item_id = len(output), f"fc_{call_id}"
            item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": "",
                    "status": "in_progress"}
            yield self._event("response.output_item.added", {"output_index": index, "item": item})
            for piece in chunks(arguments, reply.chunk_size):
                yield self._event("response.function_call_arguments.delta", {"item_id": item_id, "output_index": index,
                                                                             "delta": piece})
            item = dict(item, arguments=arguments, status="completed")
            yield self._event("response.function_call_arguments.done", {"item_id": item_id, "output_index": index,
                                                                        "arguments": arguments})
            yield self._event("response.output_item.done", {"output_index": index, "item": item})
            output.append(item)
        if not reply.finish:
            return
        usage = reply.usage
        if usage == DEFAULT:
            usage = responses_usage(prompt, max(1, count_reply(text, reply.tool_calls)))
        done = dict(response, output=output, usage=usage)
        if reply.stop_reason in _INCOMPLETE:
            yield self._event("response.incomplete", {"response": dict(
                done, status="incomplete", incomplete_details={"reason": reply.stop_reason})})
        else:
            yield self._event("response.completed", {"response": dict(done, status="completed")})
