"""The third newcomer round's REPL items in a real pseudo-terminal (issue 37): questions answered by
one key, a status bar that says when the context is full or a prepared summary went stale, lines
queued during a reply shown, Ctrl-O leaving the keys typed next to the prompt, and /rewind's list
saying which turns are already undone."""

import re

import pexpect
from pty_support import ANSI, AT_THE_PROMPT_AFTER_A_REPLY, screen_after


def text_for(child, seconds: float) -> str:
    """What the screen shows in the next ``seconds``, escape codes removed."""
    try:
        child.expect(pexpect.TIMEOUT, timeout=seconds)
    except pexpect.EOF:
        pass
    return ANSI.sub("", child.before or "")


def read_three_times(repl):
    screen_after(repl, r"context left")
    for _ in range(3):
        repl.send("read app.py\r")
        screen_after(repl, r"now sits in the context")
    screen_after(repl, AT_THE_PROMPT_AFTER_A_REPLY)


def test_compact_preview_applies_on_y_without_enter(spawn):
    repl = spawn()
    read_three_times(repl)
    repl.send("/compact --preview\r")
    screen_after(repl, r"\[y\]es apply / \[e\]dit summary / \[n\]o cancel \(Esc\):")
    repl.send("y")  # no Enter
    shown = screen_after(repl, r"[Ss]ummarized \d+ older messages[\s\S]*context left")
    assert "cancel (Esc): apply" in shown  # the answer is written after the question


def test_the_rewind_choice_takes_one_key(spawn):
    repl = spawn()
    screen_after(repl, r"context left")
    for text in ("first plum", "second pear"):
        repl.send(text + "\r")
        screen_after(repl, AT_THE_PROMPT_AFTER_A_REPLY)
    repl.send("/rewind\r")
    screen_after(repl, r"Message number")
    repl.send("2\r")
    screen_after(repl, r"Which\? \(1-4; Enter or Esc cancels\):")
    repl.send("2")  # no Enter
    screen_after(repl, r"restore conversation only[\s\S]*back to before message 2[\s\S]*› second pear")


def test_with_compaction_off_a_full_context_says_so_on_the_status_bar(spawn):
    repl = spawn(env_extra={"CODEAGENT_DISABLE_COMPACT": "1"})
    screen_after(repl, r"context left")
    seen = ""
    for _ in range(12):  # each reply adds ~2k tokens to the demo model's 16k window
        repl.send("fill 2000\r")
        seen = screen_after(repl, r"context left|context full")
        seen += screen_after(repl, r"auto-compact off")
        if "context full — /compact" in seen:
            break
    assert "context full — /compact" in seen
    repl.send("hi\r")
    refused = screen_after(repl, r"Context is full[\s\S]*context full — /compact")
    assert "automatic compaction is off" in re.sub(r"\s+", " ", refused)


def test_summary_ready_leaves_the_status_bar_once_compact_made_it_stale(spawn):
    repl = spawn()
    screen_after(repl, r"context left")
    for _ in range(12):  # each reply adds ~2k tokens to the demo model's 16k window
        repl.send("fill 3000\r")
        if "summary ready" in screen_after(repl, r"context left"):
            break
    else:
        screen_after(repl, r"summary ready", timeout=30)
    repl.send("/compact\r")
    # The prompt after this compaction (an automatic one may have said "Summarized" before) and its bar.
    after = screen_after(repl, r"› /compact[\s\S]*[Ss]ummarized[^\n]*\n[\s\S]*›[\s\S]*context left[^\n]*tokens")
    after += text_for(repl, seconds=2)  # the rest of the bar, and its redraws
    # The summary was prepared for a history that is gone: it is not "ready" any more.
    assert "summary ready" not in after.split("› /compact")[-1].split("ummarized")[-1]


def test_a_line_sent_during_a_reply_is_shown_as_queued_then_runs(spawn):
    repl = spawn()
    screen_after(repl, r"context left")
    repl.send("fill 400 slowly\r")
    screen_after(repl, r"Receiving the reply")
    repl.send("and then the plums\r")
    screen_after(repl, r"1 message queued: “and then the plums”")
    screen_after(repl, r"› and then the plums[\s\S]*You said: “and then the plums”[\s\S]*context left", timeout=60)


def test_ctrl_o_prints_the_output_and_the_keys_typed_next_reach_the_prompt(spawn, tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "long.txt").write_text("".join(f"line number {n}\n" for n in range(1, 121)))
    repl = spawn(env_extra={"PAGER": "less", "LESS": ""})
    screen_after(repl, r"context left")
    repl.send("read long.txt\r")
    screen_after(repl, r"Ctrl-O or /expand to see all[\s\S]*\n›")
    repl.sendcontrol("o")
    screen_after(repl, r"line number 120[\s\S]*/expand pages it")
    repl.send("hello after ctrl-o\r")  # typed at once, as for the prompt: no pager takes them
    screen_after(repl, r"You said: “hello after ctrl-o”[\s\S]*context left")


def test_rewind_says_which_turns_undo_already_put_back(spawn, tmp_path):
    repl = spawn()
    screen_after(repl, r"context left")
    repl.send("write notes.txt: hello\r")
    screen_after(repl, r"\[y\]es · \[n\]o \(Esc\):")
    repl.send("y")
    screen_after(repl, AT_THE_PROMPT_AFTER_A_REPLY)
    repl.send("/undo\r")
    screen_after(repl, r"\[y/n\]")
    repl.send("y")
    screen_after(repl, r"Restored 1 file[\s\S]*context left")
    assert not (tmp_path / "ws" / "notes.txt").exists()
    repl.send("/rewind\r")
    listing = screen_after(repl, r"Message number")
    assert "1 file changed since, all back as they were (undone)" in listing


def test_model_without_a_name_offers_the_servers_models_and_switches_to_the_one_picked(spawn, server):
    server.models = [{"id": "big-model", "max_model_len": 32768}, {"id": "small-model", "max_model_len": 8192}]
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
    repl = spawn("--model", "big-model", env_extra=env)
    screen_after(repl, r"openai:big-model · [\d.]+k?/32\.8k tokens")
    repl.send("/model\r")
    listed = screen_after(repl, r"Switch to which\? A number or a name \(Enter keeps big-model\):")
    assert re.search(r"1 +big-model +\(in use\)", listed) and re.search(r"2 +small-model", listed)
    repl.send("2\r")
    screen_after(repl, r"Now using openai:small-model · window 8\.2k \(was 32\.8k\)[\s\S]*context left")
    repl.send("/model\r")
    screen_after(repl, r"Enter keeps small-model\):")
    repl.send("\r")  # Enter keeps it
    screen_after(repl, r"Enter keeps small-model\): *\n[\s\S]*openai:small-model")
