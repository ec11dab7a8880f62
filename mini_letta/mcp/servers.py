"""The MCP servers of one session: read from the configuration and connecting in the background from
the moment they are made; restarted by ``/trust``; stopped at exit.

Nothing here waits for a server unless asked (``wait``): the REPL's prompt never waits, print mode
waits for the servers it starts, and it starts only those whose tools may run there (``print_mode_rule``).
The SDK is imported only when a server is configured.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from mini_letta.notices import Say, quiet


if TYPE_CHECKING:
    from mini_letta.mcp.client import McpManager
    from mini_letta.mcp.connection import ServerState


class McpServers:
    """``McpServers(home, workspace, extra_files, wanted=None)`` starts connecting every configured
    server ``wanted(name)`` accepts. ``take_changed()`` says which servers settled (connected or
    failed) and which listed new tools since it was last asked; ``generation`` moves at each restart."""

    def __init__(self, home: Path, workspace: Path, extra_files: Iterable[Path] = (), *,
                 wanted: Callable[[str], bool] | None = None, not_wanted: str = "", say: Say = quiet):
        self.home, self.workspace = Path(home), Path(workspace)
        self.say = say
        self.extra_files = list(extra_files)  # --mcp-config files, read again when /trust restarts
        self.wanted = wanted
        self.not_wanted = not_wanted  # why the servers wanted() refuses are not started
        self.manager: McpManager | None = None
        self.generation = 0
        self._settled: set[str] = set()
        self._relisted: set[str] = set()
        self._lock = threading.Lock()
        self.start()

    @property
    def states(self) -> list[ServerState]:
        return list(self.manager.states.values()) if self.manager is not None else []

    def start(self) -> None:
        from mini_letta.mcp.config import load_servers

        loaded = load_servers(self.home, self.workspace, self.extra_files, say=self.say)
        for reason in loaded.skipped:
            self.say(reason)
        servers = list(loaded.servers.values())
        if self.wanted is not None:
            left = [server.name for server in servers if not self.wanted(server.name)]
            if left:
                self.say(f"Not starting the MCP {'server' if len(left) == 1 else 'servers'} "
                         f"{', '.join(left)}: {self.not_wanted}.")
            servers = [server for server in servers if self.wanted(server.name)]
        self.generation += 1
        if not servers:
            self.manager = None
            return
        from mini_letta.mcp.client import McpManager

        self.manager = McpManager(servers, self.home, on_tools_changed=self._tools_changed,
                                  on_settled=self._on_settled, say=self.say)
        self.manager.start()

    def restart(self) -> bool:
        """Stop the servers and start what the configuration now says; whether there are any."""
        self.close()
        self.start()
        return self.manager is not None

    def wait(self, names: list[str] | None = None) -> None:
        """Until the servers ``names`` (default: all) are connected or have failed."""
        if self.manager is not None:
            self.manager.wait(names)

    def progress(self) -> str:
        """"MCP 1/2 connecting" while a server is connecting, else ""."""
        if self.manager is None:
            return ""
        connecting = self.manager.connecting()
        if not connecting:
            return ""
        total = len(self.manager.states)
        return f"MCP {total - connecting}/{total} connecting"

    def take_changed(self) -> tuple[set[str], set[str]]:
        """(servers settled, servers that listed new tools) since the last call."""
        with self._lock:
            settled, relisted = self._settled, self._relisted
            self._settled, self._relisted = set(), set()
        return settled, relisted

    def close(self) -> None:
        if self.manager is not None:
            self.manager.close()

    def log_path(self, name: str) -> Path:
        return self.manager.log_path(name)

    # -- told on the loop's thread -------------------------------------------------------------
    def _on_settled(self, state: ServerState) -> None:
        with self._lock:
            self._settled.add(state.name)
        if state.status == "failed" and state.restarts == 0:  # a restart's failure is the call's error
            self.say(f"The MCP server {state.name!r} did not start: {state.error}. "
                     f"Its log: {self.log_path(state.name)}.")

    def _tools_changed(self, name: str) -> None:
        with self._lock:
            self._relisted.add(name)


def print_mode_rule(rules: Iterable[str], yolo: bool) -> tuple[Callable[[str], bool] | None, str]:
    """Which servers print mode starts, and why the others are not: with ``--yolo`` all of them;
    otherwise, since no one can be asked there, only those a ``permissions.allow`` rule names
    (``mcp__time``, ``mcp__time__*`` or one of its tools): the tools of any other could never run."""
    if yolo:
        return None, ""
    from mini_letta.toolbox.permissions import Rule

    named = []
    for text in rules:
        try:
            named.append(Rule.parse(text).tool)
        except ValueError:
            continue

    def wanted(name: str) -> bool:
        return any(tool == f"mcp__{name}" or tool.startswith(f"mcp__{name}__") for tool in named)

    return wanted, (
        "in -p no one can approve their tools, so they run only with --yolo or a permissions.allow "
        "rule naming them (e.g. mcp__<server> in settings.json)")

