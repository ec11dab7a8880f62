"""See before you approve: write_file and edit_file approvals show the change, coloured, with the
full path (issue 12)."""

import io
import json
import re

from rich.console import Console
from pty_support import screen_after

from mini_letta.messages import ToolCall
from mini_letta.repl.diffs import MAX_DIFF_LINES, change_preview
from mini_letta.toolbox.workspace import Workspace


def shown(tmp_path, name, **arguments):
    workspace = Workspace(tmp_path)
    preview = change_preview(ToolCall("c1", name, json.dumps(arguments)), workspace.resolve)
    console = Console(width=100, record=True, color_system="truecolor", force_terminal=True, file=io.StringIO())
    console.print(preview)
    return console.export_text(clear=False), console.export_text(styles=True)


def test_overwriting_a_file_shows_a_unified_diff_against_it(tmp_path):
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    text, styled = shown(tmp_path, "write_file", path="notes.txt", content="one\nTWO\nthree\n")
    assert text.splitlines() == [f"Changes to {tmp_path / 'notes.txt'}", "@@ -1,3 +1,3 @@", " one", "-two",
                                 "+TWO", " three"]
    assert re.search(r"\x1b\[[0-9;]*32m\+TWO", styled)
    assert re.search(r"\x1b\[[0-9;]*31m-two", styled)


def test_a_new_file_shows_its_first_lines_and_how_many_more(tmp_path):
    content = "".join(f"line {n}\n" for n in range(1, 31))
    text, _ = shown(tmp_path, "write_file", path="sub/new.txt", content=content)
    lines = text.splitlines()
    assert lines[0] == f"New file (30 lines): {tmp_path / 'sub' / 'new.txt'}"
    assert lines[1:3] == ["+line 1", "+line 2"] and "+line 20" in lines and "+line 21" not in lines
    assert lines[-1] == "… and 10 more lines"


def test_an_edit_shows_the_diff_of_the_edit_in_its_file(tmp_path):
    (tmp_path / "app.py").write_text("def main():\n    return 42\n")
    text, _ = shown(tmp_path, "edit_file", path="app.py", old_string="return 42", new_string="return 43")
    assert text.splitlines() == [f"Changes to {tmp_path / 'app.py'}", "@@ -1,2 +1,2 @@", " def main():",
                                 "-    return 42", "+    return 43"]


def test_an_edit_that_will_fail_says_so(tmp_path):
    (tmp_path / "app.py").write_text("x = 1\nx = 1\n")
    text, _ = shown(tmp_path, "edit_file", path="app.py", old_string="x = 1", new_string="x = 2")
    assert "old_string occurs 2 times in the file; the edit will fail." in text


def test_a_crlf_edit_the_tool_will_apply_is_previewed_as_the_change_it_makes(tmp_path):
    from mini_letta.toolbox.files import edit_file

    (tmp_path / "app.py").write_bytes(b"def main():\r\n    return 42\r\n")
    edit = {"path": "app.py", "old_string": "def main():\n    return 42", "new_string": "def main():\n    return 43"}
    text, _ = shown(tmp_path, "edit_file", **edit)
    assert "will fail" not in text
    assert "-    return 42" in text and "+    return 43" in text
    edit_file(Workspace(tmp_path), **edit)  # and the edit does succeed, keeping the line endings
    assert (tmp_path / "app.py").read_bytes() == b"def main():\r\n    return 43\r\n"


def test_a_long_diff_is_cut_and_says_how_much_was_left_out(tmp_path):
    (tmp_path / "big.txt").write_text("".join(f"{n}\n" for n in range(200)))
    text, _ = shown(tmp_path, "write_file", path="big.txt", content="".join(f"{n}!\n" for n in range(200)))
    lines = text.splitlines()
    assert len(lines) == 1 + MAX_DIFF_LINES + 1
    assert re.fullmatch(r"… and \d+ more lines of diff", lines[-1])


def test_model_text_in_a_diff_is_never_markup_or_a_control_sequence(tmp_path):
    text, styled = shown(tmp_path, "write_file", path="x.txt", content="[bold]hi[/bold] \x1b[8mgone\n")
    assert "+[bold]hi[/bold] ␛[8mgone" in text
    assert "\x1b[8m" not in styled


def test_write_and_edit_approvals_in_the_repl_show_their_diffs(spawn, tmp_path):
    repl = spawn()
    screen_after(repl, r"context left")
    repl.send("write notes/todo.txt: buy milk\r")
    asked = screen_after(repl, r"\[n\]o \(Esc\)")
    assert f"New file (1 line): {tmp_path / 'ws' / 'notes' / 'todo.txt'}" in asked and "+buy milk" in asked
    repl.send("y")
    screen_after(repl, r"Created notes/todo.txt[\s\S]*context left")
    repl.send("edit app.py: return 42 => return 43\r")
    asked = screen_after(repl, r"\[n\]o \(Esc\)")
    assert f"Changes to {tmp_path / 'ws' / 'app.py'}" in asked
    assert re.search(r"@@ -1,\d+ \+1,\d+ @@\s+def main\(\):\s+-    return 42\s+\+    return 43", asked)
    repl.send("y")
    screen_after(repl, r"Edited app.py")
    assert (tmp_path / "ws" / "app.py").read_text().startswith("def main():\n    return 43\n\ndef helper_0")


def test_always_for_the_workspace_still_shows_the_diff_of_each_later_edit(spawn, tmp_path):
    repl = spawn()
    screen_after(repl, r"context left")
    repl.send("write notes.txt: buy milk\r")
    # A line for each "always", then yes and no.
    screen_after(repl, r"\[a\] always for changes to notes\.txt, this session\s+"
                       r"\[w\] always for changes to any file in this workspace, this session\s+\[y\]es · \[n\]o \(Esc\):")
    repl.send("w")
    screen_after(repl, r"Created notes.txt[\s\S]*context left")
    repl.send("edit app.py: return 42 => return 43\r")
    shown = screen_after(repl, r"Edited app.py[\s\S]*context left")
    assert "[y]es" not in shown and "Allowed without asking (Edit)" in shown
    assert re.search(r"Changes to .*app\.py\s+@@ -1,\d+ \+1,\d+ @@\s+def main\(\):\s+-    return 42\s+\+    return 43", shown)


def test_the_approval_choices_fit_80_columns_a_line_each_and_count_in_words(spawn, tmp_path):
    repl = spawn(columns=80)
    screen_after(repl, r"context left")
    repl.send("write notes.md: hello\r")
    # Each line whole: wrapped at 80 columns, a phrase would be cut by a line break.
    asked = screen_after(repl, r"\n\[a\] always for changes to notes\.md, this session *\n"
                               r"\[w\] always for changes to any file in this workspace, this session *\n"
                               r"\[y\]es · \[n\]o \(Esc\):")
    assert "write_file notes.md (1 line)" in asked and "Allow mini-letta to write 1 line to notes.md?" in asked
    repl.send("y")
    screen_after(repl, r"Created notes\.md: 1 line, 6 bytes\.")
