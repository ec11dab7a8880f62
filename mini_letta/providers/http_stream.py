"""A streamed JSON POST over httpx2, for a provider that sends its request body as built.

What an SDK's client gave the providers, without the SDK: a pooled connection, the timeouts
of :mod:`~mini_letta.providers.network`, the HTTP error as status + parsed body, and the reply's
server-sent events as JSON objects. ``import openai`` takes ~0.8 s, ``import anthropic`` ~2 s
(their types are pydantic models), all of it before the first request can go out; ``httpx2``, which the SDKs use
underneath, ~0.1 s. Retries stay ours (:mod:`~mini_letta.providers.retry`).

The failures are this module's own types, so a provider maps them as it mapped the SDK's:
:class:`HttpUnreachable` (no server answered), :class:`HttpTimeout`, :class:`HttpStatusError`
(an error status, or an error event inside the stream: ``status`` None), :class:`HttpRedirected`,
:class:`HttpTooLarge`.

What a server may do to the client is bounded here, for every request of every provider and of the
probe (:func:`fetch`):

- A redirect is followed only within the request's own origin (scheme, host and port), at most
  ``SETTINGS.http_max_redirects`` times; one to another origin is not followed at all, so neither
  the key, nor a custom header, nor the conversation goes there (and never from https to http).
- A body read whole (an error, a JSON reply, a probe's answer) stops at
  ``SETTINGS.http_body_max_bytes``, counted after decompression (httpx2 inflates in pieces of at
  most 1 MiB); one event at ``http_event_max_bytes``, a whole stream at ``http_stream_max_bytes``.
- A stream must bring an event within the read timeout (``MINI_LETTA_TIMEOUT``) of the last one:
  keep-alive comments (``: ping``) and ``ping`` events do not count as one. The whole reply must be
  in within the reply deadline (``MINI_LETTA_REPLY_DEADLINE``, ``SETTINGS.reply_deadline_seconds``).
- The events are read whatever the reply's content type says (a proxy may label them
  ``text/plain``); only ``application/json`` is one body (a server that ignored ``stream``).
"""

from __future__ import annotations

import codecs
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
from httpx2._sse import _SSEParser  # httpx2's own event parser, without EventSource's content-type check

from mini_letta.errors import ProviderError
from mini_letta.providers import errors_map
from mini_letta.settings import SETTINGS
from mini_letta.trust.urls import mask_userinfo, shown_url

# What follows ``[DONE]`` is only the body's end (a blank line, a final chunk): reading it lets the
# connection go back to the pool (httpcore reuses only a response read to its end). A server that
# sends more than this many chunks is left as the SDKs left every server: its connection closed.
_READ_AFTER_DONE = 16
# Only the encodings httpx2 inflates in bounded pieces with the standard library are asked for.
_ACCEPT_ENCODING = "gzip, deflate"


class HttpError(Exception):
    """A request that did not give a usable reply."""


class HttpUnreachable(HttpError):
    """No server answered (refused, unknown host, reset before a reply)."""


class HttpTimeout(HttpError):
    """The connection or the reply took longer than the timeout; ``seconds`` and ``setting`` (the
    variable that sets it) when a deadline of this module's passed, rather than a single read's."""

    def __init__(self, message: str, seconds: float | None = None, setting: str | None = None):
        super().__init__(message)
        self.seconds = seconds
        self.setting = setting


class HttpRedirected(HttpError):
    """The server redirected to another origin (or too often), which is not followed. ``source`` and
    ``target`` as they may be shown (userinfo masked)."""

    def __init__(self, source: str, target: str, too_many: bool = False):
        super().__init__(f"redirected from {source} to {target}")
        self.source = source
        self.target = target
        self.too_many = too_many


class HttpTooLarge(HttpError):
    """A body, an event or a stream over its limit (``limit`` bytes, ``what`` in words)."""

    def __init__(self, what: str, limit: int):
        super().__init__(f"{what} larger than {limit_text(limit)}")
        self.what = what
        self.limit = limit


def limit_text(limit: int) -> str:
    """Bytes in words: "16 MiB", "512 KiB"."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= size:
            return f"{limit / size:g} {unit}"
    return f"{limit} bytes"


class HttpStatusError(HttpError):
    """The server answered with an error: an HTTP status >= 400 (``status``), or an error event in
    the stream (``status`` None). ``body`` is the reply's JSON, or its text; ``message`` reads like
    the SDKs' ("Error code: 400 - {...}")."""

    def __init__(self, message: str, status: int | None, body: Any, response: httpx2.Response | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body
        self.response = response


def _failure(exc: httpx2.HTTPError) -> HttpError:
    if isinstance(exc, httpx2.TimeoutException):
        return HttpTimeout(str(exc) or type(exc).__name__)
    return HttpUnreachable(str(exc) or type(exc).__name__)


def provider_error(exc: BaseException, *, provider: str, base_url: str, read_timeout: float | None, key_env: str,
                   model: str, mid_stream: bool = False, error_object: bool = False) -> ProviderError:
    """``exc`` (this module's, or httpx2's while reading) as the provider's error. ``error_object``:
    hand :mod:`~mini_letta.providers.errors_map` the body's ``error`` object where there is one, as
    the OpenAI SDK did (the Anthropic SDK handed over the whole body)."""
    if isinstance(exc, HttpTimeout) and exc.setting:
        return errors_map.deadline_error(provider, str(exc), exc.setting)
    if isinstance(exc, (HttpTimeout, httpx2.TimeoutException)):
        return errors_map.timeout_error(provider, read_timeout)
    if isinstance(exc, HttpRedirected):
        return errors_map.redirect_error(provider, exc.source, exc.target, exc.too_many)
    if isinstance(exc, HttpTooLarge):
        return errors_map.too_large_error(provider, str(exc))
    if isinstance(exc, (HttpUnreachable, httpx2.TransportError)) and mid_stream:
        return errors_map.broken_stream_error(provider, mask_userinfo(str(exc.__cause__ or exc)))
    if isinstance(exc, HttpUnreachable):
        return errors_map.connection_error(provider, base_url, mask_userinfo(str(exc.__cause__ or exc)))
    if isinstance(exc, HttpStatusError):  # an error status, or an error event inside the stream
        body = exc.body.get("error", exc.body) if error_object and isinstance(exc.body, dict) else exc.body
        return errors_map.status_error(provider, exc.status, body, exc.message, model=model, key_env=key_env)
    return errors_map.broken_stream_error(provider, f"{type(exc).__name__}: {exc}")


def status_error(response: httpx2.Response, content: bytes) -> HttpStatusError:
    """The error for a reply with an error status, from its body (read, bounded)."""
    text = content.decode(response.encoding or "utf-8", "replace")
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text or None
    shown = parsed if parsed is not None else response.reason_phrase
    return HttpStatusError(f"Error code: {response.status_code} - {shown}", response.status_code, parsed, response)


def stream_error(data: dict[str, Any]) -> HttpStatusError:
    """The error for an event that carries ``error`` instead of a chunk (the stream has begun);
    ``body`` is the whole event."""
    error = data.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = error if isinstance(error, str) and error else "An error occurred during streaming"
    return HttpStatusError(message, None, data)


def read_body(response: httpx2.Response, limit: int | None = None, what: str = "a reply") -> bytes:
    """The whole (decompressed) body of ``response``, at most ``limit`` bytes (the body cap); over
    it, :class:`HttpTooLarge` and the connection closed. httpx2's failures are raised as they are."""
    limit = SETTINGS.http_body_max_bytes if limit is None else limit
    parts: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            response.close()
            raise HttpTooLarge(what, limit)
        parts.append(chunk)
    return b"".join(parts)


class Streamed:
    """A reply whose headers have arrived with a success status; read it with :meth:`events` (or,
    when the server ignored ``stream`` and sent one JSON body, :meth:`body`), then close it.
    ``idle``: the longest wait for an event, in seconds (None: httpx2's read timeout alone);
    ``deadline``: the :func:`time.monotonic` by which the whole reply must be in (None: none)."""

    def __init__(self, response: httpx2.Response, idle: float | None = None, deadline: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.response = response
        self.idle = idle
        self.deadline = deadline
        self._clock = clock

    def body(self) -> bytes:
        """The reply as one body, bounded like every body read whole."""
        return read_body(self.response)

    def events(self) -> Iterator[Any]:
        """Each event's data parsed as JSON, up to ``[DONE]`` or the body's end. A read that fails
        raises httpx2's error (mapped by the provider as "broke off" or "timed out"), a deadline
        passed :class:`HttpTimeout`, a stream or event over its cap :class:`HttpTooLarge`; an event
        that is not JSON raises ValueError."""
        parser = _SSEParser(SETTINGS.http_event_max_bytes)
        text = codecs.getincrementaldecoder("utf-8")("replace")
        last_event = self._clock()
        size = 0
        chunks = self.response.iter_bytes()
        try:
            for chunk in chunks:
                size += len(chunk)
                if size > SETTINGS.http_stream_max_bytes:
                    raise HttpTooLarge("a streamed reply", SETTINGS.http_stream_max_bytes)
                try:
                    events = list(parser.decode(text.decode(chunk)))
                except httpx2.SSEError:
                    raise HttpTooLarge("an event of the stream", SETTINGS.http_event_max_bytes) from None
                for event in events:
                    if event.event == "ping" or not event.data:
                        continue  # keep-alive: it shows the connection is open, not that the reply moves
                    if event.data.startswith("[DONE]"):
                        self._drain(chunks)
                        return
                    last_event = self._clock()
                    yield json.loads(event.data)
                self._check_clock(last_event)
            for event in parser.flush():
                if event.data and not event.data.startswith("[DONE]") and event.event != "ping":
                    yield json.loads(event.data)
        finally:
            chunks.close()

    def _check_clock(self, last_event: float) -> None:
        now = self._clock()
        if self.deadline is not None and now > self.deadline:
            raise HttpTimeout("the reply was not complete within the reply deadline", None,
                              "MINI_LETTA_REPLY_DEADLINE")
        if self.idle is not None and now - last_event > self.idle:
            raise HttpTimeout(f"no event for {self.idle:g} s, only keep-alive comments", self.idle,
                              "MINI_LETTA_TIMEOUT")

    @staticmethod
    def _drain(chunks: Iterator[bytes]) -> None:
        try:
            for _, _rest in zip(range(_READ_AFTER_DONE), chunks):
                pass
        except (httpx2.HTTPError, httpx2.StreamError, OSError):
            pass  # only the connection is lost: the reply was whole at [DONE]

    def close(self) -> None:
        self.response.close()


@dataclass
class Fetched:
    """A whole reply to :meth:`HttpStream.fetch`: its status and (bounded) body."""

    status: int
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


class HttpStream:
    """One pooled client for a provider's requests, with its fixed headers and timeout.
    ``reply_deadline``: seconds a whole reply may take (None: ``MINI_LETTA_REPLY_DEADLINE``, else
    ``SETTINGS.reply_deadline_seconds``)."""

    def __init__(self, headers: dict[str, str], timeout: httpx2.Timeout, *, reply_deadline: float | None = None):
        from mini_letta.providers.network import reply_deadline as configured_deadline

        self._timeout = timeout
        self._reply_deadline = configured_deadline() if reply_deadline is None else reply_deadline
        self._client = httpx2.Client(headers={"Accept-Encoding": _ACCEPT_ENCODING, **headers}, timeout=timeout,
                                     follow_redirects=False)

    def post(self, url: str, body: bytes, headers: dict[str, str] | None = None) -> Streamed:
        """Send ``body`` (JSON bytes) and return once the reply's headers are in. Raises
        :class:`HttpStatusError` for an error status (its body read, bounded), :class:`HttpUnreachable`
        or :class:`HttpTimeout` when no reply came, :class:`HttpRedirected` for a redirect that is
        not followed."""
        request_headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if headers:
            request_headers.update(headers)
        deadline = time.monotonic() + self._reply_deadline if self._reply_deadline else None
        response = self._send("POST", url, body, request_headers)
        if response.status_code >= 400:
            raise self._status_error(response)
        return Streamed(response, self._timeout.read, deadline)

    def fetch(self, method: str, url: str, body: bytes | None = None, *, timeout: float | None = None,
              headers: dict[str, str] | None = None) -> Fetched:
        """A request whose reply is read whole (bounded), whatever its status; ``timeout``: this
        request's, in seconds. Raises like :meth:`post` for no reply, a redirect not followed, or a
        body over the cap (:class:`HttpTooLarge`)."""
        request_headers = dict(headers or {})
        if body is not None:
            request_headers.setdefault("Content-Type", "application/json")
        response = self._send(method, url, body, request_headers,
                              httpx2.Timeout(timeout) if timeout is not None else None)
        try:
            return Fetched(response.status_code, read_body(response, what="an answer"))
        except httpx2.HTTPError as exc:
            raise _failure(exc) from exc
        finally:
            response.close()

    def close(self) -> None:
        self._client.close()

    def _send(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
              timeout: httpx2.Timeout | None = None) -> httpx2.Response:
        """The reply's headers (its body still to read), redirects within the origin followed."""
        extra = {"timeout": timeout} if timeout is not None else {}
        try:
            request = self._client.build_request(method, url, content=body, headers=headers, **extra)
            origin = request.url.origin
            for _hop in range(SETTINGS.http_max_redirects + 1):
                response = self._client.send(request, stream=True)
                if not response.has_redirect_location:
                    return response
                target = response.next_request
                response.close()  # a redirect's body is never read
                if target is None or target.url.origin != origin:
                    location = str(target.url) if target is not None else response.headers.get("location", "")
                    raise HttpRedirected(shown_url(request.url), shown_url(location))
                request = target
        except httpx2.HTTPError as exc:
            raise _failure(exc) from exc
        raise HttpRedirected(shown_url(url), shown_url(request.url), too_many=True)

    @staticmethod
    def _status_error(response: httpx2.Response) -> HttpStatusError:
        try:
            content = read_body(response, what="an error body")
        except HttpTooLarge as too_large:
            content = str(too_large).encode()
        except httpx2.HTTPError as exc:
            raise _failure(exc) from exc
        finally:
            response.close()
        return status_error(response, content)
