"""A subagent's progress in one line of words, for the REPL's collapsing line and its summary."""

from __future__ import annotations

from mini_letta.cost import dollars
from mini_letta.subagents.runner import DONE, FAILED, INTERRUPTED, RUNNING, STEP_LIMIT, SubagentRun
from mini_letta.trust.terminal_text import one_line
from mini_letta.wording import counted

ENDINGS = {DONE: "done", STEP_LIMIT: "stopped at its step limit", INTERRUPTED: "interrupted", FAILED: "failed"}


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
