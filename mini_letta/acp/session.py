"""One editor session: an agent built by the same assembly as the REPL's (``app.build_agent``), its
mode, and what a prompt does on the engine's thread (a turn, or one of our commands)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import tool_terminal_ref, update_agent_message_text, update_tool_call
from acp.helpers import update_available_commands, update_current_mode

from mini_letta import endings
from mini_letta.acp import commands, modes, replay
from mini_letta.acp.approvals import Cancelled, ClientApprover
from mini_letta.acp.client_editor import Bridge, ClientEditor
from mini_letta.acp.events import AcpEvents, Context
from mini_letta.acp.tool_calls import disk_text
from mini_letta.app import Options
from mini_letta.notices import Notices

# How a turn's ending is said to the editor (the protocol's stop reasons).
STOP_REASONS = {endings.MAX_TOKENS: "max_tokens", endings.REFUSAL: "refusal", endings.CONTENT_FILTER: "refusal",
                "max_turns": "max_turn_requests"}


class Session:
    """Built on the engine's thread by :meth:`open`; ``id`` is the session file's id, which
    ``session/load`` takes to resume it."""

    def __init__(self, bridge: Bridge, conn: Any, capabilities: Any):
        self.bridge = bridge
        self.conn = conn
        from mini_letta.permission_mode import PermissionMode

        self.mode = PermissionMode()
        self.mode.listeners.append(self._mode_changed)
        self.agent: Any = None
        self.busy = False
        self.setting_mode = False  # the editor is changing the mode: it knows already
        self.events: AcpEvents | None = None  # the running turn's
        self.editor = ClientEditor(bridge, conn, lambda: self.id, capabilities, on_terminal=self._show_terminal)
        self.notices = Notices()

    @property
    def id(self) -> str:
        return self.agent.session.id

    def open(self, base: Options, workspace: Path, resume: str | None = None) -> None:
        from mini_letta.app import build_agent

        options = dataclasses.replace(base, workspace=workspace, resume=resume, notices=self.notices,
                                      editor=self.editor, permission_mode=self.mode)
        approver = ClientApprover(self._ask, lambda call: self._events().details(call, ""),
                                  lambda: self.agent.toolbox.permissions)
        self.agent = build_agent(options, approver, plan_reviewer=modes.PlanReview(self._ask))

    def _mode_changed(self, name: str) -> None:
        """The mode changed on our side (a plan approved): the editor's picker follows."""
        if self.agent is not None and not self.setting_mode:
            self.send(update_current_mode(name))

    def close(self) -> None:
        from mini_letta import mcp

        if self.agent is None:
            return
        mcp.close(self.agent)
        self.agent.toolbox.background.close()
        if self.agent.session is not None:
            self.agent.session.close()

    # -- talking to the client, from the engine's thread ------------------------------------------
    def send(self, update: Any) -> None:
        try:
            self.bridge.call(self.conn.session_update(session_id=self.id, update=update))
        except ConnectionError:
            pass  # the editor went away: the turn still ends with a valid history, saved

    def _ask(self, tool_call: Any, options: list) -> str:
        response = self.bridge.call(self.conn.request_permission(session_id=self.id, tool_call=tool_call,
                                                                 options=options))
        outcome = response.outcome
        if getattr(outcome, "outcome", None) != "selected":
            raise Cancelled()
        return outcome.option_id

    def _events(self) -> AcpEvents:
        return self.events or AcpEvents(self.send, self.context())

    def context(self) -> Context:
        return Context(lambda: self.agent, lambda path: self.editor.read_text(path) or disk_text(path))

    def _show_terminal(self, terminal_id: str) -> None:
        running = self.events.running if self.events is not None else None
        if running:
            self.send(update_tool_call(running, content=[tool_terminal_ref(terminal_id)]))

    # -- what the editor asks ----------------------------------------------------------------------
    def announce(self) -> None:
        """The commands the editor offers after "/" (ours and the skills)."""
        self.send(update_available_commands(commands.available(self.agent)))

    def replay(self) -> None:
        for update in replay.updates(self.agent.conversation.messages, self.context().resolve):
            self.send(update)
        self.send(self.context().usage())

    def prompt(self, text: str) -> str:
        """Run ``text`` (a command or a turn) on the engine's thread; the protocol's stop reason.
        A failure mini-letta can name raises MiniLettaError, which becomes the request's error."""
        from mini_letta.loop.agent import TurnInterrupted

        self.events = events = AcpEvents(self.send, self.context())
        try:
            self._say_notices(events)
            command = commands.parse(text)
            if command is not None:
                reply, _failed = commands.run(self.agent, *command, _CommandEvents(self.send, self.context()))
                # A view drawn for the terminal (the /context table) keeps its columns in a code block.
                self.send(update_agent_message_text(f"```text\n{reply}\n```" if "\n" in reply else reply))
                return "end_turn"
            try:
                result = self.agent.run_turn(text, events)
            except TurnInterrupted:
                return "cancelled"
            return STOP_REASONS.get(result.stopped, "end_turn")
        finally:
            self._say_notices(events)
            self.send(self.context().usage())
            self.events = None

    def _say_notices(self, events: AcpEvents) -> None:
        for text in self.notices.take():
            events.thought(text)


class _CommandEvents(AcpEvents):
    """For /compact: its result is the reply, so the compaction is not told twice."""

    def compaction_finished(self, record) -> None:
        self.send(self.context.usage())


def prompt_text(blocks: list, workspace: Callable[[], Path]) -> str:
    """The prompt's content blocks as the user's message: text as typed, a file the editor attached
    as its text (named), a link to one as ``@path`` (read with read_file if needed)."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"@{_shown_path(block.uri, workspace())}")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            name = _shown_path(resource.uri, workspace())
            parts.append(f"\n<file path=\"{name}\">\n{text}\n</file>\n" if text is not None
                         else f"(an attached file, {name}, is not text and was left out)")
        else:
            parts.append(f"(an attached {kind or 'item'} was left out: mini-letta reads text only)")
    return "\n".join(part for part in parts if part)


def _shown_path(uri: str, workspace: Path) -> str:
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return uri
    path = Path(unquote(parsed.path))
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path)
