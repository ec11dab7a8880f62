"""Approvals through ``session/request_permission``, with the REPL's choices: once, "always" for
the scopes the permissions offer (this command prefix, this file, any file), no.

The session's permission mode decides before anyone is asked (the toolbox asks it): plan mode
refuses what is not read-only, auto-accept edits lets the workspace's file edits run unasked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp import update_tool_call
from acp.schema import PermissionOption

from mini_letta.trust.terminal_text import visible

ONCE, NO = "allow_once", "reject_once"


class Cancelled(Exception):
    """The client answered a question with "cancelled": the prompt was cancelled."""


class ClientApprover:
    """``approver(call, summary, protected=None)`` for the toolbox. ``ask(tool_call, options)`` sends
    the question and returns the chosen option id (raising :class:`Cancelled`); ``details(call)``
    is what the editor shows of the call; ``permissions()`` the toolbox's (read when asked, as the
    agent is built after its approver)."""

    def __init__(self, ask: Callable[[Any, list[PermissionOption]], str], details: Callable[[Any], dict],
                 permissions: Callable[[], Any]):
        self.ask = ask
        self.details = details
        self.permissions = permissions

    def __call__(self, call, summary: str, protected: str | None = None) -> bool:
        permissions = self.permissions()
        scopes = [] if protected else permissions.scopes(call)
        options = [PermissionOption(option_id=ONCE, name="Yes", kind="allow_once")]
        options += [PermissionOption(option_id=f"always:{scope.key}", kind="allow_always",
                                     name=f"Always for {visible(scope.label)}, this session") for scope in scopes]
        options.append(PermissionOption(option_id=NO, name="No", kind="reject_once"))
        title = f"Allow mini-letta to {visible(summary)}?"
        if protected:
            title += f" (asked every time: {visible(protected)})"
        fields = {key: value for key, value in self.details(call).items() if key != "title"}
        try:
            chosen = self.ask(update_tool_call(call.id, title=title, status="pending", **fields), options)
        except Cancelled:
            raise KeyboardInterrupt from None  # the turn ends as at Ctrl-C, its history valid
        for scope in scopes:
            if chosen == f"always:{scope.key}":
                permissions.remember(scope)
                return True
        return chosen == ONCE
