"""The protocol's agent side: ``initialize``, ``session/new``, ``session/load``, ``session/prompt``,
``session/cancel``, ``session/set_mode``. Each handler runs on the protocol's event loop and hands
the engine's work to the :class:`~mini_letta.acp.worker.Worker`; every failure it can name is the
request's JSON-RPC error (one sentence), never an exception the SDK would log as a crash.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (AgentCapabilities, ClientCapabilities, Implementation, InitializeResponse, LoadSessionResponse,
                        McpCapabilities, NewSessionResponse, PromptCapabilities, PromptResponse, SetSessionModeResponse)

from mini_letta import __version__
from mini_letta.acp import modes
from mini_letta.acp.client_editor import Bridge
from mini_letta.acp.session import Session, prompt_text
from mini_letta.acp.worker import Interrupted, Worker
from mini_letta.app import Options
from mini_letta.errors import MiniLettaError

INVALID_REQUEST, INVALID_PARAMS, FAILED = -32600, -32602, -32603


def refused(code: int, message: str) -> RequestError:
    return RequestError(code, message)


def guarded(handler):
    """A handler whose unexpected failure is one line in the log and an internal error to the
    client; what mini-letta can name (``MiniLettaError``) is that sentence as the error."""
    @functools.wraps(handler)
    async def run(self, *args, **kwargs):
        try:
            return await handler(self, *args, **kwargs)
        except RequestError:
            raise
        except MiniLettaError as error:
            raise refused(FAILED, str(error)) from None
        except Exception as error:  # noqa: BLE001 - a bug of ours must not end the connection
            logging.getLogger("mini_letta.acp").error("mini-letta acp: %s failed (%s: %s)", handler.__name__,
                                                      type(error).__name__, error)
            raise refused(FAILED, f"mini-letta failed: {type(error).__name__}: {error}") from None
    return run


class MiniLettaAgent:
    """``acp.Agent`` for sessions built from ``options`` (the command line's)."""

    def __init__(self, options: Options, worker: Worker, loop: asyncio.AbstractEventLoop):
        self.options = options
        self.worker = worker
        self.bridge = Bridge(loop)
        self.conn: Any = None
        self.capabilities: ClientCapabilities | None = None
        self.sessions: dict[str, Session] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # -- lifecycle -------------------------------------------------------------------------------
    @guarded
    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kwargs: Any) -> InitializeResponse:
        self.capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=True,
                                                 prompt_capabilities=PromptCapabilities(embedded_context=True),
                                                 mcp_capabilities=McpCapabilities()),
            agent_info=Implementation(name="mini-letta", title="mini-letta", version=__version__))

    @guarded
    async def new_session(self, cwd: str, mcp_servers: list | None = None, **kwargs: Any) -> NewSessionResponse:
        session = await self._open(cwd, None)
        self._soon(session.announce)
        return NewSessionResponse(session_id=session.id, modes=modes.state(session.mode))

    @guarded
    async def load_session(self, cwd: str, session_id: str, mcp_servers: list | None = None,
                           **kwargs: Any) -> LoadSessionResponse:
        session = self.sessions.get(session_id)
        if session is None:
            session = await self._open(cwd, session_id)
        elif session.busy:
            raise refused(INVALID_REQUEST, f"Session {session_id} is answering a prompt; load it when the turn ends.")
        # The history is sent before the response, as the protocol asks.
        await self._engine(session.id, session.replay)
        self._soon(session.announce)
        return LoadSessionResponse(modes=modes.state(session.mode))

    @guarded
    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        session = self._session(session_id)
        if mode_id not in modes.NAMES:
            raise refused(INVALID_PARAMS, f"{mode_id!r} is not a mode here; choose {', '.join(modes.NAMES)}.")
        session.setting_mode = True
        try:
            session.mode.set(mode_id)
        finally:
            session.setting_mode = False
        return SetSessionModeResponse()

    @guarded
    async def prompt(self, session_id: str, prompt: list, **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.busy:
            raise refused(INVALID_REQUEST, f"Session {session_id} is already answering a prompt: wait for it to end, "
                                           "or cancel it (session/cancel).")
        text = prompt_text(prompt, lambda: session.agent.workspace)
        if not text.strip():
            raise refused(INVALID_PARAMS, "The prompt is empty: send some text.")
        session.busy = True
        try:
            stop = await self._engine(session_id, lambda: session.prompt(text))
        except Interrupted:
            stop = "cancelled"
        finally:
            session.busy = False
        return PromptResponse(stop_reason=stop)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if session_id in self.sessions:
            self.worker.cancel(session_id)

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # keys come from the environment, as for the REPL

    # -- helpers ---------------------------------------------------------------------------------
    def _require_initialized(self) -> None:
        if self.capabilities is None:
            raise refused(INVALID_REQUEST, "Send initialize first: the session needs the client's capabilities.")

    def _session(self, session_id: str) -> Session:
        self._require_initialized()
        session = self.sessions.get(session_id)
        if session is None:
            raise refused(INVALID_PARAMS, f"No session {session_id!r} here: create one with session/new, or resume "
                                          "a saved one with session/load.")
        return session

    async def _open(self, cwd: str, resume: str | None) -> Session:
        self._require_initialized()
        workspace = Path(cwd)
        if not workspace.is_absolute() or not workspace.is_dir():
            raise refused(INVALID_PARAMS, f"cwd must be the absolute path of a folder; {cwd!r} is not one.")
        session = Session(self.bridge, self.conn, self.capabilities)
        await self._engine("", lambda: session.open(self.options, workspace.resolve(), resume))
        self.sessions[session.id] = session
        return session

    async def _engine(self, key: str, work) -> Any:
        return await asyncio.wrap_future(self.worker.submit(key, work))

    def _soon(self, work) -> None:
        """Run ``work`` on the engine after the current response is written (our transport writes
        it in the step that returns it, before this task starts)."""
        asyncio.get_running_loop().create_task(self._engine("", work))

    def close(self) -> None:
        for session in self.sessions.values():
            self.worker.cancel(session.id)
