"""Plan mode's way out: the ``exit_plan_mode`` tool (Claude Code's ExitPlanMode, with ``plan`` in Markdown).

The tool is offered while the session is in plan mode (``permission_mode.py``), and only then: its
schema is not paid for in the other modes, and a model that sees it knows it is planning. The plan
goes to a :class:`PlanReviewer`: the REPL shows it and asks (approve with auto-accepted edits,
approve with edits asked, or keep planning with feedback); ``-p`` has no one to ask, so its reviewer
keeps the plan as the run's result and ends the turn (:class:`KeepPlan`). An approval changes the
mode, which takes the tool away again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from mini_letta.messages import ToolSpec
from mini_letta.permission_mode import ACCEPT_EDITS, DEFAULT, LABELS, PermissionMode
from mini_letta.resources import tool_spec
from mini_letta.toolbox import ToolOutcome

TOOL = "exit_plan_mode"
# The turn's ending when -p stopped at the plan (TurnResult.stopped).
STOPPED_AT_PLAN = "plan"


@dataclass(frozen=True)
class PlanAnswer:
    """The user's answer: ``mode`` to go on in (``acceptEdits`` or ``default``), or None to keep planning;
    ``final``: the plan is the run's result and the turn ends here (``-p``)."""

    mode: str | None
    feedback: str = ""
    final: bool = False


class PlanReviewer(Protocol):
    def review_plan(self, plan: str) -> PlanAnswer: ...


class KeepPlan:
    """``-p``: nobody can approve, so the plan is the result: kept here, and the turn ends."""

    def __init__(self) -> None:
        self.plan: str | None = None

    def review_plan(self, plan: str) -> PlanAnswer:
        self.plan = plan
        return PlanAnswer(None, final=True)


def approved_text(mode: str) -> str:
    edits = ("file edits in the workspace run without asking" if mode == ACCEPT_EDITS
             else "each edit and command is asked about as usual")
    return (f"The user approved your plan. mini-letta left plan mode ({LABELS[mode]}: {edits}). "
            "Carry out the plan now.")


def rejected_text(feedback: str) -> str:
    said = f" Their feedback: {feedback}" if feedback.strip() else " They gave no reason; ask what they want changed."
    return ("The user did not approve the plan, so mini-letta stays in plan mode (read-only tools only)."
            + said + " Revise the plan and call exit_plan_mode again.")


class PlanTool:
    """``exit_plan_mode`` in ``toolbox`` while ``mode`` is plan, its answers from ``reviewer``."""

    def __init__(self, mode: PermissionMode, toolbox: Any, reviewer: PlanReviewer):
        self.mode, self.toolbox, self.reviewer = mode, toolbox, reviewer
        data = tool_spec(TOOL)
        self.spec = ToolSpec(data["name"], data["description"], data["parameters"])
        mode.listeners.append(self._offer)
        self._offer(mode.name)

    def _offer(self, name: str) -> None:
        if self.mode.planning and TOOL not in self.toolbox:
            self.toolbox.register(self.spec, self.handle, read_only=True)
        elif not self.mode.planning and TOOL in self.toolbox:
            self.toolbox.unregister(TOOL)

    def handle(self, arguments: dict[str, Any]) -> ToolOutcome:
        plan = arguments["plan"]
        if not self.mode.planning:
            return ToolOutcome("mini-letta is not in plan mode any more; go on with the work.", is_error=True)
        if not plan.strip():
            return ToolOutcome("The plan is empty; write what you will change, then call exit_plan_mode again.",
                               is_error=True)
        answer = self.reviewer.review_plan(plan)
        if answer.final:
            self.toolbox.halt(STOPPED_AT_PLAN)
            return ToolOutcome("The plan was handed to the user (print mode cannot approve it); stop here.")
        if answer.mode is None:
            return ToolOutcome(rejected_text(answer.feedback))
        self.mode.set(answer.mode if answer.mode in (ACCEPT_EDITS, DEFAULT) else DEFAULT)
        return ToolOutcome(approved_text(self.mode.name))
