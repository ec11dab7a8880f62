"""A streamed JSON POST over httpx2, for a provider that sends its request body as built.

What an SDK's client gave the providers, without the SDK: a pooled connection, the timeouts
of :mod:`~mini_letta.providers.network`, the HTTP error as status + parsed body, and the reply's
server-sent events as JSON objects. ``import openai`` takes ~0.8 s, ``import anthropic`` ~2 s
(their types are pydantic models), all of it before the first request can go out; ``httpx2``, which the SDKs use
underneath, ~0.1 s. Retries stay ours (:mod:`~mini_letta.providers.retry`).

The failures are this module's own types, so a provider maps them as it mapped the SDK's:
:class:`HttpUnreachable` (no server answered), :class:`HttpTimeout`, :class:`HttpStatusError`
(an error status, or an error event inside the stream: ``status`` None).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx2

from mini_letta.errors import ProviderError
from mini_letta.providers import errors_map

# What follows ``[DONE]`` is only the body's end (a blank line, a final chunk): reading it lets the
# connection go back to the pool (httpcore reuses only a response read to its end). A server that
# sends more than this is left as the SDKs left every server: its connection closed.
_READ_AFTER_DONE = 16


class HttpError(Exception):
    """A request that did not give a usable reply."""


class HttpUnreachable(HttpError):
    """No server answered (refused, unknown host, reset before a reply)."""


class HttpTimeout(HttpError):
    """The connection or the reply took longer than the timeout."""


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
    if isinstance(exc, (HttpTimeout, httpx2.TimeoutException)):
        return errors_map.timeout_error(provider, read_timeout)
    if isinstance(exc, (HttpUnreachable, httpx2.TransportError)) and mid_stream:
        return errors_map.broken_stream_error(provider, str(exc.__cause__ or exc))
    if isinstance(exc, HttpUnreachable):
        return errors_map.connection_error(provider, base_url, str(exc.__cause__ or exc))
    if isinstance(exc, HttpStatusError):  # an error status, or an error event inside the stream
        body = exc.body.get("error", exc.body) if error_object and isinstance(exc.body, dict) else exc.body
        return errors_map.status_error(provider, exc.status, body, exc.message, model=model, key_env=key_env)
    return errors_map.broken_stream_error(provider, f"{type(exc).__name__}: {exc}")


def status_error(response: httpx2.Response) -> HttpStatusError:
    """The error for a reply with an error status; its body has been read."""
    text = response.text
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


class Streamed:
    """A reply whose headers have arrived with a success status; read it with :meth:`events` (or,
    when the server ignored ``stream`` and sent one JSON body, ``response.read()``), then close it."""

    def __init__(self, response: httpx2.Response):
        self.response = response

    def events(self) -> Iterator[Any]:
        """Each event's data parsed as JSON, up to ``[DONE]`` or the body's end. A read that fails
        raises httpx2's error (mapped by the provider as "broke off" or "timed out"); an event that
        is not JSON raises ValueError."""
        events = iter(httpx2.EventSource(self.response))
        for event in events:
            if event.data.startswith("[DONE]"):
                try:
                    for _rest in itertools.islice(events, _READ_AFTER_DONE):
                        pass
                except (httpx2.HTTPError, httpx2.StreamError, OSError):
                    pass  # only the connection is lost: the reply was whole at [DONE]
                return
            if event.data:
                yield json.loads(event.data)

    def close(self) -> None:
        self.response.close()


class HttpStream:
    """One pooled client for a provider's requests, with its fixed headers and timeout."""

    def __init__(self, headers: dict[str, str], timeout: httpx2.Timeout):
        self._client = httpx2.Client(headers=headers, timeout=timeout, follow_redirects=True)

    def post(self, url: str, body: bytes, headers: dict[str, str] | None = None) -> Streamed:
        """Send ``body`` (JSON bytes) and return once the reply's headers are in. Raises
        :class:`HttpStatusError` for an error status (its body read), :class:`HttpUnreachable` or
        :class:`HttpTimeout` when no reply came."""
        request_headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if headers:
            request_headers.update(headers)
        try:
            request = self._client.build_request("POST", url, content=body, headers=request_headers)
            response = self._client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            raise _failure(exc) from exc
        if response.status_code >= 400:
            try:
                response.read()
            except httpx2.HTTPError as exc:
                raise _failure(exc) from exc
            finally:
                response.close()
            raise status_error(response)
        return Streamed(response)
