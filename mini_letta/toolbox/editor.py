"""An editor that holds the files the tools read and write, and may run their commands: the seam an
editor's client (``acp/``) plugs into the toolbox, so an unsaved buffer is what read_file reads and
what write_file changes, and a command the user approved runs in the editor's terminal.

Each method may decline (None, False): the toolbox then reads, writes or runs as without an editor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from mini_letta.toolbox.outcome import ToolOutcome


class Editor(Protocol):
    def read_text(self, path: Path) -> str | None:
        """The text the editor has for ``path`` (its unsaved buffer included); None: read the disk."""

    def write_text(self, path: Path, text: str) -> bool:
        """Write ``text`` to ``path`` through the editor; False: the toolbox writes the file itself."""

    def run_command(self, command: str, cwd: Path, timeout: float, max_chars: int) -> ToolOutcome | None:
        """Run ``command`` (not sandboxed) in the editor's terminal; None: the toolbox runs it. An
        interrupt raises ``ToolInterrupted`` with what it printed, as ``shell.run_bash`` does."""
