"""The permission mode of a session: ``default``, ``acceptEdits`` or ``plan`` (Claude Code's names).

- ``default``: every write and every command outside the sandbox is asked about (or allowed by a rule).
- ``acceptEdits``: ``write_file`` and ``edit_file`` in the workspace run without asking; the files
  that change what runs (``toolbox/protected.py``) are still asked every time, and commands as usual.
- ``plan``: only read-only tools run; any other call is refused with :data:`PLAN_REFUSAL`, and the
  model ends by calling ``exit_plan_mode`` with its plan, which the user approves (the mode becomes
  ``acceptEdits`` or ``default``) or rejects (it stays ``plan``).

One :class:`PermissionMode` is made per run (``--permission-mode``, Shift+Tab in the REPL, an editor's
session mode) and shared by everything that asks it: the toolbox through the :class:`ModeGate`
protocol, a subagent's toolbox too (it shares its parent's permissions), the status bar, the hooks'
input (``permission_mode``). Whoever changes it tells the listeners.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

DEFAULT, ACCEPT_EDITS, PLAN = "default", "acceptEdits", "plan"
MODES = (DEFAULT, ACCEPT_EDITS, PLAN)  # Shift+Tab's order
LABELS = {DEFAULT: "normal", ACCEPT_EDITS: "auto-accept edits", PLAN: "plan mode"}
# Spellings a user may type for a mode (--permission-mode, an editor): lower case, no separators.
_ALIASES = {"default": DEFAULT, "normal": DEFAULT, "acceptedits": ACCEPT_EDITS, "plan": PLAN}

PLAN_REFUSAL = ("Not run: mini-letta is in plan mode, where only read-only tools run ({tools} are refused). "
                "Research with the read-only tools, then call exit_plan_mode with your plan in Markdown; "
                "the user approves it before anything is changed.")
PLAN_REMINDER = ("[mini-letta is in plan mode: only read-only tools run. Find out what is needed, then call "
                 "exit_plan_mode with the plan in Markdown; change nothing until the user approves it.]")


class ModeGate(Protocol):
    """What the toolbox asks the mode before a call (:class:`PermissionMode` is one)."""

    def refusal(self, tool: str, read_only: bool) -> str | None:
        """Why ``tool`` may not run in this mode, or None."""

    def accepts_edits(self) -> bool:
        """Whether file edits in the workspace run without asking."""


def parse(text: str) -> str:
    """A mode's name from what a user typed (``plan``, ``acceptEdits``, ``accept-edits``, ``default``);
    ValueError with one sentence naming the choices."""
    key = "".join(ch for ch in str(text).lower() if ch.isalnum())
    if key not in _ALIASES:
        raise ValueError(f"{text!r} is not a permission mode; choose default, acceptEdits or plan.")
    return _ALIASES[key]


class PermissionMode:
    """The session's mode; ``set``/``cycle`` change it and tell each listener ``listener(name)``."""

    def __init__(self, name: str = DEFAULT):
        self._name = parse(name)
        self._lock = threading.Lock()
        self.listeners: list[Callable[[str], None]] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def label(self) -> str:
        return LABELS[self._name]

    @property
    def planning(self) -> bool:
        return self._name == PLAN

    def set(self, name: str) -> str:
        new = parse(name)
        with self._lock:
            changed, self._name = new != self._name, new
        if changed:
            for listener in list(self.listeners):
                listener(new)
        return new

    def cycle(self) -> str:
        """Shift+Tab: normal → auto-accept edits → plan → normal."""
        return self.set(MODES[(MODES.index(self._name) + 1) % len(MODES)])

    # -- ModeGate --------------------------------------------------------------------------------
    def refusal(self, tool: str, read_only: bool) -> str | None:
        if self._name == PLAN and not read_only:
            return PLAN_REFUSAL.format(tools=f"{tool} and every tool that changes something")
        return None

    def accepts_edits(self) -> bool:
        return self._name == ACCEPT_EDITS

    def reminder(self) -> str | None:
        """What the model is told with each message while the mode asks something of it."""
        return PLAN_REMINDER if self._name == PLAN else None

    def __repr__(self) -> str:
        return f"PermissionMode({self._name!r})"
