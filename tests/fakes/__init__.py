"""Fake provider servers on 127.0.0.1 that speak the real wire formats, streaming included.

Both fakes share this machinery: a ``ThreadingHTTPServer`` on an ephemeral port, a record of every
request it received (:class:`Recorded`), and a queue of scripted replies, one consumed per
completion request (a retry consumes the next one)::

    with FakeOpenAIServer() as server:
        server.enqueue(Reply(text="hello"), Fault(429, headers={"retry-after-ms": "10"}))
        provider = OpenAIProvider("gpt-test", base_url=server.base_url, api_key="k")
        server.requests[-1].body["messages"]

A :class:`Reply` describes a successful streamed reply and, optionally, how its stream goes wrong
(cut, malformed event, error event, stall). A :class:`Fault` is an HTTP error status with a JSON
body. When the queue is empty the server answers 500 with ``x-should-retry: false`` so that a
test missing a reply fails at once with a clear message instead of retrying.

The fakes disagree with us, as real servers do: they count a request with their own tokenizer
(:mod:`fakes.tokens`, not o200k and not a constant multiple of it) and report that count as the
prompt usage of a ``Reply`` whose usage is left at DEFAULT. A test that sets ``server.n_ctx`` (or
calls ``as_llama_cpp`` / ``as_vllm`` / ``as_lm_studio``) gets a served window that is enforced:

- ``strict_window = True`` (the default): prompt + ``max_tokens`` must fit, as vLLM and OpenAI
  require; a stricter rule than llama.cpp's, so that a test that passes has margin;
- ``strict_window = False``: llama.cpp's own rule, measured on llama-server: a prompt of ``n_ctx``
  tokens or more is rejected, a smaller one is answered and the reply is cut where the window ends
  (finish reason ``length``), whatever ``max_tokens`` says.

A request over the window is answered with HTTP 400 in ``overflow_style``: "llama.cpp" (the
default; llama-server answers its ``/v1/messages`` with the same body), "vllm" or "anthropic".
``server.rejections`` counts them. A request whose tool calls and results do not pair up is
answered with HTTP 400 in the API's own words (:mod:`fakes.structure`), counted by
``server.malformed``.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

from .local import LocalServerRoutes
from .tokens import count_reply, longest_prefix_within

DEFAULT = "default"  # Reply.usage: let the server invent plausible usage numbers


@dataclass
class Reply:
    """One streamed reply. ``usage`` is the API's own usage dict (or DEFAULT, or None for none).

    Faults inside the stream, counted in SSE events sent before them:
    ``cut_after`` closes the connection without finishing the stream; ``malformed_after`` sends an
    event whose data is not JSON; ``error_after`` sends the API's in-stream error event with
    ``error_body``; ``stall_after`` sleeps ``stall`` seconds at that point (``stall`` alone, with
    ``stall_after`` None, sleeps before sending the response headers). Sleeps end early when the
    server stops, so a stalled test never hangs the suite.
    """

    text: str = ""
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments JSON)
    usage: Any = DEFAULT
    chunk_size: int = 3
    stop_reason: str | None = None  # the API's own value; default derived from the content
    # OpenAI's refusal text (``delta.refusal``), sent instead of content; Anthropic has no such field.
    refusal: str = ""
    # The Responses API's reasoning: sent as a reasoning item (sealed when the request asks for
    # ``reasoning.encrypted_content``) before the text; the other APIs leave it out.
    reasoning: str = ""
    # False: the stream ends cleanly but without its finish (no finish_reason / message_stop), as
    # when a proxy or the server cuts a reply short without breaking the connection.
    finish: bool = True
    cut_after: int | None = None
    malformed_after: int | None = None
    error_after: int | None = None
    error_body: dict[str, Any] | None = None
    stall: float = 0.0
    stall_after: int | None = None
    # Held before the response headers until the test sets it (or the server stops): a step that
    # lasts exactly as long as the test needs, with no sleep to tune.
    hold: threading.Event | None = None


@dataclass
class Fault:
    """An HTTP error reply: status, JSON body (a default API-shaped one when None), extra headers."""

    status: int
    message: str = "scripted fault"
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or None for an empty body


def chunks(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] if text else []


class StreamAborted(Exception):
    """Raised inside a handler to drop the connection mid-reply."""


class FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked streaming and keep-alive, like real servers
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # the test output stays clean
        pass

    def _record(self) -> Recorded:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        recorded = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        with self.server.fake.lock:
            self.server.fake.requests.append(recorded)
        return recorded

    def do_GET(self) -> None:
        self.server.fake.route(self, self._record())

    def do_POST(self) -> None:
        self.server.fake.route(self, self._record())

    # --- writing ------------------------------------------------------------------------------
    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def abort(self) -> None:
        """Drop the connection without the terminating chunk: the client sees a cut stream."""
        self.wfile.flush()
        self.close_connection = True
        raise StreamAborted


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up (timeouts, Ctrl-C tests) and scripted aborts are expected here.
        pass


class LoopbackServer:
    """A ``ThreadingHTTPServer`` of ``server_class`` on ``host`` (a loopback address), an ephemeral
    port, served in a daemon thread while the ``with`` lasts; its handlers reach this object as
    ``self.server.fake``. ``stopping`` is set first when it stops, so that sleeps end early."""

    server_class: type[ThreadingHTTPServer]
    handler_class: type[BaseHTTPRequestHandler]
    host = "127.0.0.1"

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._httpd: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self):
        self._httpd = self.server_class((self.host, 0), self.handler_class)
        self._httpd.fake = self
        # A short poll interval keeps shutdown (once per test) quick.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def root_url(self) -> str:
        assert self._httpd is not None, "start the server with `with`"
        return f"http://{self.host}:{self._httpd.server_address[1]}"


class FakeServer(LoopbackServer, LocalServerRoutes):
    """Base: lifecycle, request log, reply queue, SSE emission with scripted stream faults, and the
    routes on which local servers describe themselves (:mod:`fakes.local`)."""

    server_class = _Server
    handler_class = FakeHandler

    def __init__(self) -> None:
        LoopbackServer.__init__(self)
        LocalServerRoutes.__init__(self)
        self.requests: list[Recorded] = []
        self.replies: deque[Reply | Fault] = deque()
        self.lock = threading.Lock()
        # Set when a client hung up while a reply was still being written (Ctrl-C, timeouts).
        self.client_hung_up = threading.Event()
        self.strict_window = True
        self.overflow_style = "llama.cpp"
        self.rejections = 0
        self.malformed = 0

    # --- scripting ----------------------------------------------------------------------------
    def enqueue(self, *replies: Reply | Fault) -> None:
        with self.lock:
            self.replies.extend(replies)

    def requests_to(self, path: str) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.path.split("?")[0] == path]

    def next_reply(self) -> Reply | Fault | None:
        with self.lock:
            return self.replies.popleft() if self.replies else None

    def sleep(self, seconds: float) -> None:
        self.stopping.wait(seconds)

    # --- serving ------------------------------------------------------------------------------
    def route(self, handler: FakeHandler, request: Recorded) -> None:
        raise NotImplementedError

    def serve_completion(self, handler: FakeHandler, request: Recorded) -> None:
        if not isinstance(request.body, dict) or request.body.get("stream") is not True:
            handler.send_json(400, self.error_body(400, "the fake servers only answer streaming requests"))
            return
        problem = self.structure_problem(request.body)
        if problem is not None:
            with self.lock:
                self.malformed += 1
            handler.send_json(400, self.error_body(400, problem))
            return
        prompt = self.prompt_tokens(request.body)
        max_tokens = (request.body.get("max_tokens") or request.body.get("max_completion_tokens")
                      or request.body.get("max_output_tokens") or 0)
        if self.n_ctx is not None and (prompt + max_tokens > self.n_ctx if self.strict_window else prompt >= self.n_ctx):
            with self.lock:
                self.rejections += 1
            self.reject_overflow(handler, prompt, max_tokens, self.n_ctx)
            return
        reply = self.next_reply()
        if reply is None:
            handler.send_json(500, self.error_body(500, "fake server: no scripted reply left"),
                              {"x-should-retry": "false"})
            return
        if isinstance(reply, Fault):
            handler.send_json(reply.status, reply.body or self.error_body(reply.status, reply.message), reply.headers)
            return
        if self.n_ctx is not None and count_reply(reply.text, reply.tool_calls) > self.n_ctx - prompt:
            reply = replace(reply, text=longest_prefix_within(reply.text, self.n_ctx - prompt), tool_calls=[],
                            stop_reason=self.length_stop)
        if reply.stall and reply.stall_after is None:
            self.sleep(reply.stall)
        while reply.hold is not None and not reply.hold.wait(0.02) and not self.stopping.is_set():
            pass
        try:
            handler.start_stream()
            self._emit(handler, reply, request.body, prompt)
            handler.end_stream()
        except StreamAborted:
            return
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True
            self.client_hung_up.set()

    def reject_overflow(self, handler: FakeHandler, prompt: int, max_tokens: int, n_ctx: int) -> None:
        """Answer a request over the window (HTTP 400 with ``overflow_body``; an API may do it in-stream)."""
        handler.send_json(400, self.overflow_body(prompt, max_tokens, n_ctx))

    def overflow_body(self, prompt: int, max_tokens: int, n_ctx: int) -> dict[str, Any]:
        if self.overflow_style == "vllm":
            return {"object": "error", "type": "BadRequestError", "param": None, "code": 400, "message": (
                f"This model's maximum context length is {n_ctx} tokens. However, you requested "
                f"{prompt + max_tokens} tokens ({prompt} in the messages, {max_tokens} in the completion). "
                "Please reduce the length of the messages or completion.")}
        if self.overflow_style == "anthropic":
            return {"type": "error", "error": {"type": "invalid_request_error",
                                               "message": f"prompt is too long: {prompt} tokens > {n_ctx} maximum"}}
        # llama-server's exact body (HTTP 400), also on its Anthropic-style /v1/messages.
        return {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": n_ctx,
                          "message": f"request ({prompt} tokens) exceeds the available context size ({n_ctx} tokens), "
                                     "try increasing it"}}

    def _emit(self, handler: FakeHandler, reply: Reply, body: dict[str, Any], prompt: int) -> None:
        for sent, event in enumerate(self.events(reply, body, prompt)):
            if sent == reply.stall_after:
                self.sleep(reply.stall)
            if sent == reply.cut_after:
                handler.abort()
            if sent == reply.malformed_after:
                handler.write_chunk(self.malformed_event())
                return
            if sent == reply.error_after:
                handler.write_chunk(self.error_event(reply.error_body or self.error_body(500, "overloaded")))
                return
            handler.write_chunk(event)

    # --- per-API wire format ------------------------------------------------------------------
    length_stop = "length"  # the API's finish reason for a reply cut short
    completion_path = ""  # the route replies are asked on ("/v1/chat/completions", ...)

    def completions(self) -> list[Recorded]:
        """The requests to the completion route."""
        return self.requests_to(self.completion_path)

    def api_usage(self, prompt: int, completion: int, cached: int | None = None) -> dict[str, Any]:
        """A usage object in the API's own form: ``prompt`` tokens in, ``cached`` of them from the cache."""
        raise NotImplementedError

    def events(self, reply: Reply, body: dict[str, Any], prompt: int) -> Iterator[bytes]:
        """The SSE events of ``reply``; ``prompt``: the request's tokens as this server counts them."""
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def structure_problem(self, body: dict[str, Any]) -> str | None:
        """Why the API would reject this request's messages, in its own words; None when it would not."""
        raise NotImplementedError

    def malformed_event(self) -> bytes:
        raise NotImplementedError

    def error_event(self, body: dict[str, Any]) -> bytes:
        raise NotImplementedError


def both_openai_apis(test):
    """Run ``test`` (which takes the ``server`` fixture) against the fake Chat Completions server and
    the fake Responses server: what both OpenAI APIs must do alike."""
    import pytest

    return pytest.mark.parametrize("server", ["chat", "responses"], indirect=True)(test)


def openai_provider_name(server: FakeServer) -> str:
    """The provider that speaks ``server``'s OpenAI API."""
    return "openai-responses" if server.completion_path == "/v1/responses" else "openai"


def stream_all(provider, request):
    """Every event of one streamed request: (deltas and tool starts, the finished message)."""
    from mini_letta.providers.base import Done

    events = list(provider.stream(request))
    assert isinstance(events[-1], Done) and not any(isinstance(e, Done) for e in events[:-1])
    return events[:-1], events[-1].message


def ask(text="hi", **kw):
    """A one-message request, as the agent would build it."""
    from mini_letta.messages import Message
    from mini_letta.providers.base import Request

    return Request(system="You are terse.", messages=[Message.user(text)], **kw)
