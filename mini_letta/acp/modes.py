"""The session modes an editor offers in its mode picker: ask, auto-accept edits, read-only.

- ``default`` (ask): every write and every command outside the sandbox asks (or a rule allows it).
- ``acceptEdits``: write_file and edit_file in the workspace run unasked (a ``run_unasked`` check of
  the permissions, so a protected file is still asked every time); commands as in ask.
- ``read-only``: nothing that needs approval runs, and sandboxed commands run in a read-only sandbox,
  so nothing in the workspace changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

DEFAULT, ACCEPT_EDITS, READ_ONLY = "default", "acceptEdits", "read-only"
NAMES = {DEFAULT: "Ask", ACCEPT_EDITS: "Auto-accept edits", READ_ONLY: "Read-only"}
DESCRIPTIONS = {DEFAULT: "Ask before each file change and each command outside the sandbox.",
                ACCEPT_EDITS: "File edits in the workspace run without asking; commands still ask.",
                READ_ONLY: "Nothing is changed: writes are refused, commands run in a read-only sandbox."}
ACCEPT_EDITS_REASON = "auto-accept edits mode"
READ_ONLY_DENIAL = ("Denied: the editor has mini-letta in read-only mode, where no file is written and no command "
                    "runs outside a read-only sandbox. Tell the user what you would change instead.")


class Mode:
    """The session's mode; ``set`` changes it and calls each listener."""

    def __init__(self, current: str = DEFAULT):
        self.current = current
        self.listeners: list[Callable[[str], None]] = []

    def set(self, name: str) -> None:
        if name not in NAMES:
            raise ValueError(f"{name!r} is not a mode; choose {', '.join(NAMES)}.")
        self.current = name
        for listener in self.listeners:
            listener(name)

    def state(self):
        from acp.schema import SessionMode, SessionModeState

        return SessionModeState(current_mode_id=self.current, available_modes=[
            SessionMode(id=key, name=NAMES[key], description=DESCRIPTIONS[key]) for key in NAMES])


def attach(mode: Mode, toolbox) -> None:
    """Make ``toolbox`` follow ``mode``: edits unasked in acceptEdits, a read-only sandbox in read-only."""
    def accepts_edit(call, arguments) -> str | None:
        return ACCEPT_EDITS_REASON if mode.current == ACCEPT_EDITS and call.name in ("write_file", "edit_file") \
            else None

    toolbox.permissions.run_unasked.append(accepts_edit)
    writable = toolbox.sandbox
    read_only = None
    if writable is not None and writable.active and writable.mode != READ_ONLY:
        read_only = dataclasses.replace(writable, settings=dataclasses.replace(writable.settings, mode=READ_ONLY))

    def follow(name: str) -> None:
        if read_only is not None:
            toolbox.sandbox = read_only if name == READ_ONLY else writable

    mode.listeners.append(follow)
    follow(mode.current)
