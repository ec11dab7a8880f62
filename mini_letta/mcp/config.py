"""Which MCP servers to start: Claude Code's ``.mcp.json`` shape, from the places users keep it.

Sources, later ones replacing a server of the same name:

- the data folder's ``settings.json`` (``mini-letta mcp add``: the user's own servers);
- the workspace's ``.mcp.json`` (``mini-letta mcp add --scope project``), only once the folder is
  trusted (``/trust``): it starts programs written by whoever wrote the repository, as hooks do;
- files given with ``--mcp-config FILE`` (print mode), which the user named on purpose.

The shape::

    {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
                    "docs": {"type": "http", "url": "https://…/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                    "wiki": {"type": "sse", "url": "https://…/sse", "headers": {"X-Api-Key": "${WIKI_KEY}"}}}}

``sse`` is the older HTTP transport (a GET event stream and POSTed messages) that many hosted
servers still speak; apart from the transport it is configured and handled as ``http``.

``${VAR}`` and ``${VAR:-default}`` are expanded in ``command``, ``args``, ``env``, ``url`` and
``headers``; a server that names an unset variable without a default is skipped with a notice.
Per server, ``startup_timeout_sec`` and ``tool_timeout_sec`` (Codex's names) override
``MINI_LETTA_MCP_STARTUP_TIMEOUT`` / ``MINI_LETTA_MCP_TOOL_TIMEOUT`` (seconds). Which calls run
without asking is ``toolbox/permissions.py``'s (``permissions.allow``: ``mcp__docs__search`` for a
tool; ``mcp__docs`` for a whole server, through ``McpTools.server_rule``).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_letta.notices import Say, quiet
from mini_letta import config
from mini_letta.hooks import SETTINGS_FILE, is_trusted
from mini_letta.settings import SETTINGS
from mini_letta.workspace_files import read_workspace_json

WORKSPACE_FILE = ".mcp.json"
# A config file larger than this is not a config file; reading it whole could stall start-up.
MAX_CONFIG_BYTES = 1024 * 1024
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
# The transports that connect to a URL (with headers) rather than start a command.
HTTP_TRANSPORTS = ("http", "sse")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass
class ServerConfig:
    name: str
    transport: str  # "stdio", "http" or "sse"
    source: Path
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    startup_timeout: float = SETTINGS.mcp.startup_timeout_seconds
    tool_timeout: float = SETTINGS.mcp.tool_timeout_seconds

    def describe(self) -> str:
        """What it runs or where it connects, for ``mcp list`` and ``/mcp`` (secrets in headers left out)."""
        if self.transport in HTTP_TRANSPORTS:
            return f"{self.url} ({self.transport.upper()})"
        return " ".join([self.command, *self.args])


@dataclass
class LoadedServers:
    servers: dict[str, ServerConfig] = field(default_factory=dict)
    # One sentence per server that will not start, and why (untrusted folder, unset variable, bad shape).
    skipped: list[str] = field(default_factory=list)


def read_json_file(path: Path) -> tuple[Any, str | None]:
    """``(data, problem)`` for a file of the user's own (``mcp add`` edits it and says the problem):
    a regular file of at most ``MAX_CONFIG_BYTES`` parsed as JSON; a missing file is ``(None, None)``."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None, None
    except OSError as error:
        return None, f"it could not be read ({error.strerror or error})"
    if not stat.S_ISREG(info.st_mode):
        return None, "it is not a regular file"
    if info.st_size > MAX_CONFIG_BYTES:
        return None, f"it is larger than {MAX_CONFIG_BYTES:,} bytes"
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
        return json.loads(raw.decode("utf-8")), None
    except OSError as error:
        return None, f"it could not be read ({error.strerror or error})"
    except (UnicodeDecodeError, ValueError) as error:
        return None, f"it is not valid JSON ({error})"


def load_servers(home: Path, workspace: Path, extra_files: list[Path] = (), *, say: Say = quiet) -> LoadedServers:
    """The servers to start for ``workspace``, with the ones left out named in ``skipped``."""
    loaded = LoadedServers()
    # A damaged settings.json is already reported by the hooks, which read it first.
    settings, _ = read_json_file(home / SETTINGS_FILE)
    if isinstance(settings, dict):
        _add_from(settings, home / SETTINGS_FILE, loaded, say)
    local = Path(workspace) / WORKSPACE_FILE
    # Written by whoever wrote the repository: a FIFO, a huge file or bad JSON is one notice, no more.
    data = read_workspace_json(local, MAX_CONFIG_BYTES, within=workspace, say=say)
    if data is not None:
        if is_trusted(home, workspace):
            _add_from(data, local, loaded, say)
        else:
            names = sorted(_entries(data)) if isinstance(data, dict) else []
            if names:
                loaded.skipped.append(
                    f"MCP server{'s' if len(names) > 1 else ''} {', '.join(names)} from {local} not started: "
                    f"this folder is not trusted and the file starts programs. Type /trust if you want them.")
    for path in extra_files:
        data = read_workspace_json(path, MAX_CONFIG_BYTES, say=say)
        if data is None and not Path(path).exists():
            loaded.skipped.append(f"--mcp-config {path} was ignored: there is no such file.")
        elif data is not None:
            _add_from(data, Path(path), loaded, say)
    return loaded


def _entries(data: Any) -> dict[str, Any]:
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return servers if isinstance(servers, dict) else {}


def _add_from(data: Any, source: Path, loaded: LoadedServers, say: Say) -> None:
    for name, entry in _entries(data).items():
        server, problem = parse_server(str(name), entry, source, say)
        if server is None:
            loaded.skipped.append(f"MCP server {name!r} in {source} not started: {problem}.")
            loaded.servers.pop(str(name), None)
        else:
            loaded.servers[server.name] = server


def parse_server(name: str, entry: Any, source: Path, say: Say = quiet) -> tuple[ServerConfig | None, str]:
    """A server entry checked and with its variables expanded, or ``(None, why not)``."""
    if not SERVER_NAME.match(name):
        return None, "a server name is 1-40 letters, digits, '-' or '_'"
    if not isinstance(entry, dict):
        return None, "its entry is not an object"
    kind = entry.get("type") or ("http" if "url" in entry else "stdio")
    if kind in ("http", "streamable-http", "streamable_http"):
        kind = "http"
    elif kind not in ("stdio", "sse"):
        return None, f"the transport {kind!r} is not supported (use stdio, http or sse)"
    try:
        server = ServerConfig(name=name, transport=kind, source=source,
                              startup_timeout=_seconds(entry, "startup_timeout_sec", "MINI_LETTA_MCP_STARTUP_TIMEOUT",
                                                       SETTINGS.mcp.startup_timeout_seconds, say),
                              tool_timeout=_seconds(entry, "tool_timeout_sec", "MINI_LETTA_MCP_TOOL_TIMEOUT",
                                                    SETTINGS.mcp.tool_timeout_seconds, say))
        if kind in HTTP_TRANSPORTS:
            server.url = expand(_text(entry, "url"))
            server.headers = {str(k): expand(_string(v, "headers")) for k, v in _mapping(entry, "headers").items()}
            if not server.url.startswith(("http://", "https://")):
                return None, f"an {kind} server needs a url starting with http:// or https://"
        else:
            server.command = expand(_text(entry, "command"))
            if not server.command.strip():
                return None, 'a stdio server needs a "command"'
            args = entry.get("args", [])
            if not isinstance(args, list):
                raise ValueError('"args" must be a list of strings')
            server.args = [expand(_string(arg, "args")) for arg in args]
            server.env = {str(k): expand(_string(v, "env")) for k, v in _mapping(entry, "env").items()}
    except ValueError as error:
        return None, str(error)
    return server, ""


def expand(text: str) -> str:
    """``${VAR}`` and ``${VAR:-default}`` replaced from the environment; an unset variable without
    a default raises ValueError naming it."""
    def replace(match: re.Match) -> str:
        value = os.environ.get(match.group(1))
        if value is None or (value == "" and match.group(2) is not None):
            if match.group(2) is None:
                raise ValueError(f"the environment variable {match.group(1)} is not set")
            return match.group(2)
        return value
    return _VARIABLE.sub(replace, text)


def _text(entry: dict, key: str) -> str:
    return _string(entry.get(key, ""), key)


def _string(value: Any, key: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f'"{key}" must hold strings')
    return str(value)


def _mapping(entry: dict, key: str) -> dict:
    value = entry.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f'"{key}" must be an object')
    return value


def _seconds(entry: dict, key: str, variable: str, default: float, say: Say) -> float:
    value = entry.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    from_env = config.env_positive_int(variable, say=say)
    return float(from_env) if from_env else default


# --- mini-letta mcp add / remove ------------------------------------------------------------------
def config_path(home: Path, workspace: Path, scope: str) -> Path:
    return home / SETTINGS_FILE if scope == "user" else Path(workspace) / WORKSPACE_FILE


def write_server(path: Path, name: str, entry: dict) -> None:
    """Add or replace ``name`` in the file at ``path``, keeping everything else it holds."""
    data = _editable(path)
    data.setdefault("mcpServers", {})[name] = entry
    _save(path, data)


def remove_server(path: Path, name: str) -> bool:
    data = _editable(path)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or name not in servers:
        return False
    del servers[name]
    _save(path, data)
    return True


def _editable(path: Path) -> dict:
    data, problem = read_json_file(path)
    if problem:
        raise ValueError(f"{path} cannot be changed: {problem}")
    if data is None:
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise ValueError(f'{path} cannot be changed: it is not an object with "mcpServers" inside')
    return data


def _save(path: Path, data: dict) -> None:
    config.private_folder(path.parent)
    config.write_private(path, json.dumps(data, indent=2) + "\n")
