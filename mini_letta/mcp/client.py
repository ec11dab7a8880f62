"""Running MCP servers for a synchronous agent: one background event loop owns every client session.

The official SDK (``mcp``) is async; the agent loop is not. ``McpManager`` starts one daemon thread
running an asyncio loop, with one task per server on it (``connection.py``). ``start()`` returns at
once: the servers connect together in the background; ``wait()`` blocks until they are connected or
have failed, and ``on_settled(state)`` is told of each as it happens. The agent's thread calls tools
through ``run_coroutine_threadsafe`` with a per-call timeout.

A stdio server runs in its own process group (the SDK starts it with ``start_new_session``) with its
stderr in ``<data folder>/mcp-logs/<name>.log``; stopping it closes its stdin, then signals the whole
group. A stdio server that dies is restarted once, at the call that finds it dead. ``close()`` stops
every server; it is also registered with ``atexit``, so leaving mini-letta by any path stops them.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Callable

from mini_letta.notices import Say, quiet
from mini_letta import config
from mini_letta.mcp.config import HTTP_TRANSPORTS, ServerConfig
from mini_letta.mcp.connection import Hooks, ServerState, describe, serve
from mini_letta.mcp.processes import group_leaders_started_by_us, route_sdk_logging, stop_groups
from mini_letta.settings import SETTINGS

LOG_FOLDER = "mcp-logs"
SDK_LOG = "sdk.log"
# How long close() waits for the servers to exit (the SDK gives a stdio server 2 s after its stdin
# closes, then SIGTERM, then SIGKILL 2 s later).
CLOSE_SECONDS = 8.0


class McpCallError(Exception):
    """A call that got no result; ``str(error)`` is the sentence the model and the user read."""


class McpManager:
    """``McpManager(servers, home)``; ``start()`` starts connecting them all (concurrently, each within
    its start-up timeout) and returns; ``wait()``; ``call(server, tool, arguments)``; ``close()``.

    Called on the loop's thread: ``on_tools_changed(name)`` after a server's new tool list,
    ``on_settled(state)`` when a server (re)started is connected or has failed."""

    def __init__(self, servers: list[ServerConfig], home: Path,
                 on_tools_changed: Callable[[str], None] | None = None,
                 on_settled: Callable[[ServerState], None] | None = None, say: Say = quiet):
        self.say = say
        self.states: dict[str, ServerState] = {s.name: ServerState(s) for s in servers}
        self.log_dir = Path(home) / LOG_FOLDER
        self.on_tools_changed = on_tools_changed
        self.on_settled = on_settled
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._logs: dict[str, Any] = {}
        self._closed = False
        # Process groups of the stdio servers: the SDK signals a server's group only when the
        # server itself outlives its closed stdin, so what a well-behaved server started would live on.
        self._groups: set[int] = set()

    # -- life cycle --------------------------------------------------------------------------
    def start(self) -> None:
        if not self.states:
            return
        config.private_folder(self.log_dir)
        route_sdk_logging(self.log_dir / SDK_LOG)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-servers", daemon=True)
        self._thread.start()
        atexit.register(self.close)
        for state in self.states.values():
            self._launch(state)

    def wait(self, names: list[str] | None = None) -> None:
        """Until the servers ``names`` (default: all) are connected or have failed."""
        for state in self.states.values():
            # The task enforces the timeout itself; the margin covers a transport that will not close.
            if (names is None or state.name in names) and not state.ready.wait(
                    state.config.startup_timeout + CLOSE_SECONDS):
                state.status, state.error = "failed", f"did not start within {state.config.startup_timeout:g} s"

    def connecting(self) -> int:
        """How many servers are still connecting."""
        return sum(1 for state in self.states.values() if not state.ready.is_set())

    def close(self) -> None:
        """Stop every server this manager started (idempotent)."""
        if self._closed or self._loop is None:
            return
        self._closed = True
        for state in self.states.values():
            self._stop(state)
        deadline = time.monotonic() + CLOSE_SECONDS
        for state in self.states.values():
            if state.done is not None:
                try:
                    state.done.result(max(0.0, deadline - time.monotonic()))
                except Exception:  # noqa: BLE001 - a server that failed to close is still left behind
                    pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(2)
        stop_groups(self._groups)
        for file in self._logs.values():
            file.close()

    def _launch(self, state: ServerState) -> None:
        state.ready.clear()
        state.status, state.error, state.session, state.stopping = "starting", "", None, False
        hooks = Hooks(errlog=self._log, started=self._remember_groups, tools_changed=self._tools_changed,
                      settled=self._settled, say=self.say)
        state.done = asyncio.run_coroutine_threadsafe(serve(state, hooks), self._loop)

    def _stop(self, state: ServerState) -> None:
        def cancel() -> None:  # on the loop's thread, as serve(): a task not yet running sees stopping
            state.stopping = True
            if state.scope is not None:
                state.scope.cancel()

        self._loop.call_soon_threadsafe(cancel)

    def _remember_groups(self) -> None:
        self._groups |= group_leaders_started_by_us()

    def _tools_changed(self, name: str) -> None:
        if self.on_tools_changed is not None:
            self.on_tools_changed(name)

    def _settled(self, state: ServerState) -> None:
        if self.on_settled is not None:
            self.on_settled(state)

    # -- calls -------------------------------------------------------------------------------
    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        """The server's ``CallToolResult``; McpCallError when there is none (not running, timed out,
        the server died: then it is restarted once for the next call)."""
        timeout = self.states[server].config.tool_timeout
        return self._request(server, lambda session: session.call_tool(tool, arguments, read_timeout_seconds=timeout))

    def get_prompt(self, server: str, prompt: str, arguments: dict[str, str]) -> Any:
        """The server's ``GetPromptResult``; McpCallError as for ``call``, within the same time limit."""
        return self._request(server, lambda session: session.get_prompt(prompt, arguments))

    def _request(self, server: str, send: Callable[[Any], Any]) -> Any:
        state = self.states[server]
        if not state.ready.is_set():  # still connecting: the call waits as wait() would
            self.wait([server])
        if state.status != "connected" or state.session is None:
            raise McpCallError(f"the MCP server {server!r} is not running ({state.error or state.status}).")
        timeout = state.config.tool_timeout
        future = asyncio.run_coroutine_threadsafe(send(state.session), self._loop)
        try:
            return future.result(timeout + 5)
        except (FutureTimeout, TimeoutError):
            future.cancel()
            raise McpCallError(f"the MCP server {server!r} did not answer within {timeout:g} s "
                               f"(tool_timeout_sec in its config sets the limit).") from None
        except KeyboardInterrupt:
            future.cancel()
            raise
        except Exception as error:  # noqa: BLE001 - every failure of a call becomes its result
            if "timed out" in str(error):  # the session's own read timeout
                raise McpCallError(f"the MCP server {server!r} did not answer within {timeout:g} s "
                                   f"(tool_timeout_sec in its config sets the limit).") from None
            if self._connection_lost(state, error):
                raise McpCallError(self._after_crash(state)) from None
            raise McpCallError(f"the MCP server {server!r} answered with an error: {describe(error)}") from None

    def _connection_lost(self, state: ServerState, error: Exception) -> bool:
        """The transport is gone (the server exited, the HTTP server went away), as opposed to a
        server answering a call with a JSON-RPC error."""
        import anyio
        import mcp_types

        if state.done is not None and state.done.done():
            return True
        code = getattr(getattr(error, "error", None), "code", None)
        return code == mcp_types.CONNECTION_CLOSED or isinstance(
            error, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, ConnectionError))

    def _after_crash(self, state: ServerState) -> str:
        said = f"the MCP server {state.name!r} stopped during the call"
        self._stop(state)
        if state.done is not None:
            try:
                state.done.result(CLOSE_SECONDS)
            except Exception:  # noqa: BLE001
                pass
        if state.config.transport != "stdio":
            state.status, state.error = "failed", "the connection was lost during a call"
            return f"{said}: the connection was lost; restart mini-letta (or /trust) to connect again."
        if state.restarts >= SETTINGS.mcp.max_restarts:
            state.status, state.error = "failed", "stopped during a call"
            return f"{said}; it is not restarted again. Its log: {self.log_path(state.name)}."
        state.restarts += 1
        self._launch(state)
        state.ready.wait(state.config.startup_timeout + CLOSE_SECONDS)
        if state.status == "connected":
            return f"{said}; it was restarted, so the call can be tried again."
        return f"{said} and could not be restarted ({state.error}). Its log: {self.log_path(state.name)}."

    def log_path(self, name: str) -> Path:
        """A stdio server's stderr; for a server at a URL, the SDK's log, where its HTTP failures go."""
        state = self.states.get(name)
        if state is not None and state.config.transport in HTTP_TRANSPORTS:
            return self.log_dir / SDK_LOG
        return self.log_dir / f"{name}.log"

    def _log(self, name: str):
        if name not in self._logs:
            self._logs[name] = open(self.log_path(name), "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        file = self._logs[name]
        file.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {name}\n")
        file.flush()
        return file
