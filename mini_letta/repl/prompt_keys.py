"""The prompt's own keys: Alt-Enter for a new line, Esc Esc (empty prompt) for /rewind, Ctrl-O to expand,
Shift+Tab to cycle the permission mode."""

from __future__ import annotations

from typing import Callable

from prompt_toolkit.application import get_app
from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings

from mini_letta.repl.above_prompt import print_above


def input_bindings(on_expand: Callable[[], None] | None = None, rewind: bool = False,
                   on_cycle_mode: Callable[[], None] | None = None) -> KeyBindings:
    bindings = KeyBindings()

    if rewind:
        # No timing of ours: prompt_toolkit holds a trailing Esc 0.5 s for the rest of a sequence,
        # then the first Esc 1 s for the second, so both Escs in one read or about a second apart
        # open it (tests/test_turn_keys_pty.py); Esc Esc followed by text is two Escs and the text.
        @bindings.add("escape", "escape", filter=Condition(lambda: not get_app().current_buffer.text))
        def _rewind(event):
            event.app.exit(result="/rewind")

    @bindings.add("escape", "enter")
    def _newline(event):
        event.current_buffer.insert_text("\n")

    if on_expand is not None:
        @bindings.add("c-o")
        def _expand(event):
            # Above the prompt, which keeps what was typed so far.
            print_above(on_expand)

    if on_cycle_mode is not None:
        @bindings.add("s-tab")
        def _cycle_mode(event):
            on_cycle_mode()  # normal → auto-accept edits → plan; the status bar shows it
            event.app.invalidate()

    return bindings
