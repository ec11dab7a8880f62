"""The REPL's input history, with secrets masked before they reach the file."""

from __future__ import annotations

from prompt_toolkit.history import FileHistory

from mini_letta.redact import redact_text


class RedactingFileHistory(FileHistory):
    """A pasted API key stays usable in this session's memory but is never written in clear."""

    def store_string(self, string: str) -> None:
        super().store_string(redact_text(string))
