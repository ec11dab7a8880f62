"""What the slash commands and the event view need from the REPL, as a protocol.

:class:`mini_letta.repl.app.Repl` provides it. Commands and events depend on this interface rather
than on the REPL module, which imports them: no import cycle, and a test can pass a small stand-in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from mini_letta.loop.agent import Agent


class ReplHost(Protocol):
    console: Console
    running: bool
    events: Any
    # What the next prompt starts with (the message /rewind went back to).
    draft: str

    def agent(self) -> Agent:
        """The agent, waiting for the background start-up if needed."""

    def agent_if_ready(self) -> Agent | None:
        """The agent if it has been built, else None (never waits)."""

    def ask_to_go_on(self, steps: int) -> bool:
        """The turn reached its limit of model calls: whether to allow as many again (one key)."""

    def send(self, line: str) -> None:
        """Run a turn with ``line`` as the user's message."""

    def refresh_status(self) -> None:
        """Recompute the status bar at its next render."""

    def new_session(self) -> None:
        """Reset the agent onto a new, empty session."""

    def compact(self, focus: str | None) -> None:
        """Compact the conversation now, with an optional focus."""

    def edit_memory(self, label: str) -> None:
        """Let the user edit one core memory block."""

    def edit_text(self, initial: str) -> str | None:
        """The user's edit of ``initial`` ($VISUAL / $EDITOR, else an input line); None when cancelled."""

    def status_line(self) -> Any:
        """The status bar as Rich text, recomputed now (for the footer shown during a turn)."""

    def percent_left(self) -> int | None:
        """The context left, in percent, once the agent is ready."""

    def remember_output(self, call: Any, outcome: Any) -> None:
        """Keep a tool's full output for Ctrl-O and /expand."""

    def expand(self, which: int = 1) -> None:
        """Show the ``which``-th latest tool output in full, in the pager."""

    def list_sessions(self) -> None:
        """Print the saved sessions of this folder."""

    def resume(self, session_id: str | None) -> None:
        """Go on with an earlier session (asking which when ``session_id`` is None)."""

    def switch_model(self, provider: str | None, model: str | None) -> None:
        """Show or change the provider and model."""
