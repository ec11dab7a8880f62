"""A local HTTP server for the benches that speaks just enough of both wire formats.

``POST /v1/chat/completions`` (OpenAI) and ``POST /v1/messages`` (Anthropic) are answered with a
short streamed reply (every other route with 404): the next one scripted with :meth:`WireFake.script` (text, or one tool call),
else a plain text reply. For every request the server keeps the moment its body had fully arrived
and the moment the reply's last byte was written (``time.perf_counter``, the same clock as the
process that runs the bench), so a bench can tell how long the client took between an answer and
its next request, as a server would see it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


COMPLETION_PATHS = ("/v1/chat/completions", "/v1/messages")


@dataclass
class Arrival:
    path: str
    body: bytes
    received: float  # the body had fully arrived
    answered: float = 0.0  # the reply's last byte was written


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # the providers' probes (window, models): nothing to tell
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        if not self.path.endswith(COMPLETION_PATHS):  # llama.cpp's counting routes and the like
            self.do_GET()
            return
        arrival = Arrival(self.path, body, time.perf_counter())
        fake = self.server.fake
        with fake.lock:
            fake.arrivals.append(arrival)
            reply = fake.replies.popleft() if fake.replies else ("text", "Done.")
        events = _anthropic_events(reply) if self.path.endswith("/messages") else _openai_events(reply)
        data = b"".join(events)
        # Headers and body in one write, on a socket without Nagle's delay, as real servers send:
        # two small writes would wait for the client's delayed ACK (~40 ms) and be counted as its.
        head = (f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len(data)}\r\n"
                "\r\n").encode()
        self.wfile.write(head + data)
        self.wfile.flush()
        arrival.answered = time.perf_counter()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: WireFake


class WireFake:
    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []
        self.replies: deque[tuple[str, str]] = deque()
        self.lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def root_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *replies: tuple[str, str]) -> None:
        """Queue replies: ``("text", words)`` or ``("tool", arguments JSON)`` for one ``read_file`` call."""
        with self.lock:
            self.replies.extend(replies)

    def __enter__(self) -> WireFake:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _sse(payload: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(payload).encode() + b"\n\n"


def _openai_events(reply: tuple[str, str]) -> list[bytes]:
    kind, value = reply
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
    if kind == "tool":
        delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": f"call_{time.perf_counter_ns()}",
                                                       "type": "function",
                                                       "function": {"name": "read_file", "arguments": value}}]}
        finish = "tool_calls"
    else:
        delta, finish = {"role": "assistant", "content": value}, "stop"
    return [_sse(dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}])),
            _sse(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])),
            _sse(dict(base, choices=[], usage={"prompt_tokens": 1000, "completion_tokens": 20,
                                               "total_tokens": 1020})),
            b"data: [DONE]\n\n"]


def _anthropic_events(reply: tuple[str, str]) -> list[bytes]:
    kind, value = reply
    start = {"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "bench", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1000, "output_tokens": 1}}}
    if kind == "tool":
        block = {"type": "tool_use", "id": f"toolu_{time.perf_counter_ns()}", "name": "read_file", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": value}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": value}
        stop = "end_turn"
    return [_sse(start, "message_start"),
            _sse({"type": "content_block_start", "index": 0, "content_block": block}, "content_block_start"),
            _sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"),
            _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            _sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": {"output_tokens": 20}}, "message_delta"),
            _sse({"type": "message_stop"}, "message_stop")]
