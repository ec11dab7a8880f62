"""The status bar: at the prompt (prompt_toolkit fragments) and in the footer of a turn (Rich text)."""

from __future__ import annotations

from prompt_toolkit.application import get_app

from mini_letta.repl.views import LEVEL_TOOLBAR, STATUS_SEPARATOR, fit_status, mcp_progress, status_fields, status_text
from mini_letta.trust.terminal_text import visible


class StatusBar:
    def __init__(self, startup, console):
        self.startup = startup
        self.console = console
        self._fields: list | None = None

    def refresh(self) -> None:
        """Recompute the fields at the next render."""
        self._fields = None

    def toolbar(self, width: int | None = None):
        """The bottom bar: "N% context left", model, tokens/window, coloured by level; fields are
        dropped by priority when the terminal is narrow."""
        agent = self.startup.agent_if_ready()
        if agent is None:
            if self.startup.failed:
                return [("fg:ansired", "start-up failed: press Enter to see why")]
            return [("fg:ansigray", "starting…")]
        # A summary prepared in the background becomes ready without any key being pressed.
        # So are the MCP servers connected in the background.
        if self._fields is None or agent.ahead.ready != any(f[0] == "ahead" for f in self._fields) \
                or mcp_progress(agent) != next((f[1] for f in self._fields if f[0] == "mcp"), ""):
            self._fields = status_fields(agent)
        if width is None:
            width = get_app().output.get_size().columns
        fragments = []
        for name, text, level in fit_status(self._fields, width - 1):
            if fragments:
                fragments.append(("", STATUS_SEPARATOR))
            fragments.append((LEVEL_TOOLBAR[level] if level else "", visible(text)))
        return fragments

    def line(self):
        """The status bar as Rich text, recomputed now, for the footer shown during a turn."""
        agent = self.startup.agent_if_ready()
        if agent is None:
            return status_text([])
        self._fields = status_fields(agent)
        return status_text(fit_status(self._fields, self.console.width - 1))
