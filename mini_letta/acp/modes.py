"""The session modes an editor offers in its mode picker: the run's ``PermissionMode``
(``permission_mode.py``, the REPL's Shift+Tab), one per editor session.

- ``default`` (Ask): every write and every command outside the sandbox asks (or a rule allows it).
- ``acceptEdits``: write_file and edit_file in the workspace run unasked (a protected file still asks).
- ``plan`` (Read-only): only read-only tools run; the model ends with ``exit_plan_mode``, whose plan
  the editor's permission dialog approves (into auto-accept edits or ask) or sends back.
"""

from __future__ import annotations

from mini_letta.permission_mode import ACCEPT_EDITS, DEFAULT, PLAN, PermissionMode

NAMES = {DEFAULT: "Ask", ACCEPT_EDITS: "Auto-accept edits", PLAN: "Read-only (plan)"}
DESCRIPTIONS = {DEFAULT: "Ask before each file change and each command outside the sandbox.",
                ACCEPT_EDITS: "File edits in the workspace run without asking; commands still ask.",
                PLAN: "Only read-only tools run; mini-letta ends with a plan for you to approve."}


def state(mode: PermissionMode):
    from acp.schema import SessionMode, SessionModeState

    return SessionModeState(current_mode_id=mode.name, available_modes=[
        SessionMode(id=key, name=NAMES[key], description=DESCRIPTIONS[key]) for key in NAMES])


class PlanReview:
    """``planning.PlanReviewer`` through the editor's permission dialog: approve and auto-accept
    edits, approve and ask each edit, or keep planning."""

    def __init__(self, ask):
        self.ask = ask  # ask(tool_call, options) -> option id (raises approvals.Cancelled)

    def review_plan(self, plan: str):
        from acp import text_block, tool_content
        from acp.schema import PermissionOption, ToolCallUpdate

        from mini_letta.acp.approvals import Cancelled
        from mini_letta.planning import PlanAnswer

        options = [PermissionOption(option_id=ACCEPT_EDITS, name="Yes, and auto-accept edits", kind="allow_always"),
                   PermissionOption(option_id=DEFAULT, name="Yes, and approve each edit", kind="allow_once"),
                   PermissionOption(option_id="keep", name="No, keep planning", kind="reject_once")]
        call = ToolCallUpdate(tool_call_id="exit_plan_mode", title="Carry out this plan?", kind="switch_mode",
                              status="pending", content=[tool_content(text_block(plan))])
        try:
            chosen = self.ask(call, options)
        except Cancelled:
            raise KeyboardInterrupt from None
        return PlanAnswer(chosen if chosen in (ACCEPT_EDITS, DEFAULT) else None)
