"""One run's notices: the one-line messages for the user that readers and components find.

Whoever starts a run (the REPL, ``-p``, a Typer command) makes one :class:`Notices` and hands its
``say`` down; the face that drew the prompt takes what was said and shows it. Nothing here is
global: two runs in one process (tests, a subagent's parent and child) never share a channel
unless one is handed the other's ``say``.
"""

from __future__ import annotations

import threading
from typing import Callable

from mini_letta.trust.urls import mask_userinfo

Say = Callable[[str], None]


def quiet(text: str) -> None:
    """A ``say`` that drops the text: for a reader whose problems were already said elsewhere."""


class Notices:
    """A thread-safe channel. Each distinct text is said once per channel (two readers of one
    settings file find the same problem, one before and one after the first was shown); ``take``
    hands each said text to exactly one caller. ``on_said`` (optional) is called after a text is
    queued, outside the lock, so a face can wake up and show it."""

    def __init__(self, on_said: Callable[[], None] | None = None):
        self._lock = threading.Lock()
        self._queued: list[str] = []
        self._said: set[str] = set()
        self.on_said = on_said

    def say(self, text: str) -> None:
        text = mask_userinfo(text)  # a notice may name a base URL, whose user:password is not shown
        with self._lock:
            if text in self._said:
                return
            self._said.add(text)
            self._queued.append(text)
        listener = self.on_said
        if listener is not None:
            listener()

    def take(self) -> list[str]:
        """The texts said since the last take, in order; two threads taking at once never both get one."""
        with self._lock:
            taken, self._queued = self._queued, []
        return taken

    def pending(self) -> bool:
        with self._lock:
            return bool(self._queued)


def prefixed(say: Say, prefix: str) -> Say:
    """``say`` with ``prefix: `` before each text (a subagent's notices in its parent's channel)."""
    return lambda text: say(f"{prefix}: {text}")
