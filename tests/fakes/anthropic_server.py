"""A fake Anthropic Messages API: ``POST /v1/messages`` with ``stream: true``, SSE events as the real one,
and the self-description routes of local servers (:mod:`fakes.local`), as llama-server answers both.

Usage for a Reply is Anthropic's dict, e.g. ``anthropic_usage(10, 20, cache_creation=300, cache_read=5000)``;
the input side goes out in ``message_start``, the output count in ``message_delta``, as the real API does.
``Reply(usage=None)`` reports zeros (the real API always sends a usage object); left at DEFAULT the
input side is the server's own count of the request (:mod:`fakes.tokens`).

Its own compaction, as the API's (``compact_20260112`` in ``context_management.edits``, beta
``compact-2026-01-12``): a request whose input reaches the edit's trigger (at least 50,000 tokens,
else HTTP 400) is answered with one ``compaction`` block (``content`` the fake's summary: the first
words of each user message, the focus given as ``instructions``, an earlier compaction's summary;
``encrypted_content`` and ``signature`` its own seal) and ``stop_reason: "compaction"`` with
``pause_after_compaction``; the compaction's own cost in ``usage.iterations``. A request under the
trigger is answered from the queue, as the API answers it. A request that carries a compaction
block must send the beta and the block as it was issued (else HTTP 400); what comes before the
block is dropped before counting, as the API drops it. ``compact_fault`` answers a compacting
request with an error instead.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from . import DEFAULT, FakeHandler, FakeServer, Fault, Recorded, Reply, chunks
from .responses_server import seal, unseal
from .structure import anthropic_problem
from .tokens import count_reply, count_request, count_text

COMPACT_BETA = "compact-2026-01-12"
COMPACT_MIN_TRIGGER = 50_000


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

    def __init__(self) -> None:
        super().__init__()
        self.compactions: list[str] = []  # the summaries it wrote, oldest first
        self.compact_fault: Fault | None = None
        self._issued: list[dict[str, Any]] = []  # the compaction blocks it sent

    # --- its own compaction ----------------------------------------------------------------------
    def serve_completion(self, handler: FakeHandler, request: Recorded) -> None:
        body = request.body if isinstance(request.body, dict) else {}
        betas = {b.strip() for b in request.headers.get("anthropic-beta", "").split(",")}
        edits = [e for e in ((body.get("context_management") or {}).get("edits") or []) if isinstance(e, dict)]
        compact = next((e for e in edits if e.get("type") == "compact_20260112"), None)
        problem = self._compaction_problem(body, compact, COMPACT_BETA in betas)
        if problem is not None:
            with self.lock:
                self.malformed += 1
            handler.send_json(400, self.error_body(400, problem))
            return
        trigger = ((compact or {}).get("trigger") or {}).get("value", 150_000)
        if compact is None or self.prompt_tokens(body) < trigger:
            super().serve_completion(handler, request)
            return
        if self.compact_fault is not None:
            fault = self.compact_fault
            handler.send_json(fault.status, fault.body or self.error_body(fault.status, fault.message), fault.headers)
            return
        self._serve_compaction(handler, body, compact)

    def _compaction_problem(self, body: dict[str, Any], compact: dict[str, Any] | None, beta: bool) -> str | None:
        blocks = [b for m in body.get("messages") or [] if isinstance(m.get("content"), list)
                  for b in m["content"] if isinstance(b, dict) and b.get("type") == "compaction"]
        if (compact is not None or blocks) and not beta:
            return f"compaction requires the beta header: anthropic-beta: {COMPACT_BETA}"
        trigger = ((compact or {}).get("trigger") or {}).get("value", COMPACT_MIN_TRIGGER)
        if compact is not None and (not isinstance(trigger, int) or trigger < COMPACT_MIN_TRIGGER):
            return f"context_management.edits.0.trigger.value: must be at least {COMPACT_MIN_TRIGGER}"
        for block in blocks:
            sent = {k: v for k, v in block.items() if k != "cache_control"}
            if sent not in self._issued or (unseal(sent.get("encrypted_content")) or ("",))[0] != body.get("model"):
                return "messages: a compaction block could not be verified; send it back as it was returned"
        return None

    def _serve_compaction(self, handler: FakeHandler, body: dict[str, Any], edit: dict[str, Any]) -> None:
        earlier, users = [], []
        for message in self._read_part(body.get("messages") or []):
            for block in message["content"] if isinstance(message.get("content"), list) else []:
                if block.get("type") == "compaction":
                    earlier.append(block.get("content") or "")
                elif message.get("role") == "user" and block.get("type") == "text":
                    users.append(block["text"])
        summary = " ".join(earlier + ["Compacted: " + "; ".join(text[:40] for text in users)])
        if edit.get("instructions"):
            summary += " Focus: " + edit["instructions"]
        model = body.get("model", "")
        block = {"type": "compaction", "content": summary, "encrypted_content": seal(summary, model),
                 "signature": seal(f"signed:{len(self._issued)}", model), "tool_changes": []}
        prompt = self.prompt_tokens(body)
        with self.lock:
            self.compactions.append(summary)
            self._issued.append(block)
        spent = dict(anthropic_usage(prompt, count_text(summary)), type="compaction")
        handler.start_stream()
        handler.write_chunk(_event("message_start", {"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": anthropic_usage(0, 1)}}))
        handler.write_chunk(_event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "compaction", "content": "", "signature": block["signature"], "tool_changes": []}}))
        for piece in chunks(summary, 64):
            handler.write_chunk(_event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                               "delta": {"type": "compaction_delta", "content": piece}}))
        handler.write_chunk(_event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "compaction_delta", "encrypted_content": block["encrypted_content"]}}))
        handler.write_chunk(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        handler.write_chunk(_event("message_delta", {"type": "message_delta",
                                                     "delta": {"stop_reason": "compaction", "stop_sequence": None},
                                                     "usage": {"output_tokens": 0, "iterations": [spent]}}))
        handler.write_chunk(_event("message_stop", {"type": "message_stop"}))
        handler.end_stream()

    @staticmethod
    def _read_part(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages the API reads: from the last one holding a compaction block on."""
        for index in range(len(messages) - 1, -1, -1):
            content = messages[index].get("content")
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "compaction" for b in content):
                return messages[index:]
        return messages

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """Counted as the API reads it: from the last compaction block on, the block as its summary."""
        messages = [{**m, "content": [{"type": "text", "text": b.get("content") or ""} if b.get("type") == "compaction"
                                      else b for b in m["content"]]} if isinstance(m.get("content"), list) else m
                    for m in self._read_part(body.get("messages") or [])]
        read = {**body, "messages": messages}
        return count_request(read if self.tools_in_template else {k: v for k, v in read.items() if k != "tools"})

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
