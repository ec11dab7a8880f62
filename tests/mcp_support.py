"""MCP servers for the tests, all real: Python scripts built with the SDK's ``MCPServer`` (stdio, or
streamable HTTP or SSE on 127.0.0.1), the registry's ``mcp-server-time`` and, when ``.ci/run`` installed it,
npm's ``@modelcontextprotocol/server-everything``. Nothing here speaks JSON-RPC by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

EVERYTHING_VERSION = "2026.8.31"
EVERYTHING_HINT = ("npm's @modelcontextprotocol/server-everything is not installed; .ci/run installs it "
                   f"(npm install --prefix ~/.cache/mini-letta-ci/mcp-everything-{EVERYTHING_VERSION} "
                   f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}).")

_PRELUDE = """
import sys, time
from mcp.server.mcpserver import MCPServer
server = MCPServer({name!r})
"""


def required() -> bool:
    return os.environ.get("MINI_LETTA_REAL_SERVER_REQUIRED") == "1"


def time_server_command() -> list[str]:
    found = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")
    if not Path(found).exists():
        pytest.fail("mcp-server-time is missing: it is in the test extra (pip install -e '.[test]')")
    return [found, "--local-timezone", "UTC"]


def everything_command() -> list[str]:
    """The Node server's command, or a skip (a failure in CI) when it is not installed."""
    base = Path(os.environ.get("MINI_LETTA_MCP_EVERYTHING_DIR")
                or Path.home() / ".cache" / "mini-letta-ci" / f"mcp-everything-{EVERYTHING_VERSION}")
    script = base / "node_modules" / ".bin" / "mcp-server-everything"
    if not script.exists() or shutil.which("node") is None:
        if required():
            pytest.fail(EVERYTHING_HINT)
        pytest.skip(EVERYTHING_HINT)
    return [str(script), "stdio"]


def python_server(folder: Path, name: str, body: str, run: str = "server.run()") -> list[str]:
    """A stdio server script: ``body`` adds tools to ``server`` (an ``MCPServer``); returns its command."""
    path = folder / f"{name}_server.py"
    path.write_text(_PRELUDE.format(name=name) + textwrap.dedent(body) + "\n" + run + "\n", encoding="utf-8")
    return [sys.executable, str(path)]


def many_tools_body(count: int, prefix: str = "") -> str:
    """``count`` ordinary tools: a sentence of description and three typed parameters each (the
    REFERENCE's 200-tool server: about 36k tokens of definitions)."""
    subjects = ("invoice", "customer", "ticket", "shipment", "report", "account", "order", "payment",
                "contract", "product")
    actions = ("create", "update", "archive", "find", "export", "approve", "merge", "split", "audit", "price")
    lines = []
    for index in range(count):
        subject, action = subjects[index % 10], actions[(index // 10) % 10]
        name = f"{prefix}{action}_{subject}_{index}"
        lines.append(textwrap.dedent(f'''
            @server.tool(description="{action.capitalize()} a {subject} record number {index} in the company ledger, "
                                     "checking its owner, its region and the date range before saving the change.")
            def {name}(record_id: int, region: str, include_history: bool = False) -> str:
                return "{name} done for " + str(record_id) + " in " + region
            '''))
    return "\n".join(lines)


def config_file(folder: Path, servers: dict[str, dict], name: str = "mcp.json") -> Path:
    path = folder / name
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def stdio(command: list[str], **extra) -> dict:
    return {"command": command[0], "args": command[1:], **extra}


class HttpServer:
    """A streamable-HTTP MCP server (``MCPServer`` under uvicorn) in a subprocess on 127.0.0.1;
    ``HttpServer(folder, body, "sse")`` the same server over the older SSE transport."""

    def __init__(self, folder: Path, body: str, transport: str = "streamable-http"):
        self.port = free_port()
        self.path = "/sse" if transport == "sse" else "/mcp"
        self.command = python_server(folder, transport.replace("-", "_"), body,
                                     run=f"server.run({transport!r}, host='127.0.0.1', port={self.port})")
        self.log = folder / f"{transport}_server.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def __enter__(self) -> "HttpServer":
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL,
                                        stderr=self.log.open("w"), start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the HTTP test server exited: {self.log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the HTTP test server did not listen within 30 s")

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def agent_with_servers(agents: list | None, workspace: Path, servers: dict[str, dict], provider, **options):
    """(agent, its McpTools): ``servers`` from a ``--mcp-config`` file, handed to ``make_agent`` (so
    to ``assemble``) as ``build_agent`` does; waited for first, so their tools are in the agent's
    first request. The agent goes to ``agents`` (the fixture that stops its servers) if given.
    Both say into one channel of their own: :func:`said` takes what they said."""
    from agent_support import make_agent
    from mini_letta import config
    from mini_letta.mcp import open_tools
    from mini_letta.notices import Notices

    channel = Notices()
    tools = open_tools(config.home(), workspace, [config_file(workspace.parent, servers)], say=channel.say)
    tools.servers.wait()
    try:
        agent = make_agent(provider, workspace, mcp=tools, say=channel.say, **options)
    except BaseException:
        tools.close()
        raise
    if agents is not None:
        agents.append(agent)
    return agent, tools


def said(agent) -> list[str]:
    """What ``agent``'s run said since the last call (its channel is the ``Notices`` its ``say`` is bound to)."""
    return agent.say.__self__.take()


def mcp_until(child, pattern: str) -> str:
    """/mcp in the REPL ``child``, again until its table matches ``pattern``: it says how the
    servers are now, without waiting for those still connecting."""
    from pty_support import screen_after

    for _ in range(60):
        child.send("/mcp\r")
        try:
            return screen_after(child, pattern, timeout=3)
        except AssertionError:
            continue
    raise AssertionError(f"/mcp never showed {pattern!r}")


class RecordingApprover:
    """Says ``answer`` and remembers what it was asked (the summary is what the user reads)."""

    def __init__(self, answer: bool = True):
        self.answer = answer
        self.asked: list[tuple[str, str]] = []

    def __call__(self, call, summary: str) -> bool:
        self.asked.append((call.name, summary))
        return self.answer


def process_gone(pid: int, seconds: float = 10) -> bool:
    """Whether ``pid`` ends within ``seconds``. A zombie counts as ended: once its parent died it
    waits for PID 1 to reap it, which a container's init may never do."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
                if file.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        except OSError:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


@pytest.fixture
def agents():
    """Agents a test builds with MCP servers; their servers are stopped when it ends."""
    from mini_letta.mcp import close

    made = []
    yield made
    for agent in made:
        close(agent)
