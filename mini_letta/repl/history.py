"""The REPL's input history, with secrets masked before they reach the file, readable only by you."""

from __future__ import annotations

import os

from prompt_toolkit.history import FileHistory

from mini_letta.trust.redact import redact_text


class RedactingFileHistory(FileHistory):
    """A pasted API key stays usable in this session's memory but is never written in clear."""

    def __init__(self, filename: str) -> None:
        # prompt_toolkit creates the file with the default umask (0644): everything typed would be
        # readable by other users.
        os.close(os.open(filename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        os.chmod(filename, 0o600)
        super().__init__(filename)

    def store_string(self, string: str) -> None:
        super().store_string(redact_text(string))
