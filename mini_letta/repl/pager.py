"""The pager for Ctrl-O and /expand: ``$PAGER``, else ``less``, else ``more``.

Rich's own pager goes through ``pydoc.pipepager``, which starts the pager with our environment as it
is. ``less`` without ``-R`` shows Rich's colour codes as ``ESC[36m`` text, so, as git does, ``LESS``
is set to ``FRX`` when it is unset or empty: colours as colours (``R``), an output shorter than the
screen printed without a pager to quit (``F``), and what was read left on the screen (``X``). The
text paged is ours: every character that came from a tool went through ``terminal_text.visible``,
so the only escape codes it holds are the colours Rich added.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from rich.pager import Pager


def pager_command() -> str | None:
    """The command that pages: ``$PAGER`` as the user wrote it, else less or more if installed."""
    chosen = os.environ.get("PAGER", "").strip()
    if chosen:
        return chosen
    return next((name for name in ("less", "more") if shutil.which(name)), None)


class SystemPager(Pager):
    """A Rich pager that starts the user's pager with ``LESS`` defaulting to ``FRX``."""

    def show(self, content: str) -> None:
        command = pager_command()
        if command is None or os.environ.get("TERM") == "dumb":
            sys.stdout.write(content)
            sys.stdout.flush()
            return
        environment = dict(os.environ)
        if not environment.get("LESS"):
            environment["LESS"] = "FRX"
        process = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=environment,
                                   encoding="utf-8", errors="backslashreplace")
        try:
            with process.stdin as pipe:
                pipe.write(content)
        except (OSError, KeyboardInterrupt):
            pass  # the reader quit before the end (a broken pipe), or Ctrl-C: the pager has the terminal
        while True:
            try:
                process.wait()
                return
            except KeyboardInterrupt:
                # As pydoc does: less ignores Ctrl-C, and leaving it running would leave the
                # terminal in its raw mode.
                continue
