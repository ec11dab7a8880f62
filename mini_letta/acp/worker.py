"""The engine's thread: every call into an agent (building it, a turn, a command) runs here, on the
main thread, one at a time, while the protocol's event loop runs on another thread.

The main thread because a cancel is the REPL's Ctrl-C: SIGINT sent to this thread interrupts what
it is blocked in (a model's stream, a command, a question to the client) and becomes the
``KeyboardInterrupt`` the loop already turns into ``TurnInterrupted`` with a valid history. The
signal only interrupts the job it was sent for: the handler raises only while that job runs, so a
cancel that arrives as the job ends is dropped, and an idle engine ignores Ctrl-C in its terminal.
"""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Job:
    work: Callable[[], Any]
    key: str  # the session it is for: a cancel of that session interrupts it
    future: Future = field(default_factory=Future)
    cancelled: bool = False


class Interrupted(Exception):
    """The job was interrupted, or cancelled before it started."""


class Worker:
    def __init__(self) -> None:
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._lock = threading.Lock()
        self._running: Job | None = None
        self._interruptible = False
        self._thread_id = threading.main_thread().ident

    def submit(self, key: str, work: Callable[[], Any]) -> Future:
        """Run ``work()`` on the engine's thread; the future has its result, its exception, or
        :class:`Interrupted`."""
        job = Job(work, key)
        self._jobs.put(job)
        return job.future

    def cancel(self, key: str) -> None:
        """Interrupt the running job of ``key`` (SIGINT to the engine's thread); jobs of ``key`` still
        waiting are dropped."""
        with self._lock:
            with self._jobs.mutex:
                for job in self._jobs.queue:
                    if job is not None and job.key == key:
                        job.cancelled = True
            if self._running is not None and self._running.key == key and self._interruptible \
                    and not self._running.cancelled:
                self._running.cancelled = True
                signal.pthread_kill(self._thread_id, signal.SIGINT)

    def stop(self) -> None:
        self._jobs.put(None)

    def serve(self) -> None:
        """Run jobs until :meth:`stop`; on the main thread."""
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            while True:
                try:
                    job = self._jobs.get()
                except KeyboardInterrupt:
                    continue
                if job is None:
                    return
                self._run(job)
        finally:
            signal.signal(signal.SIGINT, previous)

    def _on_sigint(self, signum, frame) -> None:
        if self._interruptible:
            raise KeyboardInterrupt

    def _run(self, job: Job) -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            with self._lock:
                if job.cancelled:
                    raise Interrupted()
                self._running, self._interruptible = job, True
            try:
                result = job.work()
            finally:
                self._interruptible = False
        except KeyboardInterrupt:
            error = Interrupted()
        except BaseException as exc:  # noqa: BLE001 - handed to the request that asked for it
            error = exc
        finally:
            with self._lock:
                self._running, self._interruptible = None, False
        if error is not None:
            job.future.set_exception(error)
        else:
            job.future.set_result(result)
