"""The provider protocol: one streaming call, provider-neutral in and out.

A provider turns a :class:`Request` into a stream of :class:`StreamEvent` and ends with exactly one
:class:`Done` carrying the finished assistant :class:`Message` (text, tool calls, usage). It maps
its transport's errors to :mod:`mini_letta.errors` types. Both post over httpx2 themselves; only
the Anthropic provider's module imports its SDK, and only for a credentials profile.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Protocol, Union

from mini_letta.messages import Message, ToolSpec
from mini_letta.settings import SETTINGS

if TYPE_CHECKING:
    from mini_letta.providers.probe import ServedFloor


@dataclass
class Request:
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int = SETTINGS.output_reserve_max
    model: str | None = None  # overrides the provider's model (e.g. a cheaper summarizer)
    # "chat" for agent turns, "summary" for the compaction summarizer. Real providers ignore it; the
    # demo model uses it to answer a summarizer request with a summary.
    purpose: str = "chat"
    # The same for every request of a session (its id), so a provider that routes by a cache key
    # (OpenAI's ``prompt_cache_key``) sends them to the machine that holds their cached prefix.
    cache_key: str | None = None
    # How many leading characters of ``system`` stay the same for the whole session (the fixed
    # instructions; what follows — date, core memory, project instructions — changes). A provider
    # with explicit cache breakpoints caches the two parts separately; 0: no split known.
    system_stable_chars: int = 0


@dataclass
class TextDelta:
    text: str


@dataclass
class ToolCallStarted:
    """The model began a tool call; arguments are still streaming."""

    id: str
    name: str


@dataclass
class Retrying:
    """The request failed before its reply began and is sent again after ``delay`` seconds."""

    reason: str  # "server error 500", "rate limited (429)", ...
    delay: float
    attempt: int
    retries: int

    def describe(self) -> str:
        wait = f"{self.delay:.0f}" if self.delay >= 1 else f"{self.delay:.1f}"
        return f"{self.reason}, retrying in {wait} s ({self.attempt}/{self.retries})"


@dataclass
class Done:
    message: Message  # role "assistant", with usage when the provider reported any


StreamEvent = Union[TextDelta, ToolCallStarted, Retrying, Done]


class Provider(Protocol):
    name: str  # "openai", "anthropic", "ollama", "demo", "scripted"
    model: str
    # Where served_window() read its answer ("llama.cpp /props n_ctx", "vLLM max_model_len", ...),
    # None when it has none. Set by served_window().
    served_window_source: str | None
    # Optional, so not declared here: ``serves_concurrently`` (absent means True), False when a
    # second request at once slows or breaks the first (probe.serves_concurrently), so the agent
    # sends no turn request next to a summary in preparation.

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        """Yield deltas, then one Done. Raise mini_letta.errors.ProviderError subclasses."""
        ...

    def served_window(self) -> int | None:
        """The context window the server really serves this model with, if it can tell."""
        ...

    def served_floor(self, system: str, tools: list[ToolSpec]) -> ServedFloor | None:
        """The server's own count of ``system`` and ``tools`` as its chat template renders them, if
        it can tell (llama.cpp); None otherwise."""
        ...


def function_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """``tools`` as OpenAI-style function tools (the OpenAI wire format, and llama.cpp's templates)."""
    return [{"type": "function", "function": spec.to_dict()} for spec in tools]


def encode_body(params: dict[str, Any]) -> bytes:
    """A request body as sent: built by the provider as plain JSON data, serialised once here, and
    posted as bytes over httpx2 (through the Anthropic SDK's ``post`` only for a credentials profile). The
    SDKs' typed methods walk every message in Python on every call (OpenAI's ``maybe_transform``,
    Anthropic's ``prepare_request_data``), 20 to 40 times the cost of the serialisation itself; the
    lower-level ``post`` takes the bytes as they are, with the same connection handling, errors and
    streaming. The same form as the SDKs': UTF-8, compact, no NaN."""
    return json.dumps(params, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def is_json_response(response: object) -> bool:
    """Whether an HTTP response to a streaming request is one plain JSON body instead of events
    (some OpenAI- and Anthropic-compatible servers ignore ``stream``)."""
    headers = getattr(response, "headers", None)
    content_type = headers.get("content-type", "") if headers is not None else ""
    return content_type.split(";")[0].strip().lower() == "application/json"


def complete(provider: Provider, request: Request) -> Message:
    """Run a request to the end and return the assistant message (no streaming UI)."""
    for event in provider.stream(request):
        if isinstance(event, Done):
            return event.message
    raise RuntimeError(f"provider {provider.name} ended its stream without a Done event")
