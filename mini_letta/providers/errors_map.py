"""Turning what a provider's server said into :mod:`mini_letta.errors` types.

Pure functions over plain values (status code, message text, parsed body), shared by the OpenAI
and Anthropic adapters so that both map every overflow shape the same way. The adapters do the
transport-specific part: picking the status, body and message out of the exception (the Anthropic
SDK's, or :mod:`~mini_letta.providers.http_stream`'s).
"""

from __future__ import annotations

import re
from typing import Any

from mini_letta.errors import AuthenticationError, ContextOverflowError, ProviderError, StreamBrokenError
from mini_letta.trust.urls import shown_url

_DIGITS = r"\d[\d,_]*"
_NUMBER = rf"({_DIGITS})"

# Phrasings that name both numbers, in named groups "limit" and "actual".
_NUMBERED_PATTERNS = [
    # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
    re.compile(rf"too long:\s*(?P<actual>{_DIGITS})\s*tokens?\s*>\s*(?P<limit>{_DIGITS})", re.I),
    # Anthropic: "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000"
    re.compile(rf"exceed context limit:\s*(?P<actual>{_DIGITS})\s*\+\s*{_DIGITS}\s*>\s*"
               rf"(?P<limit>{_DIGITS})", re.I),
    # Gemini: "input token count (9000) exceeds the maximum number of tokens allowed (8192)"
    re.compile(rf"input token count\s*\(?(?P<actual>{_DIGITS})\)?\s*exceeds the maximum number of tokens"
               rf" allowed\s*\(?(?P<limit>{_DIGITS})", re.I),
    # llama.cpp: "request (4276 tokens) exceeds the available context size (4096 tokens), try increasing it"
    # and "input (5000 tokens) is larger than the max context size (4096 tokens). skipping"
    re.compile(rf"(?:request|input)\s*\((?P<actual>{_DIGITS})\s*tokens?\)\s*(?:exceeds the available|is larger "
               rf"than the max) context size\s*\((?P<limit>{_DIGITS})", re.I),
    # TGI: "`inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 ..."
    re.compile(rf"must be\s*<=\s*(?P<limit>{_DIGITS})\W+Given:\s*(?P<actual>{_DIGITS})", re.I),
    # vLLM V1: "The decoder prompt (length 9000) is longer than the maximum model length of 8192"
    re.compile(rf"\(length\s*(?P<actual>{_DIGITS})\)\s*is longer than the maximum model length\s*(?:of|is)?\s*"
               rf"(?P<limit>{_DIGITS})", re.I),
]
# OpenAI, vLLM, Groq, Mistral and friends name the two numbers in separate phrases.
_LIMIT_PATTERNS = [
    re.compile(rf"maximum context length is\s*{_NUMBER}", re.I),
    re.compile(rf"maximum model length\s*(?:of|is)?\s*{_NUMBER}", re.I),
    re.compile(rf"context (?:length|window|size) (?:of|is)\s*(?:only\s*)?{_NUMBER}", re.I),
    re.compile(rf"model with\s*{_NUMBER}\s*maximum context length", re.I),
    # TGI without the "Given:" part
    re.compile(rf"must be\s*<=\s*{_NUMBER}", re.I),
]
_ACTUAL_PATTERNS = [
    re.compile(rf"(?:resulted in|requested|request has|prompt contains|prompt has)\s*{_NUMBER}\s*(?:input\s*)?tokens",
               re.I),
]
# Phrasings that mean "the request does not fit", with or without numbers (OpenAI, Anthropic,
# llama.cpp, vLLM, TGI, Ollama, LM Studio, LiteLLM's exception names).
_OVERFLOW_PHRASES = re.compile(
    r"context_length_exceeded|context[_ ]window|context length|context size|maximum context|"
    r"context limit|too many tokens|input is too long|prompt is too long|too long for the model|"
    r"reduce the length of the messages|exceeds the maximum number of tokens|exceed_context_size|"
    r"maximum model length|max_new_tokens` must be|input length exceeds|when context the overflows|"
    r"ContextWindowExceeded",
    re.I,
)
# Structured numbers (llama.cpp's error body), also found as JSON text inside a proxy's message
# string: LiteLLM wraps the upstream body into "litellm.ContextWindowExceededError: ... {...}".
_FIELD_LIMIT = re.compile(r'"n_ctx"\s*:\s*(\d+)')
_FIELD_ACTUAL = re.compile(r'"n_prompt_tokens"\s*:\s*(\d+)')
# "context length" alone also appears in errors about other things; these statuses never mean overflow.
_NEVER_OVERFLOW = {401, 403, 404, 408, 429}


def _to_int(text: str) -> int:
    return int(text.replace(",", "").replace("_", ""))


def classify_overflow(status: int | None, message: str) -> tuple[bool, int | None, int | None]:
    """Whether an error is a context overflow, and the window limit and request size it named.

    HTTP 413 (payload too large) is always an overflow. Otherwise the message decides, for any
    status but those that mean something else (auth, missing model, rate limit). Numbers are read
    from the wording first, then from llama.cpp's ``n_ctx``/``n_prompt_tokens`` fields quoted in
    the text (a proxy's message string).
    """
    if status in _NEVER_OVERFLOW:
        return False, None, None
    text = message or ""
    for pattern in _NUMBERED_PATTERNS:
        found = pattern.search(text)
        if found:
            return True, _to_int(found["limit"]), _to_int(found["actual"])
    if status != 413 and not _OVERFLOW_PHRASES.search(text):
        return False, None, None
    limit = _first_number(_LIMIT_PATTERNS, text)
    actual = _first_number(_ACTUAL_PATTERNS, text)
    if limit is None:
        limit = _first_number([_FIELD_LIMIT], text)
        actual = actual if actual is not None else _first_number([_FIELD_ACTUAL], text)
    return True, limit, actual


def _first_number(patterns: list[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return _to_int(found[1])
    return None


def error_detail(body: Any, fallback: str) -> str:
    """The human part of an error body (``{"error": {"message": ...}}``, ``{"error": "..."}``, ...),
    without a final full stop so that it reads well inside a sentence."""
    return one_line(_message_in(body) or fallback).rstrip(". ")


def _message_in(body: Any) -> str | None:
    for _ in range(3):
        if isinstance(body, dict):
            if isinstance(body.get("message"), str) and body["message"]:
                return body["message"]
            body = body.get("error")
        elif isinstance(body, str) and body:
            return body
        else:
            break
    return None


def one_line(text: str, limit: int = 300) -> str:
    """Whitespace collapsed to single spaces, clipped: server messages can be long or multi-line."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error_code(body: Any) -> Any:
    inner = body.get("error") if isinstance(body, dict) else None
    for candidate in (body, inner):
        if isinstance(candidate, dict) and candidate.get("code"):
            return candidate["code"]
    return None


def _error_type(body: Any) -> Any:
    inner = body.get("error") if isinstance(body, dict) else None
    return inner.get("type") if isinstance(inner, dict) else None


def _body_numbers(body: Any) -> tuple[int | None, int | None]:
    """llama.cpp reports the numbers as fields: ``{"n_ctx": 4096, "n_prompt_tokens": 5000}``."""
    inner = body.get("error") if isinstance(body, dict) else None
    for candidate in (inner, body):
        if isinstance(candidate, dict) and isinstance(candidate.get("n_ctx"), int):
            actual = candidate.get("n_prompt_tokens")
            return candidate["n_ctx"], actual if isinstance(actual, int) else None
    return None, None


def status_error(provider: str, status: int | None, body: Any, fallback: str, *, model: str,
                 key_env: str) -> ProviderError:
    """The error for an HTTP error reply (or an error event inside a stream, ``status`` None)."""
    detail = error_detail(body, fallback)
    # Classify on the whole text: a proxy can bury the numbers deep inside a long message.
    full_text = _message_in(body) or fallback or ""
    overflow, limit, actual = classify_overflow(status, full_text)
    if not overflow and status not in _NEVER_OVERFLOW:
        overflow = _error_code(body) in ("context_length_exceeded", "exceed_context_size_error") or (
            _error_type(body) == "exceed_context_size_error")
    if overflow:
        body_limit, body_actual = _body_numbers(body)
        return ContextOverflowError(
            f"{provider} rejected the request as too long for the model's context window: {detail}",
            provider=provider, status=status, limit=body_limit or limit, actual=body_actual or actual)
    if status in (401, 403):
        return AuthenticationError(
            f"authentication failed for {provider}: {detail} (check {key_env}).",
            provider=provider, status=status)
    if status == 404:
        advice = f"run `ollama pull {model}` or pick" if provider == "ollama" else "pick"
        return ProviderError(f"{provider} does not know the model {model!r}: {detail} ({advice} another with --model).",
                             provider=provider, status=status)
    if status == 429:
        return ProviderError(f"rate limited by {provider}: {detail}; wait a minute and try again.",
                             provider=provider, status=status, retryable=True)
    if status is not None and status >= 500:
        return ProviderError(f"server error from {provider} (HTTP {status}): {detail}; try again later.",
                             provider=provider, status=status, retryable=True)
    if status is None or status < 400:
        return ProviderError(f"{provider} reported an error during the reply: {detail}; try again.",
                             provider=provider, status=status, retryable=True)
    return ProviderError(f"{provider} rejected the request (HTTP {status}): {detail}", provider=provider,
                         status=status)


def connection_error(provider: str, base_url: str, detail: str) -> ProviderError:
    """A request that reached no server. A refused connection on this machine or a private network
    is not retried: nothing is listening there, and waiting will not start it."""
    from mini_letta.providers.addresses import is_local_address

    refused = "refused" in detail.lower() and is_local_address(base_url)
    if provider == "ollama":
        hint = "is `ollama serve` running?"
    elif refused:
        hint = "nothing is listening there: start the server, or check --base-url."
    else:
        hint = "check the address and your network."
    return ProviderError(f"could not reach {provider} at {shown_url(base_url)} ({one_line(detail, 120)}): {hint}",
                         provider=provider, retryable=not refused)


def redirect_error(provider: str, source: str, target: str, too_many: bool = False) -> ProviderError:
    """A redirect that was not followed (``source`` and ``target`` already shown, userinfo masked)."""
    if too_many:
        return ProviderError(f"{provider} at {source} redirected too many times (last to {target}); "
                             "check --base-url.", provider=provider)
    return ProviderError(f"{provider} at {source} redirected the request to {target}, another server: it was "
                         "not followed, so neither the key nor the conversation went there. If that server is "
                         "the one to use, pass it as --base-url.", provider=provider)


def too_large_error(provider: str, detail: str) -> ProviderError:
    """A body or stream over its cap (``detail``: "an answer larger than 16 MiB")."""
    return ProviderError(f"{provider} sent {detail}, the most mini-letta reads; it stopped reading there. "
                         "Check that --base-url is the model server.", provider=provider)


def deadline_error(provider: str, detail: str, setting: str) -> ProviderError:
    """A stream that outlived a deadline of ours: no event in the read timeout, or the whole reply
    over the reply deadline (``setting`` names the variable that sets it)."""
    return ProviderError(f"stopped waiting for the reply from {provider}: {detail} ({setting} sets the limit); "
                         "try again.",
                         provider=provider, retryable=True)


def timeout_error(provider: str, seconds: float | None) -> ProviderError:
    after = f" after {seconds:g} s" if seconds else ""
    return ProviderError(f"{provider} timed out{after} waiting for a reply; try again.",
                         provider=provider, retryable=True)


def broken_stream_error(provider: str, detail: str) -> ProviderError:
    return StreamBrokenError(f"the reply from {provider} broke off mid-stream ({one_line(detail, 200)}); try again.",
                         provider=provider, retryable=True)


def missing_key_error(provider: str, key_env: str) -> AuthenticationError:
    error = AuthenticationError(f"no API key for {provider}: set {key_env} or pass --provider demo.",
                                provider=provider)
    error.key_env = key_env  # the REPL's /provider words its own advice: no flag applies there
    return error
