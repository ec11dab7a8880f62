"""The provider factory: ``create_provider(name, model, base_url)``.

Providers and their default models:

- ``openai``: ``gpt-4.1`` (1M-token window, strong at tool use). Key and address from
  ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` (as the openai SDK reads them) unless ``base_url`` is given.
- ``anthropic``: ``claude-sonnet-5-5``. ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``) and
  ``ANTHROPIC_BASE_URL``, read as the SDK reads them; without a key, the SDK's credentials profile.
- ``openai-responses``: OpenAI's Responses API (``/v1/responses``), ``gpt-4.1`` unless named; the same
  key and address as ``openai``. Chosen for ``openai`` too when the model is served by the Responses
  API only (the codex and ``*-pro`` models: ``data/responses_models.json``).
- ``ollama``: ``llama3.2``, through Ollama's OpenAI-compatible API at ``http://localhost:11434/v1``
  (or ``OLLAMA_HOST``, or ``base_url``); key ``OLLAMA_API_KEY`` if set, else the placeholder "ollama".
- ``demo``: the offline demo model.

A base URL on this machine or a private network (``localhost``, 127.0.0.0/8, ::1, 10/8, 172.16/12,
192.168/16) is a server of one's own: no key is needed, a placeholder is sent when none is set.
Without ``model``, a server that is not OpenAI's or Anthropic's own is asked for its models
(``/v1/models``), and its only model (or, on a local address, its first) is used, with a notice:
a local server does not serve ``gpt-4.1``.

Provider modules are imported here only inside :func:`create_provider`, so that ``--version`` and
the core stay fast. Neither provider imports its SDK to send (``import anthropic`` alone takes about
two seconds, ``import openai`` ~0.8 s): both post over httpx2, the client the SDKs use.

Network settings (timeouts, retries) are in :mod:`mini_letta.providers.network`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from mini_letta.notices import Say, quiet
from mini_letta.errors import ConfigError
from mini_letta.providers.network import env_max_retries, env_reply_deadline, env_timeout
from mini_letta.trust.urls import shown_url

if TYPE_CHECKING:
    from mini_letta.providers.base import Provider

PROVIDERS = ("openai", "openai-responses", "anthropic", "ollama", "demo")
DEFAULT_MODELS = {"openai": "gpt-4.1", "openai-responses": "gpt-4.1", "anthropic": "claude-sonnet-5-5",
                  "ollama": "llama3.2", "demo": "demo"}
# What llama.cpp's own documentation puts in the key field for a server without keys.
LOCAL_PLACEHOLDER_KEY = "sk-no-key-required"


def create_provider(name: str, model: str | None = None, base_url: str | None = None, *,
                    timeout: float | None = None, max_retries: int | None = None, say: Say = quiet) -> Provider:
    """A ready provider; raises ConfigError for an unknown name, AuthenticationError for a missing key.
    What was ignored or chosen for the user (a bad variable, the server's model) goes to ``say``."""
    name = name.strip().lower()
    if name not in PROVIDERS:
        raise ConfigError(f"unknown provider {name!r}: choose one of {', '.join(PROVIDERS)}.")
    if name in ("openai", "openai-responses", "anthropic"):
        env = "ANTHROPIC_BASE_URL" if name == "anthropic" else "OPENAI_BASE_URL"
        checked_base_url(base_url, "--base-url") if base_url else checked_base_url(os.environ.get(env), env)
    chosen = model
    model = model or DEFAULT_MODELS[name]
    network = {"timeout": env_timeout(say) if timeout is None else timeout,
               "max_retries": env_max_retries(say) if max_retries is None else max_retries}
    env_reply_deadline(say)  # said once here if it is ignored; each provider's client reads it
    if name == "demo":
        from mini_letta.providers.demo import DemoProvider

        if chosen not in (None, "demo"):
            say(f"--model {chosen} does not apply to the offline demo model; it was ignored. "
                "Choose a real provider with --provider (and its key) to use that model.")
        return DemoProvider()
    if name == "anthropic":
        from mini_letta.providers.anthropic_provider import AnthropicProvider

        key = _placeholder_key(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"),
                               base_url or os.environ.get("ANTHROPIC_BASE_URL"))
        provider: Any = AnthropicProvider(model, base_url=base_url, api_key=key, **network)
    else:
        from mini_letta.providers.openai_provider import OpenAIProvider

        if name == "ollama":
            return OpenAIProvider(model, name="ollama", base_url=base_url or ollama_base_url(),
                                  api_key=os.environ.get("OLLAMA_API_KEY") or "ollama", **network)
        key = _placeholder_key(os.environ.get("OPENAI_API_KEY"), base_url or os.environ.get("OPENAI_BASE_URL"))
        if name == "openai-responses" or _responses_only(model):
            from mini_letta.providers.openai_responses import ResponsesProvider

            provider = ResponsesProvider(model, base_url=base_url, api_key=key, **network)
        else:
            provider = OpenAIProvider(model, base_url=base_url, api_key=key, **network)
    if chosen is None:
        _take_model_from_server(provider, say)
    return provider


def _responses_only(model: str) -> bool:
    from mini_letta.providers.responses_wire import responses_only

    return responses_only(model)


def checked_base_url(url: str | None, where: str) -> str | None:
    """``url`` when it is a server address (http or https, a host, a valid port); ConfigError
    naming ``where`` it came from otherwise. Empty means not given."""
    from urllib.parse import urlsplit

    if not url or not url.strip():
        return None
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise ConfigError(f"{where} {shown_url(url)!r} is not a server address ({exc}); give a URL such as "
                          "http://localhost:8080/v1.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{where} {shown_url(url)!r} is not a server address: give a URL with http:// or https:// "
                          "and a host, such as http://localhost:8080/v1.")
    return url


def _placeholder_key(own_key: str | None, base_url: str | None) -> str | None:
    """A stand-in key for a server of one's own that wants none; None leaves the key to the provider
    (its own variable, read as its SDK reads it)."""
    from mini_letta.providers import probe

    return LOCAL_PLACEHOLDER_KEY if not own_key and base_url and probe.is_local_address(base_url) else None


def _take_model_from_server(provider: Any, say: Say) -> None:
    """``provider``: an OpenAIProvider or AnthropicProvider (both have ``base_url`` and ``listed_models``)."""
    from mini_letta.providers import probe

    base_url = provider.base_url
    if probe.is_official(base_url):
        return
    try:
        ids = [i for i in provider.listed_models() if i.isprintable()]
    except probe.ServerUnreachable as unreachable:
        # Never a hosted model's name and window for a server that is not there.
        raise ConfigError(f"nothing answers at {shown_url(base_url)} ({unreachable}): start the server, or check "
                          "--base-url (and --model, to name the model it serves).") from None
    if not ids or (len(ids) > 1 and not probe.is_local_address(base_url)):
        return  # a hosted list of many models: its first is no better a guess than our default
    provider.model = ids[0]
    which = "the only model" if len(ids) == 1 else f"the first of {len(ids)} models"
    say(f"No --model given: using {ids[0]}, {which} that {shown_url(base_url)} lists.")


def ollama_base_url() -> str:
    """``OLLAMA_HOST`` (``host``, ``host:port`` or a URL, as Ollama's CLI reads it) + ``/v1``, else localhost."""
    host = os.environ.get("OLLAMA_HOST", "").strip().rstrip("/")
    if not host:
        return "http://localhost:11434/v1"
    if "://" not in host:
        host = "http://" + host
    scheme, _, address = host.partition("://")
    if ":" not in address.split("/")[0]:
        address = address.replace("/", ":11434/", 1) if "/" in address else address + ":11434"
    return f"{scheme}://{address}/v1"
