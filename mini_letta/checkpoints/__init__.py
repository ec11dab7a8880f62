"""Checkpoints: what the agent changed, kept so that /rewind and /undo can put it back.

``recorder`` records (a marker per user message, file contents before changes, git snapshots
around commands and MCP tools not marked read-only), ``store`` keeps it next to the session, ``restore`` plans and applies a restore,
``rewind`` puts the conversation back, ``retention`` deletes what old sessions kept. ``create``
makes the recorder an agent is built with.
"""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import Callable

from mini_letta.checkpoints import retention
from mini_letta.checkpoints.recorder import Checkpoints
from mini_letta.toolbox.workspace import Workspace


def create(workspace: Path, session_path: Callable[[], Path | None], notify: Callable[[str], None]) -> Checkpoints:
    """The recorder for an agent in ``workspace``: it keeps checkpoints in the folder of the session
    ``session_path()`` names when it records (a new one after /clear or /resume); the toolbox puts
    its ``watch`` around every approved write, edit, command and MCP tool call (the old sessions'
    checkpoints are pruned meanwhile, in the background)."""
    checkpoints = Checkpoints(workspace, Workspace(workspace).resolve, session_path, notify)
    current = session_path()
    if current is not None:
        # In a thread of its own: it reads the whole sessions folder and may delete large folders.
        retention.prune_in_background(Path(current).parent, days=retention.keep_days(notify), current=current)
    # A one-prompt run (-p) ends before a next message would keep what its changes left.
    atexit.register(checkpoints.settle)
    return checkpoints


__all__ = ["Checkpoints", "create"]
