"""/expand with a real pager (less) in a pseudo-terminal: the full output is paged, `q`
comes back to the prompt, the REPL goes on, and the pager gets our colours but never a control
sequence from the tool's output (issue 12)."""

import re
import shutil

import pytest
from pty_support import screen_after

pytestmark = pytest.mark.skipif(not shutil.which("less"), reason="less is not installed")


def test_expand_pages_the_whole_output_in_less_and_q_comes_back_to_a_working_prompt(spawn, tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "long.txt").write_text("".join(f"line number {n}\n" for n in range(1, 121))
                                              + "\x1b[8mconcealed\x1b[0m and \x1b]52;c;aGk=\x07 clipboard\n")
    paged = tmp_path / "paged.txt"
    # A recorder in front of the pager: what the pager is given, byte for byte.
    child = spawn(env_extra={"PAGER": f"tee {paged} | less", "LESS": ""})
    screen_after(child, r"context left")
    child.send("read long.txt\r")
    screen_after(child, r"Ctrl-O or /expand to see all[\s\S]*\n›")  # the prompt is back
    child.send("/expand\r")  # Ctrl-O prints it instead (test_repl_newcomer_pty.py)
    # The pager's first screen: lines the collapsed preview did not show, under the tool's title in
    # colour (less without -R would show the colour codes as "ESC[36m").
    first = screen_after(child, r"line number 30\b")
    assert "⏺ read_file long.txt" in first and "ESC[" not in first
    child.send("G")  # to the end, as a reader of a long output does
    end = screen_after(child, r"clipboard")
    assert "line number 120" in end and "␛[8mconcealed␛[0m" in end
    child.send("q")
    screen_after(child, r"›[\s\S]*context left")
    child.send("hello after the pager\r")
    screen_after(child, r"You said: “hello after the pager”[\s\S]*context left")
    given = paged.read_text(encoding="utf-8")
    assert "line number 1\n" in given and "line number 120\n" in given
    # Only colour and style codes (SGR) reach the pager; the output's own codes are shown as text.
    assert {code[-1] for code in re.findall(r"\x1b\[[\d;]*[A-Za-z]", given)} <= {"m"}
    assert "\x1b]" not in given and "\x07" not in given
    assert "␛[8mconcealed␛[0m and ␛]52;c;aGk=␇ clipboard" in given
