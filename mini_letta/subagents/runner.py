"""Running ``task`` calls: a subagent per call, and only its report back as the call's result.

The child itself is built elsewhere (by the same builder as the parent, with a fresh
conversation) and reached through :class:`Child`; this module decides what it is asked, what
comes back, and which calls may run at the same time: read-only types side by side, at most
``SETTINGS.subagents.max_parallel``, any other one alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from mini_letta.messages import new_id
from mini_letta.settings import SETTINGS
from mini_letta.subagents.catalog import Catalog
from mini_letta.subagents.definitions import AgentType
from mini_letta.subagents.report import cap_report
from mini_letta.toolbox.outcome import ToolError, ToolInterrupted, ToolOutcome
from mini_letta.wording import counted

NAMES_IN_ERROR = 50
WAIT_SECONDS = 0.1  # how often the waiting thread looks up, so Ctrl-C reaches it

DONE, STEP_LIMIT, INTERRUPTED, FAILED, RUNNING = "done", "step_limit", "interrupted", "failed", "running"


@dataclass(frozen=True)
class TaskRequest:
    description: str
    prompt: str
    agent: AgentType
    model: str | None = None  # the call's own choice, over the agent's

    @property
    def max_steps(self) -> int:
        return self.agent.max_turns or SETTINGS.subagents.max_steps


@dataclass
class SubagentRun:
    """One subagent's figures, updated while it works: the progress line, ``-p``'s JSON, /cost."""

    agent: str
    description: str
    model: str = ""
    window: int = 0
    id: str = field(default_factory=lambda: new_id("sub_"))
    status: str = RUNNING
    steps: int = 0
    max_steps: int = SETTINGS.subagents.max_steps
    tokens: int = 0  # input and output of all its model calls, its summaries included
    context_tokens: int = 0
    compactions: int = 0
    cost_usd: float | None = None
    error: str = ""

    @property
    def percent_left(self) -> int:
        if not self.window:
            return 100
        return max(0, min(100, round(100 * (1 - self.context_tokens / self.window))))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["percent_left"] = self.percent_left
        return data


@dataclass(frozen=True)
class ChildEnd:
    """How a child's work ended: ``status`` DONE, STEP_LIMIT or INTERRUPTED, and its last words."""

    status: str
    report: str


class Child(Protocol):
    def work(self, prompt: str, stop: threading.Event) -> ChildEnd:
        """Run to the end of the task, updating the run's figures; stop soon after ``stop`` is set
        (raising KeyboardInterrupt). A failure of the provider raises: its message is what the
        parent reads."""

    def finished(self) -> None:
        """The run's status is final (done, failed, interrupted): record it."""


ChildFactory = Callable[[TaskRequest, SubagentRun], Child]


def read_task_request(arguments: dict[str, Any], catalog: Catalog) -> TaskRequest:
    name = arguments["subagent_type"].strip()
    agent = catalog.get(name)
    if agent is None:
        names = catalog.names()
        shown = ", ".join(names[:NAMES_IN_ERROR]) + (f" and {len(names) - NAMES_IN_ERROR} more"
                                                      if len(names) > NAMES_IN_ERROR else "")
        raise ToolError(f"There is no agent named {name!r}; subagent_type is one of: {shown}.")
    if not arguments["prompt"].strip():
        raise ToolError("The prompt is empty: give the subagent the whole brief.")
    model = (arguments.get("model") or "").strip() or None
    return TaskRequest(arguments["description"].strip(), arguments["prompt"], agent, model)


def result_text(run: SubagentRun, report: str, room: int, count: Callable[[str], int]) -> ToolOutcome:
    """What the parent reads: the report cut to ``room`` tokens, or why there is none."""
    who = f"The subagent {run.agent} ({run.description})"
    if run.status == FAILED:
        return ToolOutcome(f"{who} failed after {counted(run.steps, 'step')}: {run.error} Nothing of this conversation "
                           "was lost; try again, or do the task another way.", is_error=True)
    if run.status == STEP_LIMIT:
        head = f"[{who} stopped at its step limit ({counted(run.max_steps, 'step')}) before it finished."
        head += " Its last words:]\n" if report.strip() else " It wrote no report.]"
        return ToolOutcome(head + cap_report(report, max(0, room - count(head)), count))
    if not report.strip():
        return ToolOutcome(f"{who} finished without a report.")
    return ToolOutcome(cap_report(report, room, count))


class Runner:
    """Starts children and keeps their runs; each of ``listeners`` is told of every change (the
    REPL's progress line), from the thread of the child that changed."""

    def __init__(self, catalog: Catalog, start: ChildFactory,
                 listeners: list[Callable[[SubagentRun], None]] | None = None):
        self.catalog = catalog
        self.start = start
        self.listeners: list[Callable[[SubagentRun], None]] = list(listeners or [])
        self.runs: list[SubagentRun] = []

    def on_progress(self, run: SubagentRun) -> None:
        for listener in self.listeners:
            listener(run)

    def run(self, request: TaskRequest) -> tuple[SubagentRun, str]:
        """One subagent, on this thread (so Ctrl-C reaches its loop as it reaches the parent's).
        An interrupt ends it and is raised again as :class:`ToolInterrupted` with what it did."""
        run, child = self._begin(request)
        try:
            end = child.work(request.prompt, threading.Event())
        except KeyboardInterrupt:
            run.status = INTERRUPTED
            self.on_progress(run)
            child.finished()
            raise ToolInterrupted(ToolOutcome(_interrupted_text(run))) from None
        except Exception as error:  # noqa: BLE001 - a failing child is the parent's tool result
            self._failed(run, error)
            child.finished()
            return run, ""
        self._finish(run, end)
        child.finished()
        return run, end.report

    def start_all(self, requests: list[TaskRequest]) -> Batch:
        """Start ``requests`` side by side (the caller checked :func:`parallel`); each result is
        waited for with ``Batch.result``. Ctrl-C while waiting stops them all."""
        return Batch(self, requests)

    def _begin(self, request: TaskRequest) -> tuple[SubagentRun, Child]:
        run = SubagentRun(request.agent.name, request.description, max_steps=request.max_steps)
        self.runs.append(run)
        try:
            child: Child = self.start(request, run)
        except Exception as error:  # noqa: BLE001 - no key for its model, a session that failed
            child = _Unbuilt(error)
        self.on_progress(run)
        return run, child

    def _collect(self, run: SubagentRun, future: Future) -> tuple[SubagentRun, str]:
        if future.cancelled():
            run.status = INTERRUPTED
            return run, ""
        error = future.exception()
        if isinstance(error, KeyboardInterrupt):
            run.status = INTERRUPTED
            return run, ""
        if error is not None:
            return self._failed(run, error), ""
        end = future.result()
        return self._finish(run, end), end.report

    def _finish(self, run: SubagentRun, end: ChildEnd) -> SubagentRun:
        run.status = end.status
        self.on_progress(run)
        return run

    def _failed(self, run: SubagentRun, error: BaseException) -> SubagentRun:
        run.status = FAILED
        text = str(error).strip() or type(error).__name__
        run.error = text if text.endswith((".", "!", "?")) else text + "."
        self.on_progress(run)
        return run


class _Unbuilt:
    """A child that could not be built: its work is the error, reported as the run's failure."""

    def __init__(self, error: Exception):
        self.error = error

    def work(self, prompt: str, stop: threading.Event) -> ChildEnd:
        raise self.error

    def finished(self) -> None:
        pass


def parallel(requests: list[TaskRequest]) -> bool:
    """Whether these calls of one reply may run side by side: two or more, all read-only."""
    return len(requests) > 1 and all(request.agent.read_only for request in requests)


class Batch:
    """Children running side by side in threads. A thread cannot be interrupted, so Ctrl-C in the
    waiting thread sets ``stop``, which each child honours at its next step or streamed chunk."""

    def __init__(self, runner: Runner, requests: list[TaskRequest]):
        self.runner = runner
        self.stop = threading.Event()
        self.begun = [runner._begin(request) for request in requests]
        self.pool = ThreadPoolExecutor(max_workers=SETTINGS.subagents.max_parallel, thread_name_prefix="subagent")
        self.futures = [self.pool.submit(child.work, request.prompt, self.stop)
                        for request, (_, child) in zip(requests, self.begun)]
        self.pool.shutdown(wait=False)
        self.results: dict[int, tuple[SubagentRun, str]] = {}

    def result(self, index: int) -> tuple[SubagentRun, str]:
        if index not in self.results:
            run, future = self.begun[index][0], self.futures[index]
            try:
                while not future.done():
                    wait([future], timeout=WAIT_SECONDS)
            except KeyboardInterrupt:
                self.interrupt()
                raise ToolInterrupted(ToolOutcome("\n".join(_interrupted_text(r) for r, _ in self.begun))) from None
            self.results[index] = self.runner._collect(run, future)
            self.begun[index][1].finished()
        return self.results[index]

    def interrupt(self) -> None:
        """Stop every child and wait for them: none goes on working after the turn ended."""
        self.stop.set()
        for future in self.futures:
            future.cancel()
        wait(self.futures)
        for index, (run, child) in enumerate(self.begun):
            if index not in self.results:
                run.status = INTERRUPTED
                self.runner.on_progress(run)
                child.finished()


def _interrupted_text(run: SubagentRun) -> str:
    return f"The subagent {run.agent} ({run.description}) was stopped after {counted(run.steps, 'step')}."
