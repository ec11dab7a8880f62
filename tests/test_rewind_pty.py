"""/rewind in the real REPL, in a pseudo-terminal: Esc Esc opens the list, going back frees the
context and puts the old message back in the prompt, "summarize from here" summarizes only the
later part, and a file changed by someone else is not overwritten without its own yes."""

import re

from pty_support import AT_THE_PROMPT_AFTER_A_REPLY, screen_after

PERCENT = re.compile(r"(\d+)% context left")


def percent_left(screen: str) -> int:
    return int(PERCENT.findall(screen)[-1])


def send_turns(child, *texts):
    for text in texts:
        child.send(text + "\r")
        screen = screen_after(child, r"You said: “" + re.escape(text[:20]) + r"[\s\S]*carried[\s\S]*"
                              + AT_THE_PROMPT_AFTER_A_REPLY)
    return screen


def open_rewind_with_esc_esc(child):
    child.send("\x1b\x1b")
    return screen_after(child, r"Message number \(1-\d+; Enter or Esc cancels\)")


def test_esc_esc_conversation_only_drops_later_turns_and_puts_the_message_back(spawn):
    child = spawn()
    screen_after(child, r"context left")
    before = percent_left(send_turns(child, "first question alpha", "second question beta " + "padding " * 300,
                                     "third question gamma " + "padding " * 300))
    listing = open_rewind_with_esc_esc(child)
    for text in ("first question alpha", "second question beta", "third question gamma"):
        assert text in listing
    child.send("2\r")
    screen_after(child, r"Which\? \(1-4")
    child.send("2")  # one key, no Enter
    screen_after(child, r"tokens freed[\s\S]*› second question beta")
    # The status bar: more context left than before, and what the rewind freed.
    bar = screen_after(child, r"(\d+)% context left · [^\n]*rewind freed [\d.]+k?")
    assert int(re.findall(r"(\d+)% context left · [^\n]*rewind freed", bar)[-1]) > before
    # The old message is in the prompt: Enter sends it again, into a context without turns 2 and 3.
    child.send("\r")
    reply = screen_after(child, r"This request carried (\d+) messages?:")
    assert re.search(r"This request carried 3 messages:", reply)


def test_summarize_from_here_summarizes_only_the_later_part(spawn):
    child = spawn()
    screen_after(child, r"context left")
    send_turns(child, "keep this verbatim kiwi", "later part mango", "later part papaya")
    child.send("/rewind\r")
    screen_after(child, r"Message number")
    child.send("2\r")
    screen_after(child, r"Which\? \(1-4")
    child.send("4")
    shown = screen_after(child, r"are now this summary[\s\S]*context left")
    summary = shown[shown.index("Summarizing"):shown.index("are now this summary")]
    assert "mango" in summary and "papaya" in summary
    assert "kiwi" not in summary
    child.send("what now\r")
    reply = screen_after(child, r"This request carried (\d+) messages?:")
    # kiwi, its reply, the summary, and this message.
    assert re.search(r"This request carried 4 messages:", reply)


def test_a_file_changed_by_someone_else_needs_its_own_yes(spawn, tmp_path):
    child = spawn("--yolo")
    screen_after(child, r"context left")
    workspace = tmp_path / "ws"
    (workspace / "notes.txt").write_text("original\n")
    (workspace / "mine.txt").write_text("mine original\n")
    child.send("write notes.txt: agent version\r")
    screen_after(child, r"write_file[\s\S]*context left")
    child.send("write mine.txt: agent mine\r")
    screen_after(child, r"write_file[\s\S]*mine[\s\S]*context left")
    (workspace / "notes.txt").write_text("edited by hand\n")
    child.send("/rewind\r")
    screen_after(child, r"Message number")
    child.send("1\r")
    screen_after(child, r"Which\? \(1-4")
    child.send("3")
    listing = screen_after(child, r"\[y/n\]")
    assert re.search(r"restore +mine\.txt\n", listing)
    assert re.search(r"restore +notes\.txt +\(changed since by someone else\)", listing)
    child.send("y")  # one key, no Enter
    screen_after(child, r"notes\.txt was changed since by someone else[\s\S]*\[y/n\]")
    child.send("n")
    screen_after(child, r"Left notes\.txt as it is[\s\S]*Restored 1 file")
    assert (workspace / "notes.txt").read_text() == "edited by hand\n"
    assert (workspace / "mine.txt").read_text() == "mine original\n"


def test_undo_puts_back_what_the_last_turn_changed(spawn, tmp_path):
    child = spawn("--yolo")
    screen_after(child, r"context left")
    workspace = tmp_path / "ws"
    child.send("write fresh.txt: hello\r")
    screen_after(child, r"write_file[\s\S]*context left")
    child.send("edit app.py: return 42 => return 43\r")
    screen_after(child, r"edit_file[\s\S]*context left")
    child.send("/undo\r")
    listing = screen_after(child, r"\[y/n\]")
    assert "app.py" in listing and "fresh.txt" not in listing
    child.send("y")
    screen_after(child, r"Restored 1 file")
    assert "return 42" in (workspace / "app.py").read_text()
    assert (workspace / "fresh.txt").read_text() == "hello\n"


def test_esc_esc_with_text_in_the_prompt_keeps_the_text(spawn):
    child = spawn()
    screen_after(child, r"context left")
    child.send("half typed")
    screen_after(child, r"half typed")
    child.send("\x1b\x1b")
    child.send(" and sent\r")
    reply = screen_after(child, r"You said: “[^”]*”")
    assert "You said: “half typed and sent”" in reply
    assert "Message number" not in reply


def test_undo_after_a_command_outside_git_does_not_claim_that_no_file_differs(spawn, tmp_path):
    """Issue 37 item 2: outside a git work tree a command's changes are not recorded, so /undo
    cannot know whether a file differs and must not say none does."""
    child = spawn("--yolo")
    screen_after(child, r"context left")
    child.send("run echo changed > app.py\r")
    screen_after(child, r"bash[\s\S]*context left")
    child.send("/undo\r")
    screen = screen_after(child, r"commands changed is\s+not\s+recorded\s+here[\s\S]*may\s+differ")
    assert "No file differs from how it was" not in screen
    assert (tmp_path / "ws" / "app.py").read_text() == "changed\n"
