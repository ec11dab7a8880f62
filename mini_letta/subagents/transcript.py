"""A subagent's transcript, kept in the parent's session file but never in the parent's context.

Every entry the child's session would write (its messages, its compactions, a learned window) is
written to the parent's file wrapped as ``{"type": "subagent", "run": ID, "entry": {...}}``,
redacted like every entry. ``load_session`` does not know that type, so a resumed session's
context holds only the ``task`` call and its report; :func:`read_transcripts` reads them back.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from mini_letta.sessions.store import SessionWriter

ENTRY_TYPE = "subagent"


class NestedWriter(SessionWriter):
    """The child's session writer: the parent's file, each entry wrapped with the run's id.
    ``lock`` is shared by every child of one parent: children side by side write at once."""

    def __init__(self, parent: SessionWriter, run_id: str, header: dict[str, Any], lock: threading.Lock):
        super().__init__(parent.path, None, {**header, "type": "header", "id": run_id,  # type: ignore[arg-type]
                                             "parent": parent.id})
        self.parent = parent
        self._lock = lock
        self._write(self.header)

    def _write(self, entry: dict[str, Any], durable: bool = True) -> None:
        with self._lock:
            self.parent._write({"type": ENTRY_TYPE, "run": self.id, "entry": entry}, durable)

    def end(self, summary: dict[str, Any]) -> None:
        """The run's figures at its end (status, steps, tokens, cost)."""
        self._write({"type": "end", **summary})

    def close(self) -> None:
        """The file is the parent's, and stays open."""


def read_transcripts(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Each run's entries in ``path``, by run id, in the order written."""
    runs: dict[str, list[dict[str, Any]]] = {}
    with open(path, encoding="utf-8", errors="replace") as file:
        for line in file:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and data.get("type") == ENTRY_TYPE and isinstance(data.get("entry"), dict):
                runs.setdefault(str(data.get("run")), []).append(data["entry"])
    return runs
