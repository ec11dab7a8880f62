"""Driving ``mini-letta acp`` as an editor does: the SDK's own client (``spawn_agent_process``) over
the process's real pipes, against the fake model servers. ``Editor`` records every update and
answers the questions as a test scripts them; ``run(coroutine)`` runs one test's dialogue."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (AllowedOutcome, ClientCapabilities, DeniedOutcome, FileSystemCapabilities, ReadTextFileResponse,
                        RequestPermissionResponse, WriteTextFileResponse)
from fault_support import cli_env

# A dialogue that is not over by then is a failure, not a hang.
DIALOGUE_SECONDS = 90


class Editor:
    """The client: updates by kind, permission questions answered from ``answers`` (option ids, in
    order; "cancel" answers cancelled), files held in ``buffers`` when it offers the fs methods."""

    def __init__(self, answers: list[str] | None = None, buffers: dict[str, str] | None = None):
        self.updates: list[Any] = []
        self.questions: list[Any] = []
        self.answers = list(answers or [])
        self.buffers = buffers
        self.written: dict[str, str] = {}
        self.first_text = asyncio.Event()
        self.first_update = asyncio.Event()

    def capabilities(self) -> ClientCapabilities:
        if self.buffers is None:
            return ClientCapabilities()
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.first_update.set()
        if update.session_update == "agent_message_chunk":
            self.first_text.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: list, **kwargs: Any):
        self.questions.append((tool_call, options))
        answer = self.answers.pop(0) if self.answers else "reject_once"
        if answer == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> ReadTextFileResponse:
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.written[path] = content
        self.buffers[path] = content
        return WriteTextFileResponse()

    # -- what the tests read ----------------------------------------------------------------------
    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind))

    def tool_updates(self, call_id: str) -> list[Any]:
        return [u for u in self.updates if u.session_update in ("tool_call", "tool_call_update")
                and u.tool_call_id == call_id]


def agent_command(fake) -> list[str]:
    return ["-m", "mini_letta", "acp", "--provider", "openai", "--model", "model-test", "--base-url", fake.base_url]


class Agent:
    """``async with Agent(fake, home, workspace, editor) as (conn, session_id)``: the process started,
    initialized, one session made (``load=`` an id resumes it instead)."""

    def __init__(self, fake, home: Path, workspace: Path, editor: Editor, env: dict[str, str] | None = None,
                 load: str | None = None):
        self.fake, self.home, self.workspace, self.editor = fake, home, workspace, editor
        self.env = {"MINI_LETTA_SANDBOX": "off", **(env or {})}
        self.load = load
        self.stderr_path = home.parent / f"acp-stderr-{id(self)}.log"

    async def __aenter__(self):
        self.home.mkdir(parents=True, exist_ok=True)
        self._stderr = open(self.stderr_path, "wb")
        self._spawn = spawn_agent_process(self.editor, sys.executable, *agent_command(self.fake), cwd=self.workspace,
                                          env=cli_env(self.home, self.env),
                                          transport_kwargs={"stderr": self._stderr})
        self.conn, self.process = await self._spawn.__aenter__()
        await self.conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=self.editor.capabilities())
        if self.load is None:
            self.session = (await self.conn.new_session(cwd=str(self.workspace))).session_id
        else:
            await self.conn.load_session(cwd=str(self.workspace), session_id=self.load)
            self.session = self.load
        return self

    async def prompt(self, text: str) -> str:
        return (await self.conn.prompt(session_id=self.session, prompt=[text_block(text)])).stop_reason

    async def __aexit__(self, *exc):
        await self._spawn.__aexit__(*exc)
        self._stderr.close()

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


def run(coroutine) -> Any:
    async def bounded():
        return await asyncio.wait_for(coroutine, DIALOGUE_SECONDS)
    return asyncio.run(bounded())
