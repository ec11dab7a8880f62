"""Completion at the prompt: slash commands at the start of the line, workspace paths after ``@``."""

from __future__ import annotations

import time
from pathlib import Path

from prompt_toolkit.completion import Completer, Completion

from mini_letta.repl.commands import listed
from mini_letta.trust.terminal_text import visible

PATHS_REFRESH_SECONDS = 5.0
MAX_PATH_COMPLETIONS = 50


class SlashCompleter(Completer):
    def __init__(self, workspace: Path | None = None, host=None):
        self.workspace = workspace or Path.cwd()
        self.host = host  # the REPL, whose agent's MCP servers may offer prompts as commands
        self._paths: list[str] = []
        self._listed_at = float("-inf")

    def get_completions(self, document, complete_event):
        text = document.text_before_cursor
        word = text.split()[-1] if text and not text[-1].isspace() else ""
        if word.startswith("@"):
            yield from self._path_completions(word)
            return
        if not text.startswith("/") or " " in text:
            return
        for entry in listed(self.host):
            if entry.name.startswith(text[1:]):
                yield Completion("/" + entry.name, start_position=-len(text), display_meta=entry.help)

    def _path_completions(self, word: str):
        from mini_letta.attachments import workspace_paths

        # Listed again at most every few seconds: files come and go while the session runs.
        if time.monotonic() - self._listed_at > PATHS_REFRESH_SECONDS:
            self._paths, self._listed_at = workspace_paths(self.workspace), time.monotonic()
        typed = word[1:]
        starts = [p for p in self._paths if p.startswith(typed)]
        inside = [p for p in self._paths if typed and typed in p and not p.startswith(typed)]
        for path in (starts + inside)[:MAX_PATH_COMPLETIONS]:
            yield Completion("@" + path, start_position=-len(word), display=visible(path))
