"""Compaction ahead of time: the summary is prepared while the user types, so the automatic
compaction at the threshold installs it at once instead of waiting for the summarizer.

``AheadOfTime`` runs at most one preparation, in a daemon thread, on a snapshot of the history. A
prepared plan is used only while that snapshot is still a prefix of the history (the same message
objects, in order) and the model and window it was made for are still the ones in use (``key``):
anything appended after it stays verbatim after the summary. ``cancel`` (Ctrl-C, ``/clear``, exit)
drops the plan, and a preparation still under way is dropped when it ends. The summarizer itself
is never called twice at once: the agent serialises its calls, and the foreground compaction first
waits for a preparation under way (``take``) rather than starting a second summary of the same
history. A server of one's own (``serves_concurrently`` False) gets no chat request while a
preparation is under way either: the turn waits for it (``wait``), as it would at the compaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from mini_letta.compaction.plan import CompactionResult
from mini_letta.compaction.record import is_prefix
from mini_letta.messages import Message


class AheadOfTime:
    def __init__(self, prepare: Callable[[list[Message]], CompactionResult | None],
                 key: Callable[[], object] = lambda: None):
        self._prepare = prepare
        # What the plan depends on besides the history (model, window): a change drops it.
        self._key = key
        self._plan_key: object = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._plan: CompactionResult | None = None
        self._generation = 0
        self.prepared = 0  # preparations finished with a usable plan (for the benchmark and /context)

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def ready(self) -> bool:
        """A prepared summary is waiting to be used (the status bar says so)."""
        return self._plan is not None

    def start(self, messages: list[Message]) -> bool:
        """Prepare the compaction of ``messages`` in the background, unless one is under way or the
        prepared plan already covers this history. True when a preparation started."""
        with self._lock:
            if self.running:
                return False
            key = self._key()
            if self._plan is not None and self._plan_key == key and is_prefix(self._plan.before, messages):
                return False
            self._plan = None
            snapshot = list(messages)
            generation = self._generation
            self._thread = threading.Thread(target=self._run, args=(snapshot, generation, key), daemon=True,
                                            name="mini-letta-compact-ahead")
            self._thread.start()
            return True

    def _run(self, snapshot: list[Message], generation: int, key: object) -> None:
        try:
            plan = self._prepare(snapshot)
        except Exception:  # noqa: BLE001 - a failed preparation only means the usual compaction runs later
            plan = None
        with self._lock:
            if generation == self._generation and plan is not None:
                self._plan, self._plan_key = plan, key
                self.prepared += 1

    def wait(self) -> None:
        """Until a preparation under way has ended (its plan is kept for ``take``). The agent waits
        here before a request to a server that answers one request at a time."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join()

    def take(self, messages: list[Message]) -> CompactionResult | None:
        """The prepared plan if it still covers a prefix of ``messages`` (waiting for a preparation
        under way first); it is used once. None when there is none or it no longer matches."""
        self.wait()
        with self._lock:
            plan, self._plan = self._plan, None
        if plan is None or self._plan_key != self._key() or not is_prefix(plan.before, messages):
            return None
        return plan

    def cancel(self) -> None:
        """Drop the prepared plan and whatever a preparation under way produces."""
        with self._lock:
            self._generation += 1
            self._plan = None
