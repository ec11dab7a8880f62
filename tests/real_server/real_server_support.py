"""Real servers for the real-server suite and its benchmark.

- :func:`locate` finds the llama-server binary, the SmolLM2 model and the LiteLLM proxy prepared by
  ``scripts/llama_server.sh prepare`` (from ``MINI_LETTA_LLAMA_SERVER`` / ``MINI_LETTA_LLAMA_MODEL`` /
  ``MINI_LETTA_LITELLM``, else by asking the script for its cached paths).
- :class:`LlamaServer` starts ``llama-server`` on 127.0.0.1 and always stops it.
- :class:`CountingProxy` sits between mini-letta (or LiteLLM) and the server and records every
  exchange, so rejections are counted on the server's side, not taken from the agent's report.
- :class:`LiteLLMProxy` runs LiteLLM's proxy in front of a server, offline.
- :class:`CliSession` runs mini-letta as a user does: ``mini-letta -p PROMPT --output-format json``
  (then ``-c``) in a subprocess, with its data folder in a temporary directory, no key, no --model.

Nothing here asserts on a model's words: a 135M-parameter model writes poor text.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# benchmarks/ is a folder of the repository, not an installed package.
sys.path.append(str(ROOT))
from benchmarks.bench_startup import mini_letta_command  # noqa: E402  (the installed script, as a user runs it)

SCRIPT = ROOT / "scripts" / "llama_server.sh"
PREPARE_HINT = "run `scripts/llama_server.sh prepare` (builds llama-server once, 15-25 minutes on 2 cores)"
REQUIRED_ENV = "MINI_LETTA_REAL_SERVER_REQUIRED"
# Keys and settings of the caller that would change what mini-letta chooses.
_CLEARED_PREFIXES = ("CODEAGENT_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "MINI_LETTA_", "LITELLM_")
COMPLETION_PATHS = ("/v1/chat/completions", "/chat/completions", "/v1/messages")
# One turn of mini-letta on a loaded 2-core machine takes seconds; this only stops a hung run.
TURN_TIMEOUT = 600
# What the suite lets the server generate per reply (see CountingProxy): replies are not what it tests.
REPLY_CAP = 32


@dataclass(frozen=True)
class Prepared:
    server: Path
    model: Path
    litellm: Path | None


def locate() -> Prepared | None:
    """The prepared binary, model and LiteLLM, or None when they are not there."""
    paths = {name: os.environ.get(name) for name in
             ("MINI_LETTA_LLAMA_SERVER", "MINI_LETTA_LLAMA_MODEL", "MINI_LETTA_LITELLM")}
    if not (paths["MINI_LETTA_LLAMA_SERVER"] and paths["MINI_LETTA_LLAMA_MODEL"]):
        try:
            done = subprocess.run(["bash", str(SCRIPT), "paths"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0:
            return None
        for line in done.stdout.splitlines():
            name, _, value = line.partition("=")
            if name in paths and value:
                paths[name] = value
    server, model = paths["MINI_LETTA_LLAMA_SERVER"], paths["MINI_LETTA_LLAMA_MODEL"]
    if not (server and model and os.access(server, os.X_OK) and Path(model).is_file()):
        return None
    litellm = paths["MINI_LETTA_LITELLM"]
    return Prepared(Path(server), Path(model),
                    Path(litellm) if litellm and os.access(litellm, os.X_OK) else None)


def required() -> bool:
    """CI sets this: a missing server is then a failure, not a skip."""
    return os.environ.get(REQUIRED_ENV) == "1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str, timeout: float = 10, headers: dict[str, str] | None = None) -> Any:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def _wait_until_ready(url: str, process: subprocess.Popen, log: Path, what: str, timeout: float,
                      headers: dict[str, str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode} before it was ready:\n"
                               + tail(log))
        try:
            request = urllib.request.Request(url, headers=headers or {})
            with urllib.request.urlopen(request, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{what} was not ready after {timeout:.0f} s:\n" + tail(log))


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _die_with_parent() -> None:
    """In the child before exec: on Linux, end it when the test run that started it dies (a killed or
    timed-out pytest never reaches the fixture's cleanup, and the server has its own session)."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _stop(process: subprocess.Popen | None) -> None:
    """Stop a process started in its own group, and everything it started."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass


def default_threads() -> int:
    """``MINI_LETTA_LLAMA_THREADS``, else 2, or 1 on a machine already busier than its cores: there two
    threads spin waiting for each other (measured here: 88 prompt tokens/s on one thread, 45 on two)."""
    value = os.environ.get("MINI_LETTA_LLAMA_THREADS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    cores = os.cpu_count() or 1
    return 1 if os.getloadavg()[0] >= cores else min(2, cores)


class _Service:
    """A server process of ours: started in its own session, dies with the test run, stopped on exit."""

    process: subprocess.Popen | None = None
    log: Path

    def _launch(self, args: list[str], ready_url: str, name: str, timeout: float, **popen: Any) -> None:
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, preexec_fn=_die_with_parent, **popen)
        try:
            _wait_until_ready(ready_url, self.process, self.log, name, timeout=timeout)
        except BaseException:
            self.stop()
            raise

    def start(self):
        raise NotImplementedError

    def stop(self) -> None:
        _stop(self.process)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LlamaServer(_Service):
    """``llama-server -m MODEL -c CTX -np SLOTS --jinja`` on 127.0.0.1 at temperature 0; a context
    manager. ``slots`` None: no ``-np``, the server's own default (four slots sharing one KV cache of
    CTX tokens, as a user who starts ``llama-server -c 4096`` gets)."""

    def __init__(self, prepared: Prepared, ctx: int, slots: int | None = 1, log_dir: Path | None = None,
                 threads: int | None = None):
        self.prepared, self.ctx, self.slots = prepared, ctx, slots
        self.threads = threads or default_threads()
        self.port = free_port()
        self.log = (log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"llama-server-{ctx}-{slots}-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        command = [str(self.prepared.server), "-m", str(self.prepared.model), "-c", str(self.ctx),
                   *(["-np", str(self.slots)] if self.slots is not None else []), "--host", "127.0.0.1", "--port", str(self.port), "--jinja",
                   "--threads", str(self.threads), "--temp", "0", "--seed", "1", "--no-webui"]
        return command

    def start(self) -> "LlamaServer":
        self._launch(self.command(), self.url + "/health", "llama-server", 180)
        return self

    # What the server says it serves, read the way a client can.
    def props(self) -> dict[str, Any]:
        return get_json(self.url + "/props")

    def served_ctx(self) -> int:
        """The context one request may use: ``/props`` ``default_generation_settings.n_ctx``."""
        return int(self.props()["default_generation_settings"]["n_ctx"])

    def model_id(self) -> str:
        return get_json(self.url + "/v1/models")["data"][0]["id"]


# --- the counting proxy ---------------------------------------------------------------------------
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
               "transfer-encoding", "upgrade", "host", "content-length"}


@dataclass(repr=False)
class Exchange:
    method: str
    path: str
    request: Any
    status: int = 0
    body: bytes = b""

    def __repr__(self) -> str:
        return (f"<{self.method} {self.path} {self.status}: prompt {self.prompt_tokens()}, "
                f"max_tokens {self.max_tokens}, tools {self.has_tools}>")

    @property
    def is_completion(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0] in COMPLETION_PATHS

    @property
    def rejected(self) -> bool:
        return self.status >= 400

    @property
    def max_tokens(self) -> int | None:
        if not isinstance(self.request, dict):
            return None
        for key in ("max_tokens", "max_completion_tokens", "n_predict"):
            if isinstance(self.request.get(key), int):
                return self.request[key]
        return None

    @property
    def is_summary(self) -> bool:
        """A compaction summarizer's request: the quoted transcript (no tools), or the cache-sharing
        one, which ends with the instruction to stop and summarise."""
        if not isinstance(self.request, dict):
            return False
        if not self.has_tools:
            return True
        messages = self.request.get("messages") or []
        last = messages[-1].get("content") if messages and isinstance(messages[-1], dict) else ""
        text = last if isinstance(last, str) else " ".join(
            part.get("text", "") for part in last or [] if isinstance(part, dict))
        return "this conversation is about to be compacted" in text

    @property
    def has_tools(self) -> bool:
        return isinstance(self.request, dict) and bool(self.request.get("tools"))

    @property
    def model(self) -> str | None:
        return self.request.get("model") if isinstance(self.request, dict) else None

    def error(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return self.body.decode(errors="replace")

    def usage(self) -> dict[str, Any] | None:
        """The server's usage, merged over the stream (OpenAI or Anthropic shape)."""
        usage = None
        for payload in _payloads(self.body):
            for candidate in (payload.get("usage"), (payload.get("message") or {}).get("usage")):
                if isinstance(candidate, dict) and candidate:
                    usage = {**(usage or {}), **candidate}
        return usage

    def completion_tokens(self) -> int | None:
        usage = self.usage() or {}
        value = usage.get("completion_tokens", usage.get("output_tokens"))
        return int(value) if isinstance(value, int) else None

    def prompt_tokens(self) -> int | None:
        """The prompt size the server reported in its usage, cached tokens included."""
        usage = self.usage()
        if usage is None:
            return None
        if "prompt_tokens" in usage:
            return int(usage["prompt_tokens"])
        if "input_tokens" in usage:
            return int(usage["input_tokens"]) + int(usage.get("cache_read_input_tokens") or 0) \
                + int(usage.get("cache_creation_input_tokens") or 0)
        return None


def _payloads(body: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a plain body or of a server-sent-events stream."""
    text = body.decode(errors="replace")
    try:
        whole = json.loads(text)
        return [whole] if isinstance(whole, dict) else []
    except ValueError:
        pass
    found = []
    for line in text.splitlines():
        if line.startswith("data:"):
            try:
                item = json.loads(line[5:].strip())
            except ValueError:
                continue
            if isinstance(item, dict):
                found.append(item)
    return found


class CountingProxy:
    """Forwards every request on 127.0.0.1 to ``upstream`` (streams pass through as they come) and
    records each exchange.

    ``reply_cap`` lowers the ``max_tokens`` a completion request asks for before it reaches the
    server (the request as sent is what is recorded and checked). A tiny model at temperature 0 can
    ramble to the full reply budget, seconds per token on a busy 2-core machine; llama-server
    rejects by prompt size alone, so the cap changes how long a reply takes, not what is rejected.
    """

    def __init__(self, upstream: str, reply_cap: int | None = None):
        self.upstream = upstream.rstrip("/")
        self.reply_cap = reply_cap
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                proxy._forward(self)

            def do_POST(self) -> None:
                proxy._forward(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "CountingProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # What the server saw.
    def completions(self) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if e.is_completion]

    def rejections(self) -> list[Exchange]:
        return [e for e in self.completions() if e.rejected]

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            parsed: Any = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        exchange = Exchange(handler.command, handler.path, parsed)
        with self._lock:
            self.exchanges.append(exchange)
        host, _, port = self.upstream.removeprefix("http://").partition(":")
        upstream = http.client.HTTPConnection(host, int(port or 80), timeout=TURN_TIMEOUT)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
        if self.reply_cap is not None and exchange.is_completion and isinstance(parsed, dict):
            capped = dict(parsed)
            for key in ("max_tokens", "max_completion_tokens"):
                if isinstance(capped.get(key), int):
                    capped[key] = min(capped[key], self.reply_cap)
            raw = json.dumps(capped).encode()
        try:
            upstream.request(handler.command, handler.path, body=raw or None, headers=headers)
            response = upstream.getresponse()
        except OSError as exc:
            exchange.status = 502
            exchange.body = str(exc).encode()
            handler.send_response(502)
            handler.send_header("Content-Length", str(len(exchange.body)))
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.write(exchange.body)
            return
        exchange.status = response.status
        handler.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in _HOP_BY_HOP:
                handler.send_header(key, value)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        body = bytearray()
        try:
            while True:
                piece = response.read1(65536)
                if not piece:
                    break
                body += piece
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                handler.wfile.flush()
            handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client went away; what came so far is recorded
        finally:
            exchange.body = bytes(body)
            upstream.close()
            handler.close_connection = True


# --- LiteLLM --------------------------------------------------------------------------------------
class LiteLLMProxy(_Service):
    """LiteLLM's proxy on 127.0.0.1 routing ``model_name`` to an OpenAI-compatible ``api_base``
    (llama-server's ``/v1``), offline, with a master key as a real deployment has."""

    MASTER_KEY = "sk-mini-letta-real-server-tests"

    def __init__(self, prepared: Prepared, api_base: str, model_name: str, work_dir: Path):
        if prepared.litellm is None:
            raise RuntimeError("LiteLLM is not prepared: " + PREPARE_HINT)
        self.binary = prepared.litellm
        self.api_base, self.model_name, self.work_dir = api_base, model_name, work_dir
        self.port = free_port()
        self.log = work_dir / "litellm.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "LiteLLMProxy":
        # JSON is YAML, which is what LiteLLM reads.
        config = {"model_list": [{"model_name": self.model_name, "litellm_params": {
            "model": f"openai/{self.model_name}", "api_base": self.api_base, "api_key": "none"}}],
            "litellm_settings": {"num_retries": 0}}
        config_path = self.work_dir / "litellm.yaml"
        config_path.write_text(json.dumps(config))
        env = {k: v for k, v in os.environ.items() if not k.startswith(_CLEARED_PREFIXES)}
        env.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True",
                    "LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES": "True",
                    "LITELLM_MASTER_KEY": self.MASTER_KEY})
        self._launch([str(self.binary), "--config", str(config_path), "--host", "127.0.0.1", "--port", str(self.port)],
                     self.url + "/health/liveliness", "LiteLLM", 240, env=env, cwd=self.work_dir)
        return self


# --- mini-letta as a user runs it -----------------------------------------------------------------
def user_environment(provider: str, url: str) -> tuple[dict[str, str], list[str]]:
    """A user who points mini-letta at a local server (``url``, its root) and nothing else:
    (environment, command-line arguments) for the OpenAI or the Anthropic provider."""
    if provider == "openai":
        return {"OPENAI_BASE_URL": url + "/v1"}, []
    return {"ANTHROPIC_BASE_URL": url}, ["--provider", "anthropic"]


@dataclass
class Turn:
    prompt_words: int
    returncode: int
    result: dict[str, Any] | None
    stderr: str

    @property
    def ok(self) -> bool:
        """The turn was answered: exit 0, or its reply cut at the cap this suite puts on replies
        (``reply_cap``: exit 3, ``stopped`` max_tokens), which mini-letta rightly calls incomplete."""
        if self.result is None:
            return False
        if self.returncode == 0:
            return not self.result.get("is_error")
        return self.returncode == 3 and self.result.get("stopped") == "max_tokens"

    @property
    def window(self) -> int | None:
        return (self.result or {}).get("context", {}).get("window")

    @property
    def compactions(self) -> list[dict[str, Any]]:
        return list((self.result or {}).get("compactions") or [])

    def describe(self) -> str:
        return f"exit {self.returncode}, stderr: {self.stderr.strip()[-800:]!r}, result: {self.result!r}"[:2000]


@dataclass
class CliSession:
    """One mini-letta session in ``workspace``: the first turn starts it, later turns use ``-c``."""

    workspace: Path
    home: Path
    env: dict[str, str]
    args: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)

    @classmethod
    def create(cls, root: Path, env: dict[str, str], args: list[str] | None = None) -> "CliSession":
        workspace, home = root / "ws", root / "home"
        workspace.mkdir(parents=True, exist_ok=True)
        base = {k: v for k, v in os.environ.items() if not k.startswith(_CLEARED_PREFIXES)}
        base["MINI_LETTA_HOME"] = str(home)
        base.update(env)
        return cls(workspace, home, base, list(args or []))

    def say(self, prompt: str, extra_env: dict[str, str] | None = None) -> Turn:
        command = mini_letta_command() + ["-p", prompt, "--output-format", "json"] + self.args
        if self.turns:
            command.append("-c")
        done = subprocess.run(command, cwd=self.workspace, env={**self.env, **(extra_env or {})},
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TURN_TIMEOUT)
        try:
            result = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None
        except ValueError:
            result = None
        turn = Turn(len(prompt.split()), done.returncode, result, done.stderr)
        self.turns.append(turn)
        return turn

    def compactions(self) -> list[dict[str, Any]]:
        """Every compaction of the session: each run reports the ones it made."""
        return [record for turn in self.turns for record in turn.compactions]


_VOCABULARY = ("the module reads a config file and returns a list of paths that the parser checks before "
               "each build step runs tests on every function while the cache keeps old results for the "
               "next request so a user can see which error came from the network layer or the disk and "
               "why the retry loop stops after three attempts with a clear message about timeouts "
               "buffers queues workers threads locks tokens windows sessions summaries layers budgets").split()


def prose(words: int, seed: int) -> str:
    """About ``words`` words of plain, varied English-like text (the same for the same seed)."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < words:
        sentence = [rng.choice(_VOCABULARY) for _ in range(rng.randint(8, 16))]
        sentence[0] = sentence[0].capitalize()
        out.extend(sentence)
        out[-1] += "."
    return " ".join(out[:words])


def session_prompt(turn: int, words: int = 300) -> str:
    """A user turn: a short request plus about ``words`` words of notes."""
    return f"Note {turn}: keep these notes in mind and reply with one short sentence.\n\n" + prose(words, turn)
