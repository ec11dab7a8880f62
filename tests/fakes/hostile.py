"""A hostile server on a loopback address: what an attacker's OpenAI- or Anthropic-compatible
endpoint would send, one behaviour per test.

    with HostileServer("127.0.0.2") as elsewhere, HostileServer() as server:
        server.on_any(redirect_to(elsewhere.root_url))   # every request sent on, keeping the path
        ...
        assert elsewhere.requests == []                  # nothing followed it there

``on_any(behaviour)`` sets what every request gets; ``on(path, behaviour)`` one path's. A
behaviour is ``f(handler, recorded)``. Each request is recorded (method, path, lower-case headers,
raw body). The behaviours here: :func:`redirect_to`, :func:`gzip_bomb`, :func:`pings_only`,
:func:`events_as`, and a plain JSON answer (:func:`json_answer`). Loops end when the server stops
or after a bounded count, so a test whose protection is switched off fails instead of hanging.
"""

from __future__ import annotations

import functools
import json
import threading
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from . import LoopbackServer

Behaviour = Callable[["_Handler", "Seen"], None]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"")
        hostile = self.server.fake
        with hostile.lock:
            hostile.requests.append(seen)
        behaviour = hostile.paths.get(self.path.split("?")[0], hostile.default)
        try:
            behaviour(self, seen)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    def head(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: HostileServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class HostileServer(LoopbackServer):
    server_class = _Server

    def __init__(self, host: str = "127.0.0.1"):
        super().__init__()
        self.host = host
        self.handler_class = _Handler
        self.requests: list[Seen] = []
        self.paths: dict[str, Behaviour] = {}
        self.default: Behaviour = json_answer(404, {"error": {"message": "no such route"}})
        self.lock = threading.Lock()

    def on_any(self, behaviour: Behaviour) -> None:
        self.default = behaviour

    def on(self, path: str, behaviour: Behaviour) -> None:
        self.paths[path] = behaviour


# --- behaviours -----------------------------------------------------------------------------------
def json_answer(status: int, payload: Any) -> Behaviour:
    def answer(handler: _Handler, seen: Seen) -> None:
        data = json.dumps(payload).encode()
        handler.head(status, {"content-type": "application/json", "content-length": str(len(data))})
        handler.wfile.write(data)
    return answer


def redirect_to(root_url: str, status: int = 302, path: str | None = None) -> Behaviour:
    """Send every request on to ``root_url`` + its own path, or ``path`` (another server, or this one)."""
    def redirect(handler: _Handler, seen: Seen) -> None:
        handler.head(status, {"location": root_url + (seen.path if path is None else path), "content-length": "0"})
    return redirect


def gzip_bomb(inflated_bytes: int, status: int = 200, content_type: str = "application/json",
              start: bytes = b'{"data": "', end: bytes = b"") -> Behaviour:
    """A small gzip body of ``inflated_bytes`` once inflated (zeros between ``start`` and ``end``):
    1 MB of it is about 1 GB."""
    compressed = _gzipped(start, inflated_bytes - len(start) - len(end), end)

    def bomb(handler: _Handler, seen: Seen) -> None:
        handler.head(status, {"content-type": content_type, "content-encoding": "gzip",
                              "content-length": str(len(compressed))})
        handler.wfile.write(compressed)
    return bomb


@functools.lru_cache(maxsize=4)
def _gzipped(start: bytes, zeros: int, end: bytes) -> bytes:
    """gzip of ``start`` + ``zeros`` zeros + ``end``, compressed a MiB at a time (never held inflated)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    parts, block = [packer.compress(start)], b"0" * (1 << 20)
    for _ in range(zeros // len(block)):
        parts.append(packer.compress(block))
    parts += [packer.compress(b"0" * (zeros % len(block)) + end), packer.flush()]
    return b"".join(parts)


def pings_only(every: float = 0.05, count: int = 200, event: bytes = b": ping\n\n") -> Behaviour:
    """A 200 stream that sends only keep-alive comments (or ``event``), ``count`` of them, then ends."""
    def pings(handler: _Handler, seen: Seen) -> None:
        handler.head(200, {"content-type": "text/event-stream", "transfer-encoding": "chunked"})
        for _ in range(count):
            if handler.server.fake.stopping.wait(every):
                break
            handler.chunk(event)
        handler.end_chunks()
    return pings


def events_as(content_type: str, events: list[bytes], every: float = 0.0) -> Behaviour:
    """A 200 stream of ``events`` (whole SSE events, bytes) labelled ``content_type``."""
    def stream(handler: _Handler, seen: Seen) -> None:
        handler.head(200, {"content-type": content_type, "transfer-encoding": "chunked"})
        for event in events:
            if every and handler.server.fake.stopping.wait(every):
                break
            handler.chunk(event)
        handler.end_chunks()
    return stream


def openai_events(text: str, pieces: int = 1) -> list[bytes]:
    """A complete Chat Completions stream saying ``text`` in ``pieces`` events."""
    size = max(1, len(text) // pieces)
    chunks = [text[i:i + size] for i in range(0, len(text), size)]
    events = [b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}]}
                                     ).encode() + b"\n\n" for c in chunks]
    events.append(b"data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                                         ).encode() + b"\n\n")
    return events + [b"data: [DONE]\n\n"]
