"""Running MCP servers for a synchronous agent: one background event loop owns every client session.

The official SDK (``mcp``) is async; the agent loop is not. ``McpManager`` starts one daemon thread
running an asyncio loop. Each server lives in one task on it that opens the transport (stdio,
streamable HTTP or SSE), the ``ClientSession``, initializes and lists the tools, then waits until it is
told to stop; everything it opened is closed by that same task, inside one cancel scope whose deadline is
the start-up timeout until the server is ready. The agent's thread calls tools through
``run_coroutine_threadsafe`` with a per-call timeout.

A stdio server runs in its own process group (the SDK starts it with ``start_new_session``) with its
stderr in ``<data folder>/mcp-logs/<name>.log``; stopping it closes its stdin, then signals the whole
group. A stdio server that dies is restarted once, at the call that finds it dead. ``close()`` stops
every server; it is also registered with ``atexit``, so leaving mini-letta by any path stops them.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import math
import os
import signal
import threading
import time
from concurrent.futures import Future, TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mini_letta import config
from mini_letta.mcp.config import HTTP_TRANSPORTS, ServerConfig

LOG_FOLDER = "mcp-logs"
SDK_LOG = "sdk.log"
# How long close() waits for the servers to exit (the SDK gives a stdio server 2 s after its stdin
# closes, then SIGTERM, then SIGKILL 2 s later).
CLOSE_SECONDS = 8.0
MAX_RESTARTS = 1


class McpCallError(Exception):
    """A call that got no result; ``str(error)`` is the sentence the model and the user read."""


@dataclass
class ServerState:
    config: ServerConfig
    status: str = "starting"  # starting, connected, failed, stopped
    error: str = ""
    tools: list[Any] = field(default_factory=list)  # mcp Tool objects, as listed
    prompts: list[Any] = field(default_factory=list)  # mcp Prompt objects: slash commands (prompts.py)
    restarts: int = 0
    # Bumped whenever the tool list is replaced (notifications/tools/list_changed), after
    # on_tools_changed was called.
    tools_version: int = 0
    session: Any = None
    ready: threading.Event = field(default_factory=threading.Event)
    scope: Any = None  # the anyio CancelScope around the server's whole life
    done: Future | None = None

    @property
    def name(self) -> str:
        return self.config.name


class McpManager:
    """``McpManager(servers, home)``; ``start()`` connects them all (concurrently, each within its
    start-up timeout); ``call(server, tool, arguments)``; ``close()``."""

    def __init__(self, servers: list[ServerConfig], home: Path,
                 on_tools_changed: Callable[[str], None] | None = None):
        self.states: dict[str, ServerState] = {s.name: ServerState(s) for s in servers}
        self.log_dir = Path(home) / LOG_FOLDER
        self.on_tools_changed = on_tools_changed
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
        _route_sdk_logging(self.log_dir / SDK_LOG)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-servers", daemon=True)
        self._thread.start()
        atexit.register(self.close)
        for state in self.states.values():
            self._launch(state)
        for state in self.states.values():
            # The task enforces the timeout itself; the margin covers a transport that will not close.
            if not state.ready.wait(state.config.startup_timeout + CLOSE_SECONDS):
                state.status, state.error = "failed", f"did not start within {state.config.startup_timeout:g} s"

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
        _stop_groups(self._groups)
        for file in self._logs.values():
            file.close()

    def _launch(self, state: ServerState) -> None:
        state.ready.clear()
        state.status, state.error, state.session = "starting", "", None
        state.done = asyncio.run_coroutine_threadsafe(self._serve(state), self._loop)

    def _stop(self, state: ServerState) -> None:
        scope = state.scope
        if scope is not None:
            self._loop.call_soon_threadsafe(scope.cancel)

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
            raise McpCallError(f"the MCP server {server!r} answered with an error: {_describe(error)}") from None

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
        if state.restarts >= MAX_RESTARTS:
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

    # -- the server's task (on the loop thread) -----------------------------------------------
    async def _serve(self, state: ServerState) -> None:
        import anyio

        cfg = state.config
        scope = anyio.CancelScope(deadline=anyio.current_time() + cfg.startup_timeout)
        state.scope = scope
        try:
            with scope:
                await self._connect_and_wait(state, scope)
            if state.status == "starting":
                state.status, state.error = "failed", f"did not start within {cfg.startup_timeout:g} s"
        except Exception as error:  # noqa: BLE001 - a server that fails is reported, never raised
            if state.status != "stopped":
                state.error = _describe(error)
                if cfg.transport in HTTP_TRANSPORTS:
                    # The whole error for the log the user is pointed to (log_path); the sentence is its first line.
                    logging.getLogger("mcp").error("The MCP server %r (%s) failed", cfg.name, cfg.url, exc_info=error)
                    if cfg.url not in state.error:  # "All connection attempts failed" alone does not say where
                        state.error = f"{state.error} (at {cfg.url})"
                state.status = "failed"
        finally:
            if state.status == "connected":
                state.status = "stopped"
            state.session = None
            state.ready.set()

    async def _connect_and_wait(self, state: ServerState, scope) -> None:
        from contextlib import AsyncExitStack

        import anyio
        from mcp import ClientSession

        cfg = state.config
        async with AsyncExitStack() as stack:
            if cfg.transport == "stdio":
                from mcp.client.stdio import StdioServerParameters, stdio_client

                params = StdioServerParameters(command=cfg.command, args=cfg.args, env=cfg.env or None)
                read, write = await stack.enter_async_context(stdio_client(params, errlog=self._log(state.name)))
                self._groups |= _group_leaders_started_by_us()
            elif cfg.transport == "sse":
                from mcp.client.sse import sse_client
                from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

                # The same HTTP timeouts as the streamable-HTTP client's; a call's own limit is the session's.
                read, write = await stack.enter_async_context(sse_client(
                    cfg.url, headers=cfg.headers or None, timeout=MCP_DEFAULT_TIMEOUT,
                    sse_read_timeout=MCP_DEFAULT_SSE_READ_TIMEOUT))
            else:
                from mcp.client.streamable_http import streamable_http_client
                from mcp.shared._httpx_utils import create_mcp_http_client

                client = await stack.enter_async_context(create_mcp_http_client(headers=cfg.headers or None))
                read, write = await stack.enter_async_context(streamable_http_client(cfg.url, http_client=client))

            async def on_message(message) -> None:
                import mcp_types

                # Not awaited here: the session's receive loop delivers the answer we would wait for.
                # This session, not state.session: a server may say so while it is still starting.
                if isinstance(message, mcp_types.ToolListChangedNotification):
                    tasks.start_soon(self._relist, state, session)
                elif isinstance(message, mcp_types.PromptListChangedNotification):
                    tasks.start_soon(self._relist_prompts, state, session)

            tasks = await stack.enter_async_context(anyio.create_task_group())
            session = await stack.enter_async_context(ClientSession(read, write, message_handler=on_message))
            await session.initialize()
            state.tools = await _list_tools(session)
            state.prompts = await _list_prompts(session, state.name)
            state.session = session
            state.status = "connected"
            scope.deadline = math.inf
            state.ready.set()
            await anyio.sleep_forever()

    async def _relist(self, state: ServerState, session) -> None:
        try:
            state.tools = await _list_tools(session)
        except Exception as error:  # noqa: BLE001
            config.notice(f"The MCP server {state.name!r} changed its tools, but listing them failed: {_describe(error)}")
            return
        if self.on_tools_changed is not None:
            self.on_tools_changed(state.name)
        state.tools_version += 1  # last: whoever sees it move knows the agent was told

    async def _relist_prompts(self, state: ServerState, session) -> None:
        # Read where they are used (the REPL's commands): nothing else to tell.
        state.prompts = await _list_prompts(session, state.name)

    def _log(self, name: str):
        if name not in self._logs:
            self._logs[name] = open(self.log_path(name), "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        file = self._logs[name]
        file.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {name}\n")
        file.flush()
        return file


async def _list_tools(session) -> list[Any]:
    import mcp_types

    tools: list[Any] = []
    cursor = None
    for _ in range(100):  # a server that pages forever is not waited on forever
        result = await session.list_tools(params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(result.tools)
        cursor = result.next_cursor
        if not cursor:
            break
    return tools


async def _list_prompts(session, name: str) -> list[Any]:
    """The server's prompts, if it says it has any; a server whose prompt list fails still offers
    its tools (the failure is in the SDK's log)."""
    import mcp_types

    capabilities = session.server_capabilities
    if capabilities is None or capabilities.prompts is None:
        return []
    prompts: list[Any] = []
    cursor = None
    try:
        for _ in range(100):
            result = await session.list_prompts(
                params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            prompts.extend(result.prompts)
            cursor = result.next_cursor
            if not cursor:
                break
    except Exception as error:  # noqa: BLE001 - the prompts are an extra, the tools still work
        logging.getLogger("mcp").error("Listing the prompts of the MCP server %r failed", name, exc_info=error)
        return []
    return prompts


def _group_leaders_started_by_us() -> set[int]:
    """Our child processes that lead a process group of their own (as the SDK starts a stdio
    server), read from /proc; empty where there is none."""
    me, found = os.getpid(), set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[1] == str(me) and fields[2] == entry:
            found.add(int(entry))
    return found


def _stop_groups(groups: set[int]) -> None:
    """SIGTERM every group still alive, SIGKILL what is left after 2 s."""
    alive = set()
    for group in groups:
        try:
            os.killpg(group, signal.SIGTERM)
            alive.add(group)
        except OSError:
            pass
    deadline = time.monotonic() + 2
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        for group in list(alive):
            try:
                os.killpg(group, 0)
            except OSError:
                alive.discard(group)
    for group in alive:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass


def _describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in error.exceptions)
    if isinstance(error, FileNotFoundError):
        return f"the command {error.filename or ''} was not found".replace("  ", " ")
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


def _route_sdk_logging(path: Path) -> None:
    """The SDK logs failures (a bad line from a server, a broken pipe) with ``logging``; without a
    handler Python prints warnings on stderr, over the REPL. They go to a file instead."""
    for name in ("mcp", "httpx2", "httpx"):
        logger = logging.getLogger(name)
        ours = [handler for handler in logger.handlers if getattr(handler, "_mini_letta", False)]
        if ours and ours[0].baseFilename == os.path.abspath(path):
            continue
        for handler in ours:  # another data folder's (MINI_LETTA_HOME changed within the process)
            logger.removeHandler(handler)
            handler.close()
        handler = logging.FileHandler(path, encoding="utf-8", delay=True)
        handler._mini_letta = True
        logger.addHandler(handler)
        logger.propagate = False
