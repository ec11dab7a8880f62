"""Retrying a failed request in our code rather than inside an SDK, so each retry can be shown.

The providers post over httpx2 themselves (the Anthropic SDK's client, for a credentials profile,
is created with ``max_retries=0``); a provider's ``stream`` wraps its one attempt in :func:`with_retries`, which yields a :class:`~mini_letta.providers.base.Retrying` event before
each wait ("server error 500, retrying in 2 s (1/2)"). Only a request that failed before its reply
started is retried, as the SDKs do: a reply that broke off mid-stream is reported, not re-sent.
The waits follow the SDKs: ``retry-after-ms`` / ``retry-after`` when the server names a wait of at
most a minute, else 0.5 s doubling up to 8 s, with up to a quarter taken off at random so that
many clients do not retry in step.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from mini_letta.errors import AuthenticationError, ContextOverflowError, MiniLettaError, ProviderError
from mini_letta.providers.base import Retrying, StreamEvent, is_json_response
from mini_letta.settings import SETTINGS



def attempt(send: Callable[[], Any], send_error: tuple[type[BaseException], ...],
            map_error: Callable[..., ProviderError],
            read: Callable[[Any], Iterator[StreamEvent]],
            read_whole: Callable[[bytes], Iterator[StreamEvent]]) -> Iterator[StreamEvent]:
    """One attempt of a streaming request: ``send()`` makes it and returns the reply, a
    :class:`~mini_letta.providers.http_stream.Streamed`, read with ``read``
    (or, from a server that ignores ``stream``, one plain JSON body, bounded, read with ``read_whole``),
    then closed. One of ``send_error`` from ``send`` is ``map_error(exc)`` marked as failed before the reply
    began (so it may be retried); one while reading is ``map_error(exc, mid_stream=True)``."""
    import httpx2

    try:
        stream = send()
    except send_error as exc:
        raise request_failed(map_error(exc), exc) from None
    try:
        if is_json_response(stream.response):
            yield from read_whole(stream.body())
        else:
            yield from read(stream)
    except MiniLettaError:
        raise
    except (*send_error, httpx2.HTTPError, httpx2.StreamError, ValueError, OSError) as exc:
        raise map_error(exc, mid_stream=True) from None
    finally:
        stream.close()


def request_failed(error: ProviderError, exc: BaseException) -> ProviderError:
    """Mark ``error`` (mapped from ``exc``) as a request that failed before its reply began."""
    error.before_reply = True
    error.retry_after = retry_after(getattr(getattr(exc, "response", None), "headers", None))
    return error


def retry_after(headers: Any) -> float | None:
    """The wait a server asked for, in seconds, when it is a usable one (0 < wait <= 60 s)."""
    if not headers:
        return None
    seconds: float | None = None
    try:
        if headers.get("retry-after-ms"):
            seconds = float(headers["retry-after-ms"]) / 1000
        elif headers.get("retry-after"):
            raw = headers["retry-after"]
            try:
                seconds = float(raw)
            except ValueError:
                parsed = email.utils.parsedate_to_datetime(raw)
                seconds = parsed.timestamp() - time.time()
    except (TypeError, ValueError, IndexError):
        return None
    return seconds if seconds is not None and 0 < seconds <= SETTINGS.providers.retry_after_max_seconds else None


def _retryable(error: ProviderError) -> bool:
    if isinstance(error, (AuthenticationError, ContextOverflowError)):
        return False
    return error.retryable and getattr(error, "before_reply", False)


def delay_for(error: ProviderError, attempt: int) -> float:
    asked = getattr(error, "retry_after", None)
    if asked is not None:
        return asked
    wait = SETTINGS.providers
    return min(wait.retry_max_delay_seconds, wait.retry_first_delay_seconds * 2 ** (attempt - 1)) * (1 - wait.retry_jitter * random.random())


def reason(error: ProviderError) -> str:
    """A few words for the retry line: "server error 500", "rate limited (429)", "timed out"."""
    if error.status == 429:
        return "rate limited (429)"
    if error.status is not None:
        return f"server error {error.status}"
    text = str(error)
    for cut in (" (", ";"):
        text = text.split(cut)[0]
    return text.strip()


def with_retries(attempt_once: Callable[[], Iterator[StreamEvent]], retries: int,
                 sleep: Callable[[float], None] = time.sleep) -> Iterator[StreamEvent]:
    """Yield the events of ``attempt_once()``, starting it again up to ``retries`` times."""
    attempt = 0
    while True:
        try:
            yield from attempt_once()
            return
        except ProviderError as error:
            if attempt >= retries or not _retryable(error):
                raise
            attempt += 1
            delay = delay_for(error, attempt)
            yield Retrying(reason(error), delay, attempt, retries)
            sleep(delay)
