"""The status bar at every level: the text, and a style prompt_toolkit can draw."""

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from prompt_toolkit.styles import Style

from mini_letta.app import Options
from mini_letta.context import ContextState
from mini_letta.repl.app import Repl


def ready_agent(level="ok", percent=88, *, auto_compact=None, breaker_open=None, summary_ready=False, freed=0):
    state = ContextState(tokens=150_000, window=200_000, threshold=183_616, percent_left=percent, level=level)
    return SimpleNamespace(
        context_state=lambda: state,
        budget=SimpleNamespace(auto_compact=level != "blocked" if auto_compact is None else auto_compact,
                               window_label="200k"),
        compacting=SimpleNamespace(guards=SimpleNamespace(
            breaker_open=level == "critical" if breaker_open is None else breaker_open)),
        provider=SimpleNamespace(name="anthropic", model="claude-sonnet-4-5"),
        ahead=SimpleNamespace(ready=summary_ready),
        checkpoints=SimpleNamespace(freed=freed))


def repl_with(agent) -> Repl:
    repl = Repl(Options())
    future = Future()
    future.set_result(agent)
    repl.startup.future = future
    return repl


@pytest.mark.parametrize("level, percent, colour", [
    ("ok", 88, "ansigreen"), ("warning", 15, "ansiyellow"), ("critical", 7, "ansired"), ("blocked", 0, "ansired"),
])
def test_toolbar_shows_percent_left_model_and_tokens_coloured_by_level(level, percent, colour):
    repl = repl_with(ready_agent(level, percent))
    fragments = repl.status.toolbar(width=200)
    text = "".join(fragment[1] for fragment in fragments)
    # Blocked with automatic compaction off: every message is refused, and the bar says so.
    first = "context full — /compact" if level == "blocked" else f"{percent}% context left"
    assert text.startswith(f"{first} · anthropic:claude-sonnet-4-5 · 150k/200k tokens")
    assert ("auto-compact off" in text) == (level == "blocked")
    assert ("paused after 3 failures" in text) == (level == "critical")
    style = fragments[0][0]
    attrs = Style([]).get_attrs_for_style_str(style)
    assert attrs.color == colour
    assert attrs.bold == (level == "blocked")


@pytest.mark.parametrize("width, shown", [
    (120, "88% context left · anthropic:claude-sonnet-4-5 · 150k/200k tokens · auto-compact off"),
    (80, "88% context left · 150k/200k tokens · auto-compact off"),
    (60, "88% context left · 150k/200k tokens · auto-compact off"),
    (40, "88% context left · auto-compact off"),
])
def test_a_narrow_status_bar_drops_the_model_then_the_tokens_but_keeps_percent_and_auto_compact_off(width, shown):
    repl = repl_with(ready_agent(auto_compact=False))
    text = "".join(fragment[1] for fragment in repl.status.toolbar(width=width))
    assert text == shown
    assert len(text) < width


def test_toolbar_says_when_a_summary_prepared_ahead_of_time_is_ready():
    agent = ready_agent()
    repl = repl_with(agent)
    assert "summary ready" not in "".join(f[1] for f in repl.status.toolbar(width=200))
    agent.ahead.ready = True  # the background preparation finished: no key press, no refresh_status
    assert "summary ready" in "".join(f[1] for f in repl.status.toolbar(width=200))


def test_toolbar_shows_what_a_rewind_freed_and_drops_it_first_when_narrow():
    text = "".join(f[1] for f in repl_with(ready_agent(freed=12_300)).status.toolbar(width=200))
    assert text.endswith("rewind freed 12.3k")
    narrow = "".join(f[1] for f in repl_with(ready_agent(freed=12_300)).status.toolbar(width=75))
    assert "rewind freed" not in narrow and "88% context left" in narrow


def test_blocked_with_automatic_compaction_on_still_shows_the_percent_left():
    # It compacts before the next request instead of refusing it: "full" would be untrue.
    text = "".join(f[1] for f in repl_with(ready_agent("blocked", 3, auto_compact=True)).status.toolbar(width=200))
    assert text.startswith("3% context left") and "context full" not in text
