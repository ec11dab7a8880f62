"""Background commands: ``bash`` with ``run_in_background`` returns at once with a shell id;
``bash_output`` reads what the command printed since the last read, ``kill_bash`` stops it.

Every command starts on one long-lived thread owned by :class:`BackgroundJobs` (the runner), not on
the tool call's thread: bubblewrap's ``--die-with-parent`` ends the sandbox when the *thread* that
started it exits (``PR_SET_PDEATHSIG`` is per thread). A sandboxed command runs exactly as a
foreground one (:meth:`Sandbox.prepare`); its clean-up (protected paths it created removed, the
repositories it made disarmed: ``Confinement.finish``) runs once, when ``bash_output`` finds it
ended, at ``kill_bash``, or when the session ends. Outside the sandbox the process tree is followed
as in the foreground (:mod:`processes`), so ``setsid`` children are stopped too; when the shell
exits, what it left running is stopped with it.

A reader thread per command keeps its output not read yet, at most
``SETTINGS.tools.background_buffer_bytes``: older output is dropped first, and the next read says
how much. :func:`close_all` ends every command of the process (the REPL's exit, the end of a ``-p``
run); it is also registered with ``atexit`` at the first command, as a backstop.
"""

from __future__ import annotations

import atexit
import codecs
import os
import queue
import selectors
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mini_letta.settings import SETTINGS
from mini_letta.toolbox.outcome import ToolError, ToolOutcome
from mini_letta.toolbox.processes import ProcessTree, stop_tree
from mini_letta.toolbox.shell import CHUNK, KILL_GRACE, TREE_SCAN_INTERVAL, _exit_note, _survivors_note
from mini_letta.wording import counted

TOOL_NAMES = ("bash_output", "kill_bash")


@dataclass(frozen=True)
class JobView:
    """One command as ``/bashes`` lists it."""

    shell_id: str
    command: str
    state: str  # "running", or how it ended ("exit code 0", "killed by SIGTERM")
    seconds: float


class Job:
    """One background command: its process, its unread output and, once it ended, its clean-up."""

    def __init__(self, shell_id: str, command: str, process: subprocess.Popen, tree: ProcessTree | None,
                 finish: Callable[[], str] | None):
        self.shell_id, self.command, self.process, self.tree = shell_id, command, process, tree
        self._finish = finish
        self.started = time.monotonic()
        self.ended_at: float | None = None
        self.lock = threading.Lock()  # the tree and the clean-up: the reader and a tool call share them
        self._buffer = bytearray()
        self._dropped = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.settled = False
        self.killed = False
        self._notes: list[str] = []  # said at the next read: the clean-up's, the kill's
        self.reader = threading.Thread(target=self._read, name=f"mini-letta {shell_id} output", daemon=True)

    # -- the reader thread ---------------------------------------------------------------------
    def _read(self) -> None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        scanned = 0.0
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(fd, selectors.EVENT_READ)
                while True:
                    if self.tree is not None and time.monotonic() - scanned >= TREE_SCAN_INTERVAL:
                        with self.lock:
                            self.tree.scan()
                        scanned = time.monotonic()
                    if not selector.select(timeout=TREE_SCAN_INTERVAL):
                        continue
                    chunk = os.read(fd, CHUNK)
                    if not chunk:
                        break
                    self._keep(chunk)
        except OSError:
            pass
        finally:
            self.process.stdout.close()

    def _keep(self, chunk: bytes) -> None:
        cap = SETTINGS.tools.background_buffer_bytes
        with self.lock:
            self._buffer += chunk
            if len(self._buffer) > cap:
                extra = len(self._buffer) - cap
                del self._buffer[:extra]
                self._dropped += extra

    # -- what the tool calls see ---------------------------------------------------------------
    @property
    def code(self) -> int | None:
        return self.process.poll()

    def state(self) -> str:
        code = self.code
        return "running" if code is None else _exit_note(code).strip("[]")

    def take(self) -> tuple[str, int, int]:
        """The output since the last read, the bytes dropped from it (over the cap), and the bytes
        of an unfinished line held for the next read. While the command runs, a read ends at the
        last line end (``\\n`` or ``\\r``): what is masked is whole lines, so a key the command
        prints in two writes is not read as two harmless halves (an unfinished line longer than
        ``SETTINGS.tools.background_held_line_bytes`` is read as it is)."""
        with self.lock:
            ended = not self.reader.is_alive() and self.code is not None
            data, dropped, held = bytes(self._buffer), self._dropped, b""
            if not ended:
                end = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
                if len(data) - end <= SETTINGS.tools.background_held_line_bytes:
                    data, held = data[:end], data[end:]
            self._buffer[:] = held
            self._dropped = 0
        return self._decoder.decode(data, final=ended), dropped, len(held)

    def stop(self) -> dict[int, str]:
        """Stop the whole process tree (SIGTERM, then SIGKILL); pid -> name of what would not stop."""
        with self.lock:
            survivors = stop_tree(self.process.pid, self.tree, self.process.poll, KILL_GRACE)
        self.process.wait()
        return survivors

    def settle(self) -> None:
        """Once the command has ended: stop what it left running, then the sandbox's clean-up."""
        if self.settled or self.code is None:
            return
        self.settled = True
        self.ended_at = self.ended_at or time.monotonic()
        survivors = self.stop() if self.tree is not None and self.tree.alive() else {}
        if survivors:
            self._notes.append(_survivors_note(survivors))
        self.reader.join(timeout=KILL_GRACE)
        if self._finish is not None:
            note = self._finish()
            if note:
                self._notes.append(note)

    def take_notes(self) -> list[str]:
        notes, self._notes = self._notes, []
        return notes

    def seconds(self) -> float:
        return (self.ended_at or time.monotonic()) - self.started


class _Runner:
    """The one thread every background command is started from (see the module's docstring)."""

    def __init__(self):
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="mini-letta background commands", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            work, future = self._queue.get()
            try:
                future.set_result(work())
            except BaseException as error:  # handed to the caller, who says it in one sentence
                future.set_exception(error)

    def call(self, work: Callable[[], Any]) -> Any:
        future: Future = Future()
        self._queue.put((work, future))
        return future.result()


class BackgroundJobs:
    """The background commands of one toolbox. ``on_start`` is called at each start (the toolbox
    lists ``bash_output`` and ``kill_bash`` from the first one)."""

    def __init__(self):
        self._jobs: dict[str, Job] = {}
        self._count = 0
        self._runner: _Runner | None = None
        self.on_start: Callable[[], None] = lambda: None

    def start(self, command: str, cwd: Path, *, wrap: Callable[[list[str]], list[str]] | None = None,
              env: dict[str, str] | None = None, follow_tree: bool = True,
              finish: Callable[[], str] | None = None) -> Job:
        """Start ``command`` (``bash -c``) in its own process group; ``finish()`` runs once after it
        ended and returns a note for the model ("" for none). Raises ToolError over the limit."""
        running = [job for job in self._jobs.values() if job.code is None]
        limit = SETTINGS.tools.background_max_running
        if len(running) >= limit:
            raise ToolError(f"{counted(len(running), 'background command')} already running (at most {limit}); "
                            "stop one with kill_bash first.")
        if self._runner is None:
            self._runner = _Runner()
            _remember(self)
        argv = ["bash", "-c", command]
        process = self._runner.call(lambda: subprocess.Popen(
            wrap(argv) if wrap else argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True))
        self._count += 1
        shell_id = f"bash_{self._count}"
        tree = ProcessTree(process.pid, process.stdout.fileno()) if follow_tree else None
        job = Job(shell_id, command, process, tree, finish)
        self._jobs[shell_id] = job
        job.reader.start()
        self.on_start()
        return job

    def job(self, shell_id: str) -> Job:
        job = self._jobs.get(shell_id.strip())
        if job is None:
            known = ", ".join(self._jobs) or "none was started"
            raise ToolError(f"There is no background command {shell_id!r} (the shell ids: {known}).")
        return job

    def listing(self) -> list[JobView]:
        return [JobView(job.shell_id, job.command, job.state(), job.seconds()) for job in self._jobs.values()]

    def output(self, shell_id: str, max_chars: int, pattern: str | None = None) -> ToolOutcome:
        """``bash_output``: the new output (the lines ``pattern`` matches, when given) and the state."""
        job = self.job(shell_id)
        matcher = None
        if pattern:
            from mini_letta.trust.bounded_regex import BadPattern, compile_bounded

            try:
                matcher = compile_bounded(pattern)
            except BadPattern as error:
                raise ToolError(str(error)) from None
            except ImportError:
                raise ToolError("filter is not available here (google-re2 is not installed); "
                                "read without one.") from None
        from mini_letta.trust.redact import redact_text

        job.settle()
        text, dropped, held = job.take()
        # As a foreground command's output is (``builtins.masked``): a key that ``env`` printed is
        # masked before the model reads it, not only in the session file.
        text = redact_text(text)
        if matcher is not None:
            text = "".join(line for line in text.splitlines(keepends=True) if matcher.search(line.rstrip("\n")))
        notes = []
        if dropped:
            notes.append(f"[{dropped:,} bytes of older output were dropped: at most "
                         f"{SETTINGS.tools.background_buffer_bytes:,} are kept between reads; read more often]")
        room = max(0, max_chars - SETTINGS.tools.shell_note_chars)
        if len(text) > room:
            notes.append(f"[{len(text) - room:,} earlier characters of this output are not shown]")
            text = text[len(text) - room:]
        if held:
            notes.append(f"[{counted(held, 'byte')} of a line not finished yet: shown when it ends]")
        notes += [f"[{note}]" if not note.startswith("[") else note for note in job.take_notes()]
        code = job.code
        if code is None:
            notes.append(f"[{job.shell_id} is still running ({job.seconds():.0f} s); read again later, "
                         "or stop it with kill_bash]")
        else:
            notes.append(f"[{job.shell_id} has ended: {_exit_note(code).strip('[]')}]")
        if text and not text.endswith("\n"):
            text += "\n"
        body = text if text else ("(no new output)\n" if not pattern else "(no new output matches the filter)\n")
        return ToolOutcome(body + "\n".join(notes), is_error=code is not None and code != 0 and not job.killed)

    def kill(self, shell_id: str) -> ToolOutcome:
        """``kill_bash``: stop the command and everything it started."""
        job = self.job(shell_id)
        if job.code is not None and job.settled:
            return ToolOutcome(f"{job.shell_id} had already ended ({job.state()}); nothing to stop.")
        if job.code is not None:
            job.settle()
            notes = " ".join(job.take_notes())
            return ToolOutcome(f"{job.shell_id} had already ended ({job.state()}). {notes}".rstrip())
        job.killed = True
        survivors = job.stop()
        job.settle()
        fate = _survivors_note(survivors) if survivors else "it and every process it started were stopped"
        notes = " ".join(job.take_notes())
        return ToolOutcome(f"Killed {job.shell_id} ({job.command}): {fate}. {notes}".rstrip(), is_error=bool(survivors))

    def close(self) -> int:
        """End every command (the session ends); returns how many were still running."""
        stopped = 0
        for job in list(self._jobs.values()):
            try:
                if job.code is None:
                    job.stop()
                    stopped += 1
                job.settle()
            except Exception:  # one that cannot be stopped must not keep the others running
                continue
        return stopped

    def forget(self) -> None:
        """No longer ended by ``close_all``: this session's commands are closed and over (a
        subagent's, when it ends), so the process does not keep every child's jobs to its end."""
        if self in _ALL:
            _ALL.remove(self)


_ALL: list[BackgroundJobs] = []


_AT_EXIT: list[bool] = []  # close_all registered with atexit (once)


def _remember(jobs: BackgroundJobs) -> None:
    if not _AT_EXIT:
        atexit.register(close_all)
        _AT_EXIT.append(True)
    _ALL.append(jobs)


def close_all() -> int:
    """End every background command of this process (the session ends); how many were running."""
    return sum(jobs.close() for jobs in list(_ALL))


def tools(jobs: BackgroundJobs) -> list[tuple[str, Callable[[dict[str, Any], int], ToolOutcome]]]:
    """(name, handler(arguments, max_chars)) of ``bash_output`` and ``kill_bash``."""
    return [("bash_output", lambda args, limit: jobs.output(args["bash_id"], limit, args.get("filter"))),
            ("kill_bash", lambda args, limit: jobs.kill(args["shell_id"]))]
