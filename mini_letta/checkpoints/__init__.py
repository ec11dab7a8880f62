"""Checkpoints: what the agent changed, kept so that /rewind and /undo can put it back.

``recorder`` records (a marker per user message, file contents before changes, git snapshots
around commands and MCP tools not marked read-only), ``store`` keeps it next to the session, ``restore`` plans and applies a restore,
``rewind`` puts the conversation back, ``retention`` deletes what old sessions kept. ``attach``
wires them into an agent.
"""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import Any

from mini_letta.checkpoints import retention
from mini_letta.checkpoints.recorder import Checkpoints


def attach(agent: Any, notify: Any) -> Checkpoints:
    """Record checkpoints for ``agent``: in its current session's folder (a new one after /clear or
    /resume), around every approved write, edit, command and MCP tool call of its toolbox (the old
    sessions' checkpoints are pruned meanwhile, in the background)."""
    checkpoints = Checkpoints(agent.workspace, agent.toolbox.ws.resolve,
                              lambda: getattr(agent.session, "path", None), notify)
    agent.toolbox.watch_changes = checkpoints.watch
    agent.checkpoints = checkpoints
    session_path = getattr(agent.session, "path", None)
    if session_path is not None:
        # In a thread of its own: it reads the whole sessions folder and may delete large folders.
        retention.prune_in_background(Path(session_path).parent, days=retention.keep_days(), current=session_path)
    # A one-prompt run (-p) ends before a next message would keep what its changes left.
    atexit.register(checkpoints.settle)
    return checkpoints


__all__ = ["Checkpoints", "attach"]
