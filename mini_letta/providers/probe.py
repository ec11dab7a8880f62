"""Asking a server which context window it serves a model with, and which models it has.

Over :mod:`~mini_letta.providers.http_stream`'s client, as every request (redirects only within the
server's origin, bodies capped), with only the provider's own key header, a 2-second timeout per
question, and never an exception:
a server that cannot answer leaves the window to the next rule of ``context/window.py``. Answers
are kept per (base URL, model) for the life of the process, so a rebuilt agent does not ask again;
an unreachable server is not remembered (it may be started a moment later).

What is asked, in this order, stopping at the first answer (``/v1/models`` is asked once and
also gives the model ids for :func:`server_models`):

1. ``GET <base>/models``: vLLM's ``max_model_len``, then the fields hosted model lists use
   (``context_length``, ``max_context_length``, ``context_window``).
2. llama.cpp ``GET <root>/props``: ``default_generation_settings.n_ctx``. This is the context of one
   slot, which is what one request gets: llama-server ``-c 4096 -np 2`` serves each request at most
   2,048 tokens and says 2048 here (and ``total_slots: 2``); ``-c 4096`` alone runs 4 slots on a
   unified KV cache, each of which may use all of it, and says 4096 (``total_slots: 4``). So the
   value is taken as it is, never divided by the slots again.
3. llama.cpp ``/v1/models`` ``data[].meta.n_ctx`` (the same per-slot value, for a server whose
   ``/props`` is turned off). Never ``meta.n_ctx_train``: that is what the model was trained on, not
   what is served (``-c 4096`` on a model trained at 8,192 reports ``n_ctx 4096, n_ctx_train 8192``,
   and requests over 4,096 are rejected).
4. LM Studio ``GET <root>/api/v0/models``: the model's ``loaded_context_length``, else (not loaded
   yet) its ``max_context_length``.
5. Ollama ``GET <root>/api/ps``: ``context_length`` of the loaded model, the context Ollama
   allocated. The ollama provider first loads the model (an empty generate request, as letta-code
   does) so that it is listed; other providers do not wait for a load.
6. Ollama ``POST <root>/api/show``: ``model_info.<arch>.context_length`` is the model file's maximum,
   not what Ollama serves: Ollama serves at its configured context, ``OLLAMA_CONTEXT_LENGTH``, by
   default 4,096 (on machines with under 24 GiB of VRAM; more on larger ones, so 4,096 is the safe
   guess). So the value is capped at ``OLLAMA_CONTEXT_LENGTH`` when this shell sets it, else at 4,096.

``<root>`` is the base URL without its trailing ``/v1``. The official OpenAI and Anthropic APIs are
never asked: they serve every model at its full window, which the built-in table knows.

A llama.cpp server is also asked how many tokens the fixed part of every request costs it
(:func:`served_floor`): ``POST /apply-template`` renders system prompt and tool schemas through the
model's own chat template, ``POST /tokenize`` counts the result with the model's own tokenizer. Our
count can be far off: SmolLM2's template leaves the tool schemas out altogether (``/props``
``chat_template_caps.supports_tools`` false), so the server counts ~500 tokens where we count ~1,570.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from mini_letta.providers.addresses import OFFICIAL_HOSTS, is_local_address, is_official  # noqa: F401 (their home before)

from mini_letta.settings import SETTINGS

OLLAMA_DEFAULT_CONTEXT = 4096

# Keys that hosted model lists (OpenRouter, Together, Groq, ...) use for the window.
_LISTED_WINDOW_FIELDS = ("context_length", "max_context_length", "context_window")


@dataclass(frozen=True)
class Served:
    window: int
    source: str  # a short phrase for the status bar and /context, e.g. "llama.cpp /props n_ctx"


class _Unreachable(Exception):
    """The server did not answer at all: asking it anything else would only wait again."""


class ServerUnreachable(Exception):
    """Nothing answered at the address: the reason in words ("connection refused", "timed out")."""


@dataclass(frozen=True)
class ServedFloor:
    """The server's own count of what every request carries before its messages."""
    tokens: int  # system prompt + tool schemas as the chat template renders them (+ a one-word user turn)
    system_text: int  # the system prompt's bare text: a sample of the tokenizer ratio for prose


_lock = threading.Lock()
_answers: dict[tuple[str, str, bool], Served | None] = {}
_listings: dict[str, Any] = {}
_floors: dict[tuple[str, str, str], ServedFloor | None] = {}
_llama_cpp_roots: dict[str, bool] = {}
# llama.cpp /props chat_template_caps.supports_tools, per server root, when it said.
_tool_support: dict[str, bool] = {}


def forget() -> None:
    """Drop every remembered answer (tests start servers that may reuse a port)."""
    with _lock:
        _answers.clear()
        _floors.clear()
        _llama_cpp_roots.clear()
        _tool_support.clear()
        _listings.clear()


# --- addresses ------------------------------------------------------------------------------------
def server_root(base_url: str) -> str:
    """``http://host:8080/v1`` → ``http://host:8080``: where llama.cpp, LM Studio and Ollama answer."""
    return re.sub(r"/v1$", "", base_url.rstrip("/"))


def serves_concurrently(base_url: str) -> bool:
    """Whether two requests at once are fine. A server of one's own (a loopback or private address:
    llama.cpp, Ollama, LM Studio) answers one at a time on the same cores, or shares one KV cache
    among its slots: llama-server ``-c 4096`` runs four slots on 4,096 shared tokens, and a
    2,700-token turn next to a 2,000-token summary failed both with "Context size has been exceeded"."""
    return not is_local_address(base_url)


# --- the questions --------------------------------------------------------------------------------
def served_window(base_url: str, model: str, *, api: str = "openai", api_key: str | None = None,
                  load_ollama_model: bool = False) -> Served | None:
    """The window the server at ``base_url`` serves ``model`` with, and where that was read; None
    when it cannot tell. ``api`` is "openai" (the provider's base URL, usually ending in ``/v1``) or
    "anthropic" (the server's root). ``load_ollama_model``: load the model into Ollama first to
    learn its window."""
    base_url = base_url.rstrip("/")
    if is_official(base_url):
        return None
    key = (base_url, model, load_ollama_model)
    with _lock:
        if key in _answers:
            return _answers[key]
    try:
        with _Asker(base_url, api, model, api_key) as asker:
            answer = asker.ask(load_ollama_model)
    except _Unreachable:
        return None
    except Exception:  # a probe never breaks start-up, whatever a server sends
        answer = None
    with _lock:
        _answers[key] = answer
    return answer


def server_models(base_url: str, *, api: str = "openai", api_key: str | None = None) -> list[str]:
    """The model ids the server's ``/v1/models`` lists, in its order; [] when it cannot tell.
    Raises :class:`ServerUnreachable` when nothing answers at ``base_url`` at all."""
    base_url = base_url.rstrip("/")
    try:
        with _Asker(base_url, api, "", api_key) as asker:
            listing = asker.listing()
    except _Unreachable as unreachable:
        raise ServerUnreachable(str(unreachable) or "no answer") from None
    except Exception:
        return []
    return [e["id"] for e in _entries(listing) if isinstance(e.get("id"), str) and e["id"]]


def served_floor(base_url: str, system: str, tools: list[dict[str, Any]], *, api: str = "openai",
                 api_key: str | None = None) -> ServedFloor | None:
    """How many tokens a llama.cpp server counts for ``system`` and ``tools`` (OpenAI-style function
    tools, as ``/apply-template`` takes them, whichever API the requests use); None from any other
    server, or when it cannot tell. Remembered per (server, system, tools): the system prompt changes
    when core memory is edited, and then the server is asked again."""
    base_url = base_url.rstrip("/")
    if is_official(base_url):
        return None
    key = (server_root(base_url), system, json.dumps(tools, sort_keys=True))
    with _lock:
        if key in _floors:
            return _floors[key]
    try:
        with _Asker(base_url, api, "", api_key) as asker:
            answer = asker.floor(system, tools)
    except _Unreachable:
        return None
    except Exception:  # like the window, never worth breaking a turn for
        answer = None
    with _lock:
        _floors[key] = answer
    return answer


def template_supports_tools(base_url: str) -> bool | None:
    """What a llama.cpp server said (``/props`` ``chat_template_caps.supports_tools``) when its
    window was asked; None when it was not asked or did not say. Asks nothing itself."""
    with _lock:
        return _tool_support.get(server_root(base_url.rstrip("/")))


class _Asker:
    def __init__(self, base_url: str, api: str, model: str, api_key: str | None):
        self.root = server_root(base_url)
        # OpenAI's paths go after the base URL as given (as its SDK does); the Anthropic SDK adds /v1/...
        self.models_url = base_url + "/models" if api == "openai" else self.root + "/v1/models"
        self.model = model
        # Both providers send their key as a bearer token (the Anthropic SDK does too), and nothing else.
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.deadline = time.monotonic() + SETTINGS.providers.probe_budget_seconds
        self._http: Any = None

    def ask(self, load_ollama_model: bool) -> Served | None:
        if load_ollama_model:
            return self.ollama(load=True)
        entry = _model_entry(_entries(self.listing()), self.model)
        return (_listed_window(entry) or self.llama_cpp_props() or _llama_cpp_meta(entry)
                or self.lm_studio() or self.ollama(load=False))

    def listing(self) -> Any:
        with _lock:
            if self.models_url in _listings:
                return _listings[self.models_url]
        listing = self.get(self.models_url)
        with _lock:
            _listings[self.models_url] = listing
        return listing

    def llama_cpp_props(self) -> Served | None:
        props = self.get(self.root + "/props")
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        caps = props.get("chat_template_caps") if isinstance(props, dict) else None
        with _lock:
            _llama_cpp_roots[self.root] = isinstance(settings, dict)
            if isinstance(caps, dict) and isinstance(caps.get("supports_tools"), bool):
                _tool_support[self.root] = caps["supports_tools"]
        return Served(n_ctx, "llama.cpp /props n_ctx") if _positive_int(n_ctx) else None

    def is_llama_cpp(self) -> bool:
        with _lock:
            known = _llama_cpp_roots.get(self.root)
        if known is None:
            self.llama_cpp_props()
            with _lock:
                known = _llama_cpp_roots[self.root]
        return known

    def floor(self, system: str, tools: list[dict[str, Any]]) -> ServedFloor | None:
        if not self.is_llama_cpp():
            return None
        # A user turn is needed for a template to render at all; its few tokens make the floor a
        # slight overcount, which errs on the safe side.
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": "."}]
        rendered = self.post(self.root + "/apply-template", {"messages": messages, **({"tools": tools} if tools else {})})
        prompt = rendered.get("prompt") if isinstance(rendered, dict) else None
        if not isinstance(prompt, str):
            return None
        floor = self._token_count(prompt, add_special=True)
        text = self._token_count(system, add_special=False) if system else 0
        return ServedFloor(floor, text) if floor is not None and text is not None else None

    def _token_count(self, content: str, *, add_special: bool) -> int | None:
        answer = self.post(self.root + "/tokenize", {"content": content, "add_special": add_special})
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        return len(tokens) if isinstance(tokens, list) else None

    def lm_studio(self) -> Served | None:
        entry = _model_entry(_entries(self.get(self.root + "/api/v0/models")), self.model)
        if entry is None:
            return None
        for field in ("loaded_context_length", "max_context_length"):
            if _positive_int(entry.get(field)):
                return Served(entry[field], f"LM Studio {field}")
        return None

    def ollama(self, load: bool) -> Served | None:
        window = _ollama_loaded_window(self.get(self.root + "/api/ps"), self.model)
        if window is None and load:
            # An empty prompt only loads the model; /api/ps lists a model once it is loaded.
            if self.post(self.root + "/api/generate", {"model": self.model}, budgeted=False) is not None:
                window = _ollama_loaded_window(self.get(self.root + "/api/ps"), self.model)
        if window is not None:
            return Served(window, "Ollama /api/ps")
        return self.ollama_show()

    def ollama_show(self) -> Served | None:
        shown = self.post(self.root + "/api/show", {"model": self.model})
        info = shown.get("model_info") if isinstance(shown, dict) else None
        lengths = [v for k, v in info.items() if k.endswith(".context_length") and _positive_int(v)] \
            if isinstance(info, dict) else []
        if not lengths:
            return None
        configured = _positive_env("OLLAMA_CONTEXT_LENGTH")
        cap, named = (configured, "OLLAMA_CONTEXT_LENGTH") if configured else \
            (OLLAMA_DEFAULT_CONTEXT, f"Ollama's default {OLLAMA_DEFAULT_CONTEXT}")
        if lengths[0] <= cap:
            return Served(lengths[0], "Ollama /api/show context_length")
        return Served(cap, f"Ollama /api/show, capped at {named}")

    # --- HTTP ---------------------------------------------------------------------------------
    def get(self, url: str) -> Any:
        return self._call("GET", url)

    def post(self, url: str, payload: dict[str, Any], budgeted: bool = True) -> Any:
        """``budgeted=False``: Ollama's model load, which may take its own (longer) time."""
        return self._call("POST", url, json.dumps(payload).encode(), None if budgeted else SETTINGS.providers.ollama_load_timeout_seconds)

    def _call(self, method: str, url: str, body: bytes | None = None, timeout: float | None = None) -> Any:
        """The parsed JSON answer; None for an HTTP error, a body that is not JSON (or too large),
        or a redirect to another server (not followed)."""
        from mini_letta.providers.http_stream import HttpRedirected, HttpStream, HttpTimeout, HttpTooLarge, HttpUnreachable

        if timeout is None:
            timeout = min(SETTINGS.providers.probe_timeout_seconds, self.deadline - time.monotonic())
        if timeout <= 0:
            raise _Unreachable("no answer in time")
        if self._http is None:
            import httpx2

            self._http = HttpStream(self.headers, httpx2.Timeout(SETTINGS.providers.probe_timeout_seconds))
        try:
            answer = self._http.fetch(method, url, body, timeout=timeout)
        except (HttpRedirected, HttpTooLarge):
            return None  # it answered, with nothing to go on
        except HttpTimeout:
            raise _Unreachable("timed out") from None
        except HttpUnreachable as exc:
            raise _Unreachable(unreachable_reason(exc.__cause__ or exc)) from None
        if answer.status >= 400:
            return None  # it answered: it just does not know this question
        try:
            return answer.json()
        except ValueError:
            return None

    def __enter__(self) -> _Asker:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._http is not None:
            self._http.close()


def unreachable_reason(exc: BaseException) -> str:
    """A few words for why nothing answered: "connection refused", "timed out", "name not found"."""
    cause = getattr(exc, "reason", exc)
    text = str(cause).lower()
    if isinstance(cause, ConnectionRefusedError) or "refused" in text:
        return "connection refused"
    if isinstance(cause, TimeoutError) or "timed out" in text:
        return "timed out"
    if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text \
            or "name resolution" in text:
        return "name not found"
    return str(cause).strip() or type(cause).__name__


def _entries(listing: Any) -> list[dict[str, Any]]:
    data = listing.get("data") if isinstance(listing, dict) else None
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def _model_entry(entries: list[dict[str, Any]], model: str) -> dict[str, Any] | None:
    for entry in entries:
        aliases = entry.get("aliases")
        if entry.get("id") == model or (isinstance(aliases, list) and model in aliases):
            return entry
    # Single-model servers (llama.cpp, a one-model vLLM) answer to any model name.
    return entries[0] if len(entries) == 1 else None


def _listed_window(entry: dict[str, Any] | None) -> Served | None:
    if entry is None:
        return None
    if _positive_int(entry.get("max_model_len")):
        return Served(entry["max_model_len"], "vLLM max_model_len")
    for field in _LISTED_WINDOW_FIELDS:
        if _positive_int(entry.get(field)):
            return Served(entry[field], f"model list {field}")
    return None


def _llama_cpp_meta(entry: dict[str, Any] | None) -> Served | None:
    meta = entry.get("meta") if entry is not None else None
    if isinstance(meta, dict) and _positive_int(meta.get("n_ctx")):
        return Served(meta["n_ctx"], "llama.cpp /v1/models n_ctx")
    return None  # n_ctx_train alone is not a served window


def _ollama_loaded_window(listing: Any, model: str) -> int | None:
    names = {model, model if ":" in model else model + ":latest"}
    entries = listing.get("models") if isinstance(listing, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and (entry.get("name") in names or entry.get("model") in names):
            value = entry.get("context_length")
            return value if _positive_int(value) else None
    return None


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _positive_env(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None
