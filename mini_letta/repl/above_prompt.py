"""Printing above a running prompt without leaving raw mode.

prompt_toolkit's ``run_in_terminal`` puts the terminal in cooked mode while its function runs, so a
key pressed in those milliseconds is read by the terminal driver instead of the prompt: Ctrl-D is
taken as end-of-file and lost, Ctrl-C becomes a signal, letters are echoed. A notice printed the
moment the user presses a key needs none of that: it only writes. ``print_above`` erases the
prompt, runs ``write`` and draws the prompt again, with the input left as it was (keys pressed
meanwhile wait in the input and reach the prompt after). It chains with ``run_in_terminal`` calls
as those chain with each other, using the same fields of the application they use.
"""

from __future__ import annotations

from asyncio import Future, ensure_future
from typing import Callable


def print_above(write: Callable[[], None]) -> Future:
    """Run ``write`` (a quick function that prints) above the running prompt; the prompt is drawn
    again after it. Without a running prompt, ``write`` runs at once."""
    from prompt_toolkit.application import get_app_or_none

    async def run() -> None:
        app = get_app_or_none()
        if app is None or not app.is_running:
            write()
            return
        previous, done = app._running_in_terminal_f, Future()
        app._running_in_terminal_f = done
        try:
            if previous is not None:
                await previous
            if app.output.responds_to_cpr:
                await app.renderer.wait_for_cpr_responses()
            app.renderer.erase()
            app._running_in_terminal = True
            try:
                write()
            finally:
                app._running_in_terminal = False
                app.renderer.reset()
                app._request_absolute_cursor_position()
                app._redraw()
        finally:
            if not done.done():
                done.set_result(None)

    return ensure_future(run())
