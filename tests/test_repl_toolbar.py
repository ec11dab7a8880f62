"""The status bar at every level: the text, and a style prompt_toolkit can draw."""

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from prompt_toolkit.styles import Style

from mini_letta.app import Options
from mini_letta.context import ContextState
from mini_letta.repl.app import Repl


@pytest.mark.parametrize("level, percent, colour", [
    ("ok", 88, "ansigreen"), ("warning", 15, "ansiyellow"), ("critical", 7, "ansired"), ("blocked", 0, "ansired"),
])
def test_toolbar_shows_percent_left_model_and_tokens_coloured_by_level(level, percent, colour):
    state = ContextState(tokens=150_000, window=200_000, threshold=183_616, percent_left=percent, level=level)
    agent = SimpleNamespace(context_state=lambda: state, budget=SimpleNamespace(auto_compact=level != "blocked"),
                            compactor=SimpleNamespace(breaker_open=level == "critical"),
                            provider=SimpleNamespace(name="anthropic", model="claude-sonnet-4-5"))
    repl = Repl(Options())
    future = Future()
    future.set_result(agent)
    repl._agent_future = future
    fragments = repl.toolbar()
    text = "".join(fragment[1] for fragment in fragments)
    assert text.startswith(f"{percent}% context left · anthropic:claude-sonnet-4-5 · 150k/200k tokens")
    assert ("auto-compact off" in text) == (level == "blocked")
    assert ("paused after 3 failures" in text) == (level == "critical")
    style = fragments[0][0]
    attrs = Style([]).get_attrs_for_style_str(style)
    assert attrs.color == colour
    assert attrs.bold == (level == "blocked")
