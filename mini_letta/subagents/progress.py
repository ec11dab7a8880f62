"""A subagent's progress in one line of words, for the REPL's collapsing line and its summary."""

from __future__ import annotations

from mini_letta.cost import dollars
from mini_letta.subagents.runner import DONE, FAILED, INTERRUPTED, RUNNING, STEP_LIMIT, SubagentRun
from mini_letta.trust.terminal_text import one_line
from mini_letta.wording import counted

ENDINGS = {DONE: "done", STEP_LIMIT: "stopped at its step limit", INTERRUPTED: "interrupted", FAILED: "failed"}
# In the line of several subagents, each description is cut to this many characters.
SHORT_DESCRIPTION = 24


def progress_line(run: SubagentRun) -> str:
    """``explore · find the parser · 4 steps · 12,345 tokens · 63% context left``; once it ended,
    how, and its cost when known."""
    parts = [run.agent, one_line(run.description) or "(no description)", counted(run.steps, "step"),
             counted(run.tokens, "token")]
    if run.status == RUNNING:
        parts.append(f"{run.percent_left}% context left")
    else:
        parts.append(ENDINGS.get(run.status, run.status) + (f": {one_line(run.error)}" if run.error else ""))
        if run.compactions:
            parts.append(counted(run.compactions, "compaction"))
        if run.cost_usd is not None:
            parts.append(dollars(run.cost_usd))
    return " · ".join(parts)


def footer_line(runs: list[SubagentRun]) -> str:
    """The footer while the subagents of one reply work: one subagent's :func:`progress_line`, or
    every one of several in one line, each with its state, so none is hidden behind the one that
    moved last: ``3 subagents: explore (audit a.py) 4 steps, 63% left · explore (audit b.py) done · …``."""
    if len(runs) == 1:
        return progress_line(runs[0])
    return f"{len(runs)} subagents: " + " · ".join(_state_in_short(run) for run in runs)


def _state_in_short(run: SubagentRun) -> str:
    description = one_line(run.description) or "(no description)"
    if len(description) > SHORT_DESCRIPTION:
        description = description[:SHORT_DESCRIPTION - 1] + "…"
    state = (f"{counted(run.steps, 'step')}, {run.percent_left}% left" if run.status == RUNNING
             else ENDINGS.get(run.status, run.status))
    return f"{run.agent} ({description}) {state}"


def runs_line(runs: list[SubagentRun]) -> str | None:
    """What this session's subagents did, for /cost and /context: their tokens were spent in
    windows of their own, so none of them is in the parent's context."""
    if not runs:
        return None
    costs = [run.cost_usd for run in runs]
    cost = f", {dollars(sum(costs))}" if all(c is not None for c in costs) else ""
    return (f"{counted(len(runs), 'subagent run')}: {counted(sum(r.steps for r in runs), 'step')}, "
            f"{counted(sum(r.tokens for r in runs), 'token')} in their own windows (not in this context), "
            f"{counted(sum(r.compactions for r in runs), 'compaction')}{cost}.")
