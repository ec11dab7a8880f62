"""The first seconds of the REPL (issue 26): whatever the user types while the agent is still being
built in the background, every start-up notice is shown and nothing crashes."""

import pexpect

from pty_support import read_until, screen_after

TRIES = 20


def press_enter_as_soon_as_the_prompt_appears(child) -> str:
    """Send Enter within a few milliseconds of the first "›"; return what was shown until then."""
    seen = read_until(child, "›", poll=0.01)[1]
    child.send("\r")
    return seen


def test_enter_pressed_the_moment_the_prompt_appears_loses_no_notice_and_raises_nothing(spawn, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    # A start-up notice that only the background start-up can find: the settings are read there.
    (home / "settings.json").write_text("{not json", encoding="utf-8")
    for attempt in range(TRIES):
        child = spawn()
        before = press_enter_as_soon_as_the_prompt_appears(child)
        after = screen_after(child, r"settings\.json: it is not valid JSON[\s\S]*context left")
        shown = before + after
        assert "mini-letta in" in shown, f"try {attempt + 1}: no welcome line"
        assert "Traceback" not in shown and "Event loop is closed" not in shown, f"try {attempt + 1}:\n{shown}"
        assert shown.count("is not valid JSON") == 1, f"try {attempt + 1}: shown twice:\n{shown}"
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
