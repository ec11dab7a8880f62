"""The fourth newcomer round's REPL items with the demo model (issue 49): its help says when `run`
asks, paths in its reply are shown as written, and a command that printed nothing is told alike
under the call and in the reply."""

from pty_support import AT_THE_PROMPT_AFTER_A_REPLY, screen_after


def test_the_demo_tells_results_literally_and_consistently(spawn, tmp_path):
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "my_pkg").mkdir()
    (tmp_path / "ws" / "my_pkg" / "__init__.py").write_text("VERSION = 1\n")
    repl = spawn("--yolo")
    screen_after(repl, r"context left")
    repl.send("help\r")
    helped = screen_after(repl, r"slowly[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    assert "inside the sandbox without asking" in helped and "run a shell command (asks for approval)" not in helped
    repl.send("ls my_pkg/*.py\r")
    listed = screen_after(repl, r"the first:[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    # Under the call and in the reply: the path as written, not Markdown's bold "init".
    assert listed.count("my_pkg/__init__.py") >= 2 and "my_pkg/init.py" not in listed
    repl.send("run true\r")
    ran = screen_after(repl, r"returned no output[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    assert "⎿ (no output) [exit code 0]" in ran
    assert "+1 line" not in ran and "returned 2 lines" not in ran and "First line:" not in ran
