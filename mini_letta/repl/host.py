"""What the slash commands and the event view need from the REPL, as a protocol.

:class:`mini_letta.repl.app.Repl` provides it. Commands and events depend on this interface rather
than on the REPL module, which imports them: no import cycle, and a test can pass a small stand-in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from mini_letta.app import Options
    from mini_letta.loop.agent import Agent


class ReplHost(Protocol):
    console: Console
    options: Options
    running: bool
    events: Any  # the ReplEvents of the turn or compaction under way
    turn_keys: Any  # the TurnKeys of the turn under way
    approvals: Any  # the Approvals: the questions asked during a turn
    # What the next prompt starts with (the message /rewind went back to).
    draft: str
    # The recent tool outputs in full (title, text), newest last, for Ctrl-O and /expand.
    outputs: list[tuple[str, str]]

    def agent(self) -> Agent:
        """The agent, waiting for the background start-up if needed."""

    def agent_if_ready(self) -> Agent | None:
        """The agent if it has been built, else None (never waits)."""

    def send(self, line: str) -> None:
        """Run a turn with ``line`` as the user's message."""

    def refresh_status(self) -> None:
        """Recompute the status bar at its next render."""

    def status_line(self) -> Any:
        """The status bar as Rich text, recomputed now (for the footer shown during a turn)."""

    def percent_left(self) -> int | None:
        """The context left, in percent, once the agent is ready."""

    def remember_output(self, call: Any, outcome: Any) -> None:
        """Keep a tool's full output for Ctrl-O and /expand."""
