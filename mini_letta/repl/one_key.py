"""Questions answered with one key and no Enter (approvals): ``y``, ``n``, ``a``..., Esc for no.

Any other key is ignored, so a stray keystroke decides nothing, and keys typed before the question
appeared are forgotten; Ctrl-C and Ctrl-D raise
``KeyboardInterrupt`` (the turn is interrupted, as everywhere else). The chosen answer is written
after the question, so the scrollback says what was decided.
"""

from __future__ import annotations

import sys
import termios

from prompt_toolkit.application import Application
from prompt_toolkit.input.typeahead import clear_typeahead
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

# A lone Esc is told from the start of an arrow key's sequence by this pause (prompt_toolkit's
# default is half a second, which makes "Esc = no" feel ignored).
ESCAPE_PAUSE_SECONDS = 0.05


def ask_one_key(message: str, answers: dict[str, str], on_escape: str) -> str:
    """The key pressed, among ``answers`` (lower-case letters, upper case works too, digits, or key
    names such as ``enter``), each mapped to the word shown after the question; Esc answers ``on_escape``."""
    shown = [message]
    bindings = KeyBindings()

    # An application of our own rather than a prompt: a prompt's own keys (Enter accepts an empty
    # answer) would decide before a real answer is pressed.
    @bindings.add("<any>")
    def _ignore(event):
        pass

    def choose(key: str):
        def handler(event):
            shown.append(answers[key])
            event.app.exit(result=key)
        return handler

    for key in answers:
        bindings.add(key)(choose(key))
        if len(key) == 1 and key.isalpha():
            bindings.add(key.upper())(choose(key))
    bindings.add("escape", eager=True)(choose(on_escape))

    @bindings.add("c-c")
    @bindings.add("c-d")
    def _interrupt(event):
        event.app.exit(exception=KeyboardInterrupt())

    control = FormattedTextControl(lambda: "".join(shown), show_cursor=True)
    application: Application[str] = Application(Layout(Window(control, wrap_lines=True, dont_extend_height=True)),
                                                key_bindings=bindings)
    application.ttimeoutlen = ESCAPE_PAUSE_SECONDS
    _forget_keys_typed_ahead(application)
    return application.run()


def _forget_keys_typed_ahead(application: Application) -> None:
    """Keys pressed before the question was shown were meant for something else (the "n" of the
    next message typed ahead): they must not answer it."""
    clear_typeahead(application.input)
    try:
        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (OSError, ValueError, termios.error):
        pass  # not a terminal: nothing typed ahead to forget
