"""The editor's side of the tools, asked from the engine's thread: its files (``fs/read_text_file``,
``fs/write_text_file``) and terminals (``terminal/*``), each used only when the client said in
``initialize`` that it offers it (``toolbox/editor.py`` is the seam they plug into).

Commands the sandbox runs stay in the sandbox: the editor's terminal cannot confine them. The ones
that run outside it (no sandbox, or approved to run outside) run in the editor's terminal, where
the user sees them live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from mini_letta.settings import SETTINGS
from mini_letta.toolbox.outcome import ToolInterrupted, ToolOutcome



class Bridge:
    """Runs the protocol's coroutines on its event loop from the engine's thread, waiting for each.
    Ctrl-C (a cancel) while waiting cancels the request and goes on up."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop

    def call(self, coroutine: Awaitable, timeout: float | None = None) -> Any:
        future: Future = asyncio.run_coroutine_threadsafe(_awaited(coroutine), self.loop)
        try:
            return future.result(timeout)
        except KeyboardInterrupt:
            future.cancel()
            raise


async def _awaited(coroutine: Awaitable) -> Any:
    return await coroutine


class ClientEditor:
    """``toolbox.editor.Editor`` over the client ``conn`` for session ``session_id``; ``capabilities``
    are the client's (``initialize``). ``on_terminal(terminal_id)`` is told of each terminal made,
    so the running tool call can show it."""

    def __init__(self, bridge: Bridge, conn: Any, session_id: Callable[[], str], capabilities: Any,
                 on_terminal: Callable[[str], None] = lambda terminal_id: None):
        self.bridge = bridge
        self.conn = conn
        self.session_id = session_id
        fs = getattr(capabilities, "fs", None)
        self.reads = bool(fs and fs.read_text_file)
        self.writes = bool(fs and fs.write_text_file)
        self.terminals = bool(getattr(capabilities, "terminal", False))
        self.on_terminal = on_terminal

    def read_text(self, path: Path) -> str | None:
        if not self.reads:
            return None
        try:
            return self.bridge.call(self.conn.read_text_file(session_id=self.session_id(), path=str(path))).content
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001 - the client could not read it (not a file it knows): the disk
            return None

    def write_text(self, path: Path, text: str) -> bool:
        if not self.writes:
            return False
        from mini_letta.toolbox.outcome import ToolError

        try:
            self.bridge.call(self.conn.write_text_file(session_id=self.session_id(), path=str(path), content=text))
        except KeyboardInterrupt:
            raise
        except Exception as error:  # noqa: BLE001 - said to the model: the file may or may not be written
            raise ToolError(f"The editor could not write {path}: {error}.") from None
        return True

    def run_command(self, command: str, cwd: Path, timeout: float, max_chars: int) -> ToolOutcome | None:
        if not self.terminals:
            return None
        session = self.session_id()
        created = self.bridge.call(self.conn.create_terminal(session_id=session, command="bash", args=["-c", command],
                                                             cwd=str(cwd), output_byte_limit=max_chars * 4))
        terminal = created.terminal_id
        self.on_terminal(terminal)
        try:
            try:
                exit_status = self.bridge.call(self.conn.wait_for_terminal_exit(session_id=session,
                                                                                terminal_id=terminal), timeout)
                timed_out = False
            except TimeoutError:
                self.bridge.call(self.conn.kill_terminal(session_id=session, terminal_id=terminal), SETTINGS.acp.terminal_wrap_up_seconds)
                exit_status, timed_out = None, True
            output = self.bridge.call(self.conn.terminal_output(session_id=session, terminal_id=terminal),
                                      SETTINGS.acp.terminal_wrap_up_seconds)
        except KeyboardInterrupt:
            text = self._stop(session, terminal)
            raise ToolInterrupted(ToolOutcome(text + "[interrupted by the user; the command was stopped in the "
                                              "editor's terminal]", is_error=True)) from None
        finally:
            self._release(session, terminal)
        text = (output.output or "(no output)")
        if not text.endswith("\n"):
            text += "\n"
        if output.truncated:
            text = "[the start of the output was cut by the editor's terminal]\n" + text
        if timed_out:
            return ToolOutcome(text + f"[timed out after {timeout:g} s; killed in the editor's terminal]",
                               is_error=True)
        code = getattr(exit_status, "exit_code", None)
        signal_name = getattr(exit_status, "signal", None)
        if code is None and signal_name:
            return ToolOutcome(text + f"[killed by {signal_name}]", is_error=True)
        return ToolOutcome(text + f"[exit code {code if code is not None else '?'}]", is_error=code != 0)

    def _stop(self, session: str, terminal: str) -> str:
        """After a cancel: kill the command, keep what it printed."""
        try:
            self.bridge.call(self.conn.kill_terminal(session_id=session, terminal_id=terminal), SETTINGS.acp.terminal_wrap_up_seconds)
            output = self.bridge.call(self.conn.terminal_output(session_id=session, terminal_id=terminal),
                                      SETTINGS.acp.terminal_wrap_up_seconds)
            text = output.output or ""
            return text if not text or text.endswith("\n") else text + "\n"
        except (Exception, KeyboardInterrupt):  # noqa: BLE001 - the client went away; nothing more to keep
            return ""

    def _release(self, session: str, terminal: str) -> None:
        try:
            self.bridge.call(self.conn.release_terminal(session_id=session, terminal_id=terminal), SETTINGS.acp.terminal_wrap_up_seconds)
        except (Exception, KeyboardInterrupt):  # noqa: BLE001 - released with the session at the latest
            pass
