"""Toolbox: file tools, confinement, argument checks, approval, output caps, file tracking."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from mini_letta.errors import ConfigError
from mini_letta.messages import ToolCall, ToolSpec
from mini_letta.toolbox import Toolbox, ToolOutcome, approve_all, deny_with


def call(name: str, _id: str = "call_1", **arguments) -> ToolCall:
    return ToolCall(_id, name, json.dumps(arguments))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def box(ws: Path) -> Toolbox:
    return Toolbox(ws, approve_all)


# -- read_file -------------------------------------------------------------------------------

def test_read_file_numbers_lines_like_cat_n(box, ws):
    (ws / "a.txt").write_text("alpha\nbeta\n")
    outcome = box.run(call("read_file", path="a.txt"))
    assert not outcome.is_error
    assert outcome.text == "     1\talpha\n     2\tbeta"


def test_read_file_offset_and_limit_select_lines_and_say_where_to_continue(box, ws):
    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    outcome = box.run(call("read_file", path="a.txt", offset=10, limit=3))
    lines = outcome.text.splitlines()
    assert lines[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "offset=13" in lines[3]


def test_read_file_to_the_end_has_no_continue_note(box, ws):
    (ws / "a.txt").write_text("one\ntwo\nthree")
    outcome = box.run(call("read_file", path="a.txt", offset=2))
    assert outcome.text == "     2\ttwo\n     3\tthree"


def test_read_file_default_limit_is_2000_lines(box, ws):
    (ws / "a.txt").write_text("x\n" * 2500)
    box.max_output_chars = 1_000_000
    outcome = box.run(call("read_file", path="a.txt"))
    assert outcome.text.splitlines()[1999] == "  2000\tx"
    assert "offset=2001" in outcome.text.splitlines()[2000]


def test_read_file_offset_past_the_end_says_how_many_lines(box, ws):
    (ws / "a.txt").write_text("a\nb\n")
    outcome = box.run(call("read_file", path="a.txt", offset=50))
    assert "has 2 lines" in outcome.text and "offset 50" in outcome.text


def test_read_file_cuts_very_long_lines(box, ws):
    (ws / "a.txt").write_text("y" * 50_000 + "\nshort\n")
    outcome = box.run(call("read_file", path="a.txt"))
    first, second = outcome.text.splitlines()[:2]
    assert first.startswith("     1\t" + "y" * 2000 + "…") and "50,001 bytes" in first
    assert second == "     2\tshort"
    assert "longer than 2000 characters" in outcome.text


def test_read_file_of_10_mb_reads_only_what_it_shows(box, ws):
    big = ws / "big.log"
    line = "0123456789" * 9 + "\n"
    with big.open("w") as f:
        for _ in range(110_000):
            f.write(line)
    assert big.stat().st_size > 10_000_000
    tracemalloc.start()
    try:
        outcome = box.run(call("read_file", path="big.log", limit=50))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(outcome.text.splitlines()) == 51
    assert "offset=51" in outcome.text and "MB file" in outcome.text
    assert peak < 1_000_000


def test_read_file_stops_at_the_output_cap_with_a_note(box, ws):
    (ws / "a.txt").write_text("".join(f"{i:04d} " + "z" * 90 + "\n" for i in range(1, 1001)))
    box.max_output_chars = 5_000
    outcome = box.run(call("read_file", path="a.txt"))
    assert len(outcome.text) <= 5_000
    last_shown = int(outcome.text.splitlines()[-2].split("\t")[0])
    assert f"offset={last_shown + 1}" in outcome.text.splitlines()[-1]


def test_read_file_of_a_single_line_file_without_newlines_is_bounded(box, ws):
    (ws / "min.js").write_bytes(b"a" * 5_000_000)
    outcome = box.run(call("read_file", path="min.js"))
    assert len(outcome.text) < 3_000 and "5,000,000 bytes" in outcome.text


def test_binary_file_is_refused_politely(box, ws):
    (ws / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)) * 10)
    outcome = box.run(call("read_file", path="logo.png"))
    assert outcome.is_error
    assert outcome.text.startswith("logo.png looks binary (") and outcome.text.endswith("; not shown.")


def test_missing_file_and_directory_are_errors(box, ws):
    (ws / "src").mkdir()
    assert "does not exist" in box.run(call("read_file", path="nope.txt")).text
    assert "is a directory" in box.run(call("read_file", path="src")).text


def test_empty_file(box, ws):
    (ws / "e.txt").write_text("")
    assert box.run(call("read_file", path="e.txt")).text == "e.txt is empty."


# -- confinement -----------------------------------------------------------------------------

@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    return secret


def test_reading_outside_the_workspace_asks_first_and_reads_only_when_allowed(ws, outside):
    asked = []
    no = Toolbox(ws, lambda call, summary: asked.append(summary) or False)
    outcome = no.run(call("read_file", path="../secret.txt"))
    assert asked == ["read ../secret.txt, outside the workspace"]
    assert outcome.is_error and "top secret" not in outcome.text
    yes = Toolbox(ws, lambda call, summary: True)
    assert yes.run(call("read_file", path="../secret.txt")).text == "     1\ttop secret"
    assert yes.files_read == [outside.as_posix()]
    yolo = Toolbox(ws, approve_all).run(call("read_file", path="../secret.txt"))  # --yolo asks no one
    assert yolo.is_error and "with --yolo nothing outside it is read" in yolo.text and "top secret" not in yolo.text


def test_without_anyone_to_ask_a_read_outside_is_refused(ws, outside):
    outcome = Toolbox(ws).run(call("read_file", path=str(outside)))
    assert outcome.is_error and "needs the user's approval" in outcome.text and "top secret" not in outcome.text


def test_absolute_path_outside_is_refused_for_every_writing_tool(box, outside):
    for name, extra in [("write_file", {"content": "x"}), ("edit_file", {"old_string": "top", "new_string": "low"})]:
        outcome = box.run(call(name, path=str(outside), **extra))
        assert outcome.is_error and "is outside the workspace" in outcome.text
    assert outside.read_text() == "top secret\n"


def test_symlink_pointing_out_is_refused_and_target_untouched(box, ws, outside):
    (ws / "link.txt").symlink_to(outside)
    (ws / "linkdir").symlink_to(outside.parent)
    asked = []
    reader = Toolbox(ws, lambda call, summary: asked.append(summary) or False)
    assert reader.run(call("read_file", path="link.txt")).is_error and asked == [
        "read link.txt, outside the workspace"]  # where the link leads decides, not its name
    assert "outside the workspace" in box.run(call("write_file", path="link.txt", content="pwned")).text
    assert "outside the workspace" in box.run(call("write_file", path="linkdir/new.txt", content="x")).text
    assert "outside the workspace" in box.run(
        call("edit_file", path="link.txt", old_string="top", new_string="low")).text
    assert outside.read_text() == "top secret\n"
    assert not (outside.parent / "new.txt").exists()


def test_an_added_folder_is_read_and_written_as_the_workspace_is(ws, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("shared notes\n")
    asked = []
    box = Toolbox(ws, lambda call, summary, protected=None: asked.append((summary, protected)) or True)
    assert box.add_dir(other) == other.resolve()
    assert box.run(call("read_file", path=str(other / "notes.txt"))).text == "     1\tshared notes"
    assert asked == []  # reading an added folder asks no more than reading the workspace
    written = box.run(call("write_file", path=str(other / "new.txt"), content="x\n"))
    assert not written.is_error and (other / "new.txt").read_text() == "x\n"
    assert asked[-1] == (f"write 1 line to {other / 'new.txt'}", None)
    box.run(call("write_file", path=str(other / ".mcp.json"), content="{}\n"))
    assert "MCP servers" in asked[-1][1]  # its protected files are protected as the workspace's are
    assert "notes.txt" in box.run(call("grep", pattern="shared", path=str(other))).text
    with pytest.raises(ConfigError, match="is not a directory"):
        box.add_dir(tmp_path / "missing")


def test_symlink_inside_the_workspace_is_followed(box, ws):
    (ws / "real.txt").write_text("hi\n")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    assert box.run(call("read_file", path="alias.txt")).text == "     1\thi"
    assert box.files_read == ["real.txt"]


def test_refused_write_does_not_ask_for_approval(ws, outside):
    asked = []
    box = Toolbox(ws, lambda c, s: asked.append(s) or True)
    box.run(call("write_file", path="../secret.txt", content="x"))
    assert asked == []


# -- write_file / edit_file ------------------------------------------------------------------

def test_write_file_creates_parent_folders_and_reports_size(box, ws):
    outcome = box.run(call("write_file", path="src/pkg/app.py", content="a = 1\nb = 2\n"))
    assert (ws / "src/pkg/app.py").read_text() == "a = 1\nb = 2\n"
    assert outcome.text == "Created src/pkg/app.py: 2 lines, 12 bytes."
    outcome = box.run(call("write_file", path="src/pkg/app.py", content="é"))
    assert outcome.text == "Overwrote src/pkg/app.py: 1 line, 2 bytes."


def test_edit_file_replaces_a_unique_occurrence(box, ws):
    (ws / "a.py").write_text("def f():\n    return 1\n")
    outcome = box.run(call("edit_file", path="a.py", old_string="return 1", new_string="return 2"))
    assert not outcome.is_error and "line 2" in outcome.text
    assert (ws / "a.py").read_text() == "def f():\n    return 2\n"


def test_edit_file_with_no_occurrence_changes_nothing(box, ws):
    (ws / "a.py").write_text("x = 1\n")
    outcome = box.run(call("edit_file", path="a.py", old_string="y = 1", new_string="y = 2"))
    assert outcome.is_error and "0 occurrences" in outcome.text
    assert (ws / "a.py").read_text() == "x = 1\n"


def test_edit_file_with_two_occurrences_asks_for_context(box, ws):
    (ws / "a.py").write_text("x = 1\ny = 2\nx = 1\n")
    outcome = box.run(call("edit_file", path="a.py", old_string="x = 1", new_string="x = 3"))
    assert outcome.is_error
    assert "occurs 2 times" in outcome.text and "lines 1, 3" in outcome.text and "surrounding" in outcome.text
    assert (ws / "a.py").read_text() == "x = 1\ny = 2\nx = 1\n"


def test_edit_file_with_empty_old_string_creates_a_missing_file(box, ws):
    outcome = box.run(call("edit_file", path="new/mod.py", old_string="", new_string="print(1)\n"))
    assert outcome.text == "Created new/mod.py: 1 line."
    assert (ws / "new/mod.py").read_text() == "print(1)\n"
    outcome = box.run(call("edit_file", path="new/mod.py", old_string="", new_string="other\n"))
    assert outcome.is_error and "already exists" in outcome.text
    assert (ws / "new/mod.py").read_text() == "print(1)\n"


def test_edit_file_keeps_windows_line_endings(box, ws):
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    outcome = box.run(call("edit_file", path="w.txt", old_string="one\ntwo", new_string="1\n2"))
    assert not outcome.is_error
    assert (ws / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_files_read_and_modified_are_ordered_without_repeats(box, ws):
    (ws / "b.txt").write_text("b\n")
    (ws / "a.txt").write_text("a\n")
    for path in ["b.txt", "a.txt", "b.txt"]:
        box.run(call("read_file", path=path))
    box.run(call("write_file", path="./c.txt", content="c"))
    box.run(call("edit_file", path="a.txt", old_string="a", new_string="A"))
    box.run(call("write_file", path="c.txt", content="cc"))
    box.run(call("read_file", path="missing.txt"))
    assert box.files_read == ["b.txt", "a.txt"]
    assert box.files_modified == ["c.txt", "a.txt"]


# -- arguments -------------------------------------------------------------------------------

@pytest.mark.parametrize("arguments, expected", [
    ("{not json", "arguments are not valid JSON"),
    ("[1, 2]", "arguments must be a JSON object"),
    ('{"offset": 3}', "missing required argument 'path'"),
    ('{"path": "a.txt", "colour": "red"}', "unexpected argument 'colour'"),
    ('{"path": 7}', "argument 'path' must be a string, not an integer"),
    ('{"path": "a.txt", "limit": "ten"}', "argument 'limit' must be an integer, not a string"),
    ('{"path": "a.txt", "limit": true}', "argument 'limit' must be an integer, not a boolean"),
    ('{"path": "a.txt", "offset": 0}', "argument 'offset' must be at least 1"),
])
def test_bad_arguments_are_one_clear_error(box, ws, arguments, expected):
    (ws / "a.txt").write_text("a\n")
    outcome = box.run(ToolCall("call_1", "read_file", arguments))
    assert outcome.is_error
    assert expected in outcome.text
    assert outcome.text.startswith("read_file: ")


def test_null_optional_arguments_and_whole_floats_are_accepted(box, ws):
    (ws / "a.txt").write_text("a\nb\n")
    outcome = box.run(ToolCall("c", "read_file", '{"path": "a.txt", "offset": null, "limit": 1.0}'))
    assert not outcome.is_error and outcome.text.startswith("     1\ta")


def test_unknown_tool_and_missing_id_are_errors(box):
    outcome = box.run(call("delete_everything"))
    assert outcome.is_error and "no tool named 'delete_everything'" in outcome.text and "read_file" in outcome.text
    outcome = box.run(call("read_file", _id="", path="a.txt"))
    assert outcome.is_error and "no id" in outcome.text


def test_bash_timeout_above_600_is_refused(box):
    outcome = box.run(call("bash", command="echo hi", timeout=601))
    assert outcome.is_error and "at most 600" in outcome.text


# -- approval --------------------------------------------------------------------------------

def test_approver_sees_a_one_line_summary_and_a_denial_reaches_the_model(ws):
    seen = []

    def approver(c, summary):
        seen.append((c.name, summary))
        return False

    box = Toolbox(ws, approver)
    outcome = box.run(call("write_file", path="src/app.py", content="a\nb\nc\n"))
    assert outcome.is_error and "declined" in outcome.text
    assert not (ws / "src/app.py").exists()
    box.run(call("bash", command="pytest -q"))
    box.run(call("read_file", path="anything.txt"))
    assert seen == [("write_file", "write 3 lines to src/app.py"), ("bash", "run: pytest -q")]
    assert box.files_modified == []


def test_approved_call_runs(ws):
    box = Toolbox(ws, lambda c, s: True)
    assert not box.run(call("write_file", path="x.txt", content="x")).is_error
    assert (ws / "x.txt").read_text() == "x"


def test_deny_with_gives_the_model_the_message(ws):
    box = Toolbox(ws, deny_with("Denied: print mode without --yolo."))
    outcome = box.run(call("bash", command="touch made"))
    assert outcome == ToolOutcome("Denied: print mode without --yolo.", is_error=True)
    assert not (ws / "made").exists()
    (ws / "r.txt").write_text("r\n")
    assert not box.run(call("read_file", path="r.txt")).is_error


def test_without_an_approver_changes_are_refused(ws):
    box = Toolbox(ws)
    outcome = box.run(call("edit_file", path="a", old_string="", new_string="x"))
    assert outcome.is_error and "approval" in outcome.text
    assert not (ws / "a").exists()


# -- registration, specs, describe, caps -----------------------------------------------------

def test_specs_are_the_six_tools_in_a_stable_order_with_descriptions(box):
    specs = box.specs()
    assert [s.name for s in specs] == ["read_file", "write_file", "edit_file", "bash", "grep", "glob"]
    for spec in specs:
        assert spec.description and spec.parameters["type"] == "object"
        assert set(spec.parameters["required"]) <= set(spec.parameters["properties"])


def test_registered_tool_is_listed_checked_and_capped(ws):
    box = Toolbox(ws, approve_all, max_output_chars=1_000)
    spec = ToolSpec("shout", "Repeat text.", {"type": "object", "properties": {"text": {"type": "string"}},
                                               "required": ["text"]})
    box.register(spec, lambda args: args["text"] * 5_000)
    assert box.specs()[-1] is spec
    assert "missing required argument 'text'" in box.run(call("shout")).text
    outcome = box.run(call("shout", text="ab"))
    assert len(outcome.text) <= 1_000 and "of 10,000 characters" in outcome.text
    with pytest.raises(ValueError):
        box.register(spec, lambda args: "")


def test_registered_tool_that_raises_becomes_an_error_result(ws):
    box = Toolbox(ws)
    spec = ToolSpec("boom", "Fails.", {"type": "object", "properties": {}})
    box.register(spec, lambda args: 1 / 0)
    outcome = box.run(call("boom"))
    assert outcome.is_error and "ZeroDivisionError" in outcome.text


def test_registered_tool_needing_approval_asks(ws):
    asked = []
    box = Toolbox(ws, lambda c, s: asked.append(s) or False)
    box.register(ToolSpec("mem", "m", {"type": "object", "properties": {"x": {"type": "string"}}}),
                 lambda args: ToolOutcome("done"), needs_approval=True)
    assert box.run(call("mem", x="1")).is_error
    assert asked == ['mem x="1"']


def test_output_cap_callable_is_read_at_each_call(box, ws):
    (ws / "a.txt").write_text("w" * 80 + "\n" * 1 + ("w" * 80 + "\n") * 500)
    limits = iter([100_000, 2_000])
    box.max_output_chars = lambda: next(limits)
    assert len(box.run(call("read_file", path="a.txt")).text) > 30_000
    capped = box.run(call("read_file", path="a.txt")).text
    assert len(capped) <= 2_000 and "offset=" in capped


@pytest.mark.parametrize("arguments, shown", [
    ({"path": "src/app.py"}, "read_file src/app.py"),
    ({"path": "src/app.py", "offset": 10, "limit": 5}, "read_file src/app.py:10-14"),
])
def test_describe_read_file(box, arguments, shown):
    assert box.describe(call("read_file", **arguments)) == shown


def test_describe_other_tools(box):
    assert box.describe(call("write_file", path="a.py", content="1\n2\n")) == "write_file a.py (2 lines)"
    assert box.describe(call("write_file", path="notes.md", content="one\n")) == "write_file notes.md (1 line)"
    assert box.describe(call("bash", command="pytest -q\necho done")) == "bash: pytest -q ⏎ echo done"
    assert box.describe(call("grep", pattern="def f")) == "grep 'def f' in ."
    assert box.describe(call("glob", pattern="**/*.py")) == "glob **/*.py"
    assert box.describe(ToolCall("c", "read_file", "{oops")) == "read_file (invalid arguments)"
    assert len(box.describe(call("bash", command="x" * 500))) <= 90


@pytest.mark.parametrize(("arguments", "message"), [
    ({"path": "a.txt", "offset": float("nan")}, "argument 'offset' must be an integer, not a number."),
    ({"path": "a.txt", "limit": float("inf")}, "argument 'limit' must be an integer, not a number."),
    ({"path": "a.txt", "offset": 1e300}, "argument 'offset' is out of range (1e+300); give a number below 2**53."),
    ({"path": "a.txt", "limit": 2**60}, "argument 'limit' is out of range (1.15e+18); give a number below 2**53."),
])
def test_numbers_that_are_not_finite_or_out_of_range_are_refused(tmp_path, arguments, message):
    (tmp_path / "a.txt").write_text("one\n")
    outcome = Toolbox(tmp_path).run(ToolCall("c1", "read_file", json.dumps(arguments)))
    assert outcome.is_error
    assert outcome.text == f"read_file: {message}"  # refused by name, and the file was not read
