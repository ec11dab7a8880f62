"""Approvers decide whether a call that changes something (write_file, edit_file, bash) may run.

An approver is ``approver(call: ToolCall, summary: str) -> bool``; ``summary`` is a one-line
description such as ``write 120 lines to src/app.py``. An approver object with a ``denial_message``
attribute supplies the text the model reads when it says no.
"""

from __future__ import annotations

from collections.abc import Callable

from mini_letta.messages import ToolCall

Approver = Callable[[ToolCall, str], bool]


def approve_all(call: ToolCall, summary: str) -> bool:
    """--yolo: everything runs without asking."""
    return True


class deny_with:  # noqa: N801 - used like a function: deny_with("...")
    """An approver that refuses every call, telling the model ``message`` (print mode without --yolo)."""

    def __init__(self, message: str):
        self.denial_message = message

    def __call__(self, call: ToolCall, summary: str) -> bool:
        return False


def denial_text(approver: Approver | None, call: ToolCall, summary: str) -> str:
    message = getattr(approver, "denial_message", None)
    if message:
        return message
    return (f"The user declined this {call.name} call ({summary}). Do not retry it unchanged; "
            "change your approach or ask the user what they want.")
