"""``/compact --preview`` in the real REPL (pseudo-terminal, demo model): preview, cancel with
nothing changed, then edit the summary in $EDITOR and apply it."""

import json
import re

from pty_support import screen_after

EDITED = "The team runs pytest -q before every commit."  # what the test's $EDITOR writes


def session_file(tmp_path):
    [path] = list((tmp_path / "home" / "sessions").glob("*.jsonl"))  # not a checkpoint log beside it
    return path


def context_rows(view: str) -> list[str]:
    """The /context headline (tokens, % left) and its messages, summary and free rows."""
    return re.findall(r"\d+% context left · [\d,]+ of [\d,]+ tokens in use|"
                      r"(?:messages|summary|free \(raw share of the window\))\s*│\s*[\d,]+", view)


def test_preview_then_cancel_changes_nothing_then_edit_and_apply(spawn, tmp_path):
    repl = spawn()
    screen_after(repl, r"context left")
    for _ in range(3):
        repl.send("read app.py\r")
        screen_after(repl, r"now sits in the context")
    repl.send("/context\r")
    before_view = context_rows(screen_after(repl, r"free.*\d[\s\S]*context left"))
    assert len(before_view) == 4
    before_file = session_file(tmp_path).read_bytes()

    repl.send("/compact --preview keep the file names\r")
    shown = screen_after(repl, r"\[y\]es apply / \[e\]dit summary / \[n\]o cancel")
    assert re.search(r"Would summarize: \d+ turns?, \d+ messages?, [\d.]+k? tokens", shown)
    assert re.search(r"Kept verbatim: \d+ messages?", shown) and "Draft summary:" in shown
    assert re.search(r"Estimate after: [\d.]+k → [\d.]+k? tokens, \d+% left", shown)

    repl.send("\x1b")  # Esc
    screen_after(repl, r"Compaction cancelled; nothing was changed\.[\s\S]*context left")
    assert session_file(tmp_path).read_bytes() == before_file
    repl.send("/context\r")
    assert context_rows(screen_after(repl, r"free.*\d[\s\S]*context left")) == before_view

    repl.send("/compact --preview\r")
    screen_after(repl, r"\[y\]es apply / \[e\]dit summary")
    repl.send("e")  # one key, no Enter
    screen_after(repl, r"[Ss]ummarized \d+ older messages: [\d.]+k? → [\d.]+k? tokens, \d+% left")
    saved = [json.loads(line) for line in session_file(tmp_path).read_text().splitlines()]
    [compaction] = [entry for entry in saved if entry.get("type") == "compaction"]
    assert compaction["record"]["edited"] is True
    assert EDITED in compaction["summary"]["text"]


def test_an_inline_edit_without_editor_is_shown_and_asked_about_before_it_is_applied(spawn, tmp_path):
    repl = spawn(env_extra={"EDITOR": ""})
    screen_after(repl, r"context left")
    for _ in range(3):
        repl.send("read app.py\r")
        screen_after(repl, r"now sits in the context")
    screen_after(repl, r"\d out[\s\S]*context left")

    def compactions():
        return [line for line in session_file(tmp_path).read_text().splitlines() if '"type":"compaction"' in line]

    repl.send("/compact --preview\r")
    screen_after(repl, r"\[y\]es apply / \[e\]dit summary")
    repl.send("e")  # one key, no Enter
    screen_after(repl, r"Editing the summary here \(no \$EDITOR\)[\s\S]*new value")
    repl.send("\r")  # Enter ends the edit: it does not apply it
    screen_after(repl, r"The summary as edited:[\s\S]*Apply this summary\? \[y\]es · \[n\]o \(Esc\):")
    assert compactions() == []
    repl.send("n")
    screen_after(repl, r"Compaction cancelled; nothing was changed\.")
    assert compactions() == []


def test_the_status_bar_shows_a_summary_prepared_ahead_and_the_threshold_uses_it(spawn):
    repl = spawn()
    screen_after(repl, r"context left")
    seen = ""
    for _ in range(12):  # each reply adds ~2k tokens to the demo model's 16k window
        repl.send("fill 3000\r")
        seen = screen_after(repl, r"context left")
        if "summary ready" in seen:
            break
    else:
        seen = screen_after(repl, r"summary ready", timeout=30)
    after = ""
    for _ in range(6):
        repl.send("fill 3000\r")
        after += screen_after(repl, r"context left", timeout=30)
        if re.search(r"[Ss]ummarized", after):
            break
    after += screen_after(repl, r"context left", timeout=5)
    assert re.search(r"[Ss]ummarized \d+ older messages", after)
    assert "prepared ahead of time, while you typed" in re.sub(r"\s+", " ", after)
