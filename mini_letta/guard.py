"""How a command ends when it fails in a way the user can act on: one line on stderr and an exit code.

Shared by :mod:`mini_letta.cli` (the bare REPL start) and :mod:`mini_letta.cli_app` (the Typer
commands), so neither has to import the other.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable, NoReturn

if TYPE_CHECKING:
    from mini_letta.notices import Notices


def run_guarded(command: Callable[[], object], notices: Notices | None = None) -> None:
    """Run a command; an error the user can act on (or Ctrl-C) ends in one line on stderr, after
    what the run's ``notices`` hold."""
    from mini_letta.errors import MiniLettaError

    try:
        command()
    except MiniLettaError as error:
        fail(str(error), notices=notices)
    except KeyboardInterrupt:
        fail("interrupted", 130, notices)


def fail(message: str, code: int = 1, notices: Notices | None = None) -> NoReturn:
    from mini_letta.trust.terminal_text import visible

    # Notices queued before the failure often explain it (e.g. a damaged session behind "no session").
    # Both quote what the user, a server or a file said: controls are shown, never obeyed.
    for notice in notices.take() if notices is not None else ():
        print(f"mini-letta: {visible(notice)}", file=sys.stderr)
    print(f"mini-letta: {visible(message)}", file=sys.stderr)
    raise SystemExit(code)
