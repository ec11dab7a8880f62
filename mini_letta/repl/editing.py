"""The user's edit of a text: ``$VISUAL`` / ``$EDITOR`` on a temporary file, else one input line."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path


def edit_text(initial: str) -> str | None:
    """The edited text, or None when the user cancelled the input line."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        from prompt_toolkit import PromptSession

        from mini_letta.repl.prompt_keys import input_bindings

        try:
            return PromptSession().prompt("new value (Alt-Enter for a new line): ", default=initial,
                                          multiline=False, key_bindings=input_bindings())
        except (KeyboardInterrupt, EOFError):
            return None
    with tempfile.NamedTemporaryFile("w+", suffix=".md", delete=False) as handle:
        handle.write(initial)
        path = handle.name
    try:
        subprocess.run(f'{editor} "{path}"', shell=True, check=False)
        return Path(path).read_text(encoding="utf-8")
    finally:
        os.unlink(path)
