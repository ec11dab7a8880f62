"""One MCP server's connection, as a task on the manager's event loop (``client.py``).

The task opens the transport (stdio, streamable HTTP or SSE) and the ``ClientSession``, initializes,
lists the tools and prompts, then waits until it is told to stop; everything it opened is closed by
that same task, inside one cancel scope whose deadline is the start-up timeout until the server is
ready. A server's ``notifications/tools/list_changed`` (or prompts) lists them again.
"""

from __future__ import annotations

import logging
import math
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable

from mini_letta.mcp.config import HTTP_TRANSPORTS, ServerConfig


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
    stopping: bool = False  # told to stop (set on the loop's thread, like scope)
    done: Future | None = None

    @property
    def name(self) -> str:
        return self.config.name


@dataclass
class Hooks:
    """What the task tells its manager: ``errlog()`` a stdio server's stderr file, ``started()`` after a
    stdio server was spawned, ``tools_changed(name)`` after a new tool list, ``settled(state)`` when
    the server is connected or has failed or stopped; ``say(text)`` a notice for the user."""

    errlog: Callable[[str], Any]
    started: Callable[[], None]
    tools_changed: Callable[[str], None]
    settled: Callable[[ServerState], None]
    say: Callable[[str], None]


async def serve(state: ServerState, hooks: Hooks) -> None:
    import anyio

    cfg = state.config
    scope = anyio.CancelScope(deadline=anyio.current_time() + cfg.startup_timeout)
    state.scope = scope
    try:
        if state.stopping:  # closed before this task ran
            state.status = "stopped"
            return
        with scope:
            await _connect_and_wait(state, scope, hooks)
        if state.status == "starting":
            state.status, state.error = ("stopped", "") if state.stopping else (
                "failed", f"did not start within {cfg.startup_timeout:g} s")
    except Exception as error:  # noqa: BLE001 - a server that fails is reported, never raised
        if state.stopping:
            state.status = "stopped"
        elif state.status != "stopped":
            state.error = describe(error)
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
        was_ready = state.ready.is_set()
        state.ready.set()
        if not was_ready:
            hooks.settled(state)


async def _connect_and_wait(state: ServerState, scope, hooks: Hooks) -> None:
    from contextlib import AsyncExitStack

    import anyio
    from mcp import ClientSession

    cfg = state.config
    async with AsyncExitStack() as stack:
        if cfg.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=cfg.command, args=cfg.args, env=cfg.env or None)
            read, write = await stack.enter_async_context(stdio_client(params, errlog=hooks.errlog(state.name)))
            hooks.started()
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
                tasks.start_soon(_relist, state, session, hooks)
            elif isinstance(message, mcp_types.PromptListChangedNotification):
                tasks.start_soon(_relist_prompts, state, session)

        tasks = await stack.enter_async_context(anyio.create_task_group())
        session = await stack.enter_async_context(ClientSession(read, write, message_handler=on_message))
        await session.initialize()
        state.tools = await _list_tools(session)
        state.prompts = await _list_prompts(session, state.name)
        state.session = session
        state.status = "connected"
        scope.deadline = math.inf
        state.ready.set()
        hooks.settled(state)
        await anyio.sleep_forever()


async def _relist(state: ServerState, session, hooks: Hooks) -> None:
    try:
        state.tools = await _list_tools(session)
    except Exception as error:  # noqa: BLE001
        hooks.say(f"The MCP server {state.name!r} changed its tools, but listing them failed: {describe(error)}")
        return
    hooks.tools_changed(state.name)
    state.tools_version += 1  # last: whoever sees it move knows the agent was told


async def _relist_prompts(state: ServerState, session) -> None:
    # Read where they are used (the REPL's commands): nothing else to tell.
    state.prompts = await _list_prompts(session, state.name)


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


def describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    if isinstance(error, FileNotFoundError):
        return f"the command {error.filename or ''} was not found".replace("  ", " ")
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]
