"""grep and glob: results, skipped folders and binaries, confinement, caps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mini_letta.messages import ToolCall
from mini_letta.toolbox import Toolbox


NOTICE = "[ripgrep (rg) is not installed: searched with the slower built-in walker"


def run(box: Toolbox, name: str, **arguments):
    """The tool's outcome, without the fallback's one-time notice (tested on its own below)."""
    outcome = box.run(ToolCall("call_1", name, json.dumps(arguments)))
    if outcome.text.startswith(NOTICE):
        outcome = type(outcome)(outcome.text.split("\n", 1)[1], outcome.is_error)
    return outcome


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src/pkg").mkdir(parents=True)
    (root / "src/pkg/app.py").write_text("import os\n\ndef main():\n    return os.getcwd()\n")
    (root / "src/util.py").write_text("def helper():\n    pass\n")
    (root / "README.md").write_text("# demo\nrun main()\n")
    for skipped in (".git", "node_modules/lib", ".venv/lib"):
        (root / skipped).mkdir(parents=True)
        (root / skipped / "hidden.py").write_text("def main():\n")
    (root / "image.bin").write_bytes(b"def main()\0\0\x01")
    return root


@pytest.fixture(params=["rg", "walker"])
def engine(request, monkeypatch) -> str:
    """Every test here runs on ripgrep and on the walker that stands in where rg cannot run."""
    if request.param == "walker":
        monkeypatch.setenv("MINI_LETTA_RG", "")
    else:
        monkeypatch.delenv("MINI_LETTA_RG", raising=False)
        from mini_letta.toolbox.ripgrep import find_rg
        assert find_rg(), "rg is a dependency of mini-letta (the ripgrep wheel): it must be installed"
    return request.param


@pytest.fixture
def box(ws: Path, engine: str) -> Toolbox:
    return Toolbox(ws)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "secret.py").write_text("def main(): secret\n")
    return folder


def test_grep_prints_path_line_and_text_skipping_vendored_folders_and_binaries(box):
    outcome = run(box, "grep", pattern=r"def \w+\(")
    assert not outcome.is_error
    assert outcome.text.splitlines() == [
        "src/util.py:1: def helper():",
        "src/pkg/app.py:3: def main():",
    ]
    named = run(box, "grep", pattern="main", path="image.bin")
    assert named.text == ("image.bin is a binary file that matches; its lines are not shown. "
                          "Look inside with bash (strings, xxd).")


def test_grep_in_a_folder_or_a_file(box):
    assert run(box, "grep", pattern="os", path="src/pkg").text.splitlines()[0] == "src/pkg/app.py:1: import os"
    assert run(box, "grep", pattern="main", path="README.md").text == "README.md:2: run main()"


def test_grep_without_matches_is_not_an_error(box):
    outcome = run(box, "grep", pattern="zebra", path="src")
    assert not outcome.is_error and outcome.text == "No matches for /zebra/ in src."


def test_grep_invalid_regex_is_a_clear_error(box):
    outcome = run(box, "grep", pattern="main(")
    assert outcome.is_error and outcome.text.startswith("invalid regular expression 'main('")


def test_grep_caps_matches_with_a_note(box, ws):
    (ws / "many.txt").write_text("hit\n" * 500)
    outcome = run(box, "grep", pattern="hit", path="many.txt")
    lines = outcome.text.splitlines()
    assert len(lines) == 201 and lines[-1].startswith("[stopped after 200 matches")


def test_grep_respects_the_output_cap(box, ws):
    (ws / "many.txt").write_text(("hit " + "h" * 200 + "\n") * 150)
    box.max_output_chars = 3_000
    outcome = run(box, "grep", pattern="hit", path="many.txt")
    assert len(outcome.text) <= 3_000 and "narrow the pattern" in outcome.text


def test_grep_shows_the_match_inside_a_long_line(box, ws):
    (ws / "min.js").write_text("a" * 10_000 + "NEEDLE" + "b" * 10_000)
    outcome = run(box, "grep", pattern="NEEDLE")
    assert "NEEDLE" in outcome.text and len(outcome.text) < 400


def test_grep_never_follows_symlinks_out(box, ws, outside):
    (ws / "out_dir").symlink_to(outside)
    (ws / "out_file.py").symlink_to(outside / "secret.py")
    assert run(box, "grep", pattern="secret").text.startswith("No matches")
    outcome = run(box, "grep", pattern="secret", path="out_dir")
    assert outcome.is_error and "outside the workspace" in outcome.text
    assert "outside the workspace" in run(box, "grep", pattern="x", path="../elsewhere").text


def test_glob_supports_double_star_braces_and_sorts_newest_first(box, ws):
    os.utime(ws / "src/util.py", (1_000, 1_000))
    os.utime(ws / "src/pkg/app.py", (2_000, 2_000))
    os.utime(ws / "README.md", (3_000, 3_000))
    assert run(box, "glob", pattern="**/*.py").text.splitlines() == ["src/pkg/app.py", "src/util.py"]
    assert run(box, "glob", pattern="**/*.{md,py}").text.splitlines() == ["README.md", "src/pkg/app.py",
                                                                         "src/util.py"]
    assert run(box, "glob", pattern="src/*.py").text == "src/util.py"
    assert run(box, "glob", pattern="src/**").text.splitlines() == ["src/pkg/app.py", "src/util.py"]
    assert run(box, "glob", pattern="README.md").text == "README.md"


def test_glob_skips_vendored_folders_unless_named(box):
    assert run(box, "glob", pattern="**/hidden.py").text == "No files match **/hidden.py."
    assert run(box, "glob", pattern="node_modules/**/*.py").text == "node_modules/lib/hidden.py"


def test_glob_without_matches(box):
    outcome = run(box, "glob", pattern="**/*.rs")
    assert not outcome.is_error and outcome.text == "No files match **/*.rs."


def test_glob_caps_results_with_a_note(box, ws):
    (ws / "gen").mkdir()
    for i in range(250):
        (ws / "gen" / f"f{i:03d}.txt").write_text("")
    lines = run(box, "glob", pattern="gen/*.txt").text.splitlines()
    assert len(lines) == 201 and lines[-1].startswith("[showing 200 of 250 files")


def test_glob_never_leaves_the_workspace(box, ws, outside):
    (ws / "out_dir").symlink_to(outside)
    (ws / "out_file.py").symlink_to(outside / "secret.py")
    assert set(run(box, "glob", pattern="**/*.py").text.splitlines()) == {"src/pkg/app.py", "src/util.py"}
    for pattern in ("../elsewhere/*.py", str(outside) + "/*.py", "out_dir/*.py"):
        outcome = run(box, "glob", pattern=pattern)
        assert outcome.is_error and "outside the workspace" in outcome.text, pattern


def finishes(call, seconds: float = 30.0):
    """``call()``'s result, or a failure if it is still running after ``seconds`` (a regex that
    backtracks would run for hours; a linear one answers in milliseconds)."""
    import threading
    result: list = []
    worker = threading.Thread(target=lambda: result.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"still running after {seconds} s"
    return result[0]


def test_a_catastrophic_pattern_returns_at_once(box, ws):
    (ws / "xs.txt").write_text("x" * 5_000 + "\n")
    outcome = finishes(lambda: run(box, "grep", pattern="(x+x+)+y"))
    assert outcome.text == "No matches for /(x+x+)+y/ in the workspace."


def test_a_fifo_in_the_tree_does_not_block(box, ws):
    os.mkfifo(ws / "src" / "pipe")
    outcome = finishes(lambda: run(box, "grep", pattern="helper", path="src"))
    assert outcome.text == "src/util.py:1: def helper():"
    assert "src/pipe" not in finishes(lambda: run(box, "glob", pattern="src/*")).text


def test_grep_options_filter_case_context_and_modes(box, ws):
    (ws / "src/pkg/notes.md").write_text("Main idea\nsecond\n")
    assert run(box, "grep", pattern="main", glob="*.md").text == "README.md:2: run main()"
    assert run(box, "grep", pattern="main", glob="src/**/*.{md,py}", ignore_case=True).text.splitlines() == [
        "src/pkg/app.py:3: def main():", "src/pkg/notes.md:1: Main idea"]
    assert run(box, "grep", pattern="getcwd", context=1).text.splitlines() == [
        "src/pkg/app.py-3- def main():", "src/pkg/app.py:4:     return os.getcwd()"]
    assert run(box, "grep", pattern="main", output_mode="files_with_matches").text.splitlines() == [
        "README.md", "src/pkg/app.py"]
    (ws / "src/util.py").write_text("main main\nmain\n")
    assert run(box, "grep", pattern="main", output_mode="count", path="src").text.splitlines() == [
        "src/util.py: 2", "src/pkg/app.py: 1"]
    limited = run(box, "grep", pattern="main", path="src", head_limit=1).text.splitlines()
    assert limited == ["src/util.py:1: main main", "[stopped after 1 matches; more exist: narrow the pattern or the path]"]
    assert "output_mode must be one of" in run(box, "grep", pattern="x", output_mode="lines").text


def test_the_fallback_says_once_why_it_is_slower(ws, monkeypatch):
    monkeypatch.setenv("MINI_LETTA_RG", str(ws / "no-such-rg"))
    box = Toolbox(ws)
    first = box.run(ToolCall("c1", "grep", json.dumps({"pattern": "helper"}))).text.splitlines()
    assert first[0].startswith("[ripgrep could not run") and first[1:] == ["src/util.py:1: def helper():"]
    assert box.run(ToolCall("c2", "grep", json.dumps({"pattern": "helper"}))).text == "src/util.py:1: def helper():"


def test_ripgrep_honours_gitignore_and_hidden_files(ws, monkeypatch):
    monkeypatch.delenv("MINI_LETTA_RG", raising=False)
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "build").mkdir()
    (ws / "build" / "gen.py").write_text("def generated():\n")
    (ws / "debug.log").write_text("def logged():\n")
    (ws / ".github").mkdir()
    (ws / ".github" / "ci.py").write_text("def workflow():\n")
    box = Toolbox(ws)
    assert run(box, "grep", pattern=r"def \w+\(", glob="*.py").text.splitlines() == [
        "src/util.py:1: def helper():", "src/pkg/app.py:3: def main():"]
    assert set(run(box, "glob", pattern="**/*.{py,log}").text.splitlines()) == {"src/pkg/app.py", "src/util.py"}
    # A hidden folder is searched when the glob names it.
    assert run(box, "glob", pattern=".github/*.py").text == ".github/ci.py"
    assert run(box, "grep", pattern="workflow", glob=".github/*.py").text == ".github/ci.py:1: def workflow():"


def test_hidden_files_stay_out_of_a_filtered_search_unless_named(box, ws):
    (ws / ".secrets.py").write_text("def hidden_helper():\n")
    assert run(box, "grep", pattern="hidden_helper", glob="*.py").text == \
        "No matches for /hidden_helper/ in the workspace."
    assert run(box, "grep", pattern="hidden_helper", glob=".*.py").text == ".secrets.py:1: def hidden_helper():"
    assert "secrets" not in run(box, "glob", pattern="**/*.py").text
    assert run(box, "grep", pattern="x", glob="*.nothing").text == "No matches for /x/ in the workspace."


def test_grep_over_many_files_shows_the_first_in_path_order_and_says_more_exist(box, ws):
    (ws / "many").mkdir()
    for index in range(300):
        (ws / "many" / f"f{index:03d}.txt").write_text("hit\nhit\n")
    lines = run(box, "grep", pattern="hit", path="many").text.splitlines()
    assert lines[:3] == ["many/f000.txt:1: hit", "many/f000.txt:2: hit", "many/f001.txt:1: hit"]
    assert len(lines) == 201 and lines[199] == "many/f099.txt:2: hit"
    assert lines[-1] == "[stopped after 200 matches; more exist: narrow the pattern or the path]"


def test_binary_files_that_match_are_counted_and_named_when_no_text_file_matches(box, ws):
    (ws / "blobs").mkdir()
    # The NUL comes first and the match a megabyte later: rg stops reading at the NUL while walking,
    # so the count needs the whole file searched.
    (ws / "blobs/late.so").write_bytes(b"\0ELF" + b"\x01" * 1_000_000 + b"zebra_symbol\0")
    (ws / "blobs/other.so").write_bytes(b"\0ELF nothing here\0")
    assert run(box, "grep", pattern="zebra_symbol").text == (
        "No text matches for /zebra_symbol/ in the workspace; "
        "1 binary file matches (lines not shown): blobs/late.so.")
    assert run(box, "grep", pattern="nothing here", path="blobs").text == (
        "No text matches for /nothing here/ in blobs; 1 binary file matches (lines not shown): blobs/other.so.")
    assert run(box, "grep", pattern="zebra_symbol", glob="*.py").text == \
        "No matches for /zebra_symbol/ in the workspace."
    assert run(box, "grep", pattern="no such words").text == "No matches for /no such words/ in the workspace."
    # With text matches the result is the text matches alone, in every mode.
    (ws / "notes.txt").write_text("zebra_symbol is in late.so\n")
    for mode, only in [("content", "notes.txt:1: zebra_symbol is in late.so"), ("files_with_matches", "notes.txt"),
                       ("count", "notes.txt: 1")]:
        assert run(box, "grep", pattern="zebra_symbol", output_mode=mode).text == only, mode


def test_many_binary_files_are_counted_with_the_first_names_that_fit(box, ws):
    (ws / "bins").mkdir()
    for index in range(40):
        (ws / "bins" / f"lib{index:02d}.so").write_bytes(b"\0\0data: needle\0")
    note = run(box, "grep", pattern="needle").text
    head = "No text matches for /needle/ in the workspace; 40 binary files match (lines not shown): "
    assert note.startswith(head) and note.endswith(" more.")
    names, more = note[len(head):-len(" more.")].rsplit(" and ", 1)
    listed = names.split(", ")
    assert listed == [f"bins/lib{index:02d}.so" for index in range(len(listed))]
    assert len(listed) + int(more) == 40 and len(listed) >= 3


def test_files_whose_names_are_not_utf8_are_found_and_shown_printable(box, ws):
    root = os.fsencode(ws)
    with open(os.path.join(root, b"src", b"caf\xe9.py"), "wb") as stream:
        stream.write(b"def menu():\n    return 'cr\xe8me'\n")
    with open(os.path.join(root, b"src", b"two\nlines.py"), "wb") as stream:
        stream.write(b"def menu_two():\n")
    assert run(box, "grep", pattern=r"def menu", path="src").text.splitlines() == [
        "src/caf\\xe9.py:1: def menu():", "src/two\\x0alines.py:1: def menu_two():"]
    assert run(box, "grep", pattern="return 'cr", path="src", context=1).text.splitlines() == [
        "src/caf\\xe9.py-1- def menu():", "src/caf\\xe9.py:2:     return 'cr\ufffdme'"]
    assert run(box, "grep", pattern="menu", output_mode="files_with_matches").text.splitlines() == [
        "src/caf\\xe9.py", "src/two\\x0alines.py"]
    os.utime(os.path.join(root, b"src", b"caf\xe9.py"), (5_000, 5_000))
    os.utime(os.path.join(root, b"src", b"two\nlines.py"), (4_000, 4_000))
    os.utime(ws / "src/util.py", (3_000, 3_000))
    assert run(box, "glob", pattern="src/*.py").text.splitlines() == [
        "src/caf\\xe9.py", "src/two\\x0alines.py", "src/util.py"]


def _newest_first_reference(ws: Path, patterns: list[str], limit: int = 200) -> list[str]:
    """glob's order as it was before rg sorted (every file stat'ed in Python, newest first, ties
    by name), over the files that fnmatch says match: what the faster listing must reproduce."""
    import fnmatch
    times = {}
    for folder, _, names in os.walk(ws):
        for name in names:
            rel = os.path.relpath(os.path.join(folder, name), ws)
            if any(fnmatch.fnmatchcase(rel, p) and "/" not in rel[len(p.split("*")[0]):] for p in patterns):
                times[rel] = os.stat(os.path.join(ws, rel)).st_mtime
    ordered = sorted(times, key=lambda rel: (-times[rel], rel))
    shown = ordered[:limit]
    return shown + ([f"[showing {limit} of {len(ordered):,} files, newest first; narrow the pattern]"]
                    if len(ordered) > limit else [])


def test_glob_order_matches_a_full_sort_with_ties_at_the_cap(box, ws):
    for folder in ("gen", "other"):
        (ws / folder).mkdir()
    base_ns = 1_700_000_000 * 10**9
    for index in range(450):
        for folder, suffix in (("gen", "txt"), ("gen", "log"), ("other", "log")):
            if folder == "other" and index % 5:
                continue
            path = ws / folder / f"f{(index * 37) % 450:03d}.{suffix}"
            path.write_text("")
            # Groups of 7 share a second (ties at the 200th file); within a group the nanoseconds
            # differ by less than a float can tell, so they tie in Python and not in rg.
            ns = base_ns + (index // 7) * 10**9 + index % 3
            os.utime(path, ns=(ns, ns))
    for pattern, parts in [("gen/*.txt", ["gen/*.txt"]), ("gen/*.{txt,log}", ["gen/*.txt", "gen/*.log"]),
                           ("{gen/*.txt,other/*.log}", ["gen/*.txt", "other/*.log"])]:
        assert run(box, "glob", pattern=pattern).text.splitlines() == _newest_first_reference(ws, parts), pattern


def test_binary_files_over_128_mb_are_searched_only_when_named(box, ws):
    with open(ws / "disk.img", "wb") as stream:  # sparse: 200 MB of zeros after a line of text
        stream.write(b"needle_on_disk\n")
        stream.truncate(200 * 1024 * 1024)
    assert run(box, "grep", pattern="needle_on_disk").text == "No matches for /needle_on_disk/ in the workspace."
    assert run(box, "grep", pattern="needle_on_disk", path="disk.img").text == (
        "disk.img is a binary file that matches; its lines are not shown. Look inside with bash (strings, xxd).")


def test_files_named_as_source_are_not_searched_as_binary(box, ws):
    # A NUL byte in a .py file is a stray byte, not a binary file the model is after; the other
    # binary file still is searched, and both engines answer alike.
    (ws / "stray.py").write_bytes(b"\0needle_in_source\n")
    (ws / "lib.so").write_bytes(b"\0ELF needle_in_source\0")
    assert run(box, "grep", pattern="needle_in_source").text == (
        "No text matches for /needle_in_source/ in the workspace; 1 binary file matches (lines not shown): lib.so.")


def test_a_file_gone_before_it_is_stated_is_left_out_of_the_total_once(tmp_path):
    # Two brace groups can list one file (src/**/*.py and **/*.py); if it vanishes between rg's
    # listing and the stat, the "of N files" total loses it once, not once per listing.
    from mini_letta.toolbox.search import _newest_first

    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("x")
    newest, total = _newest_first(str(tmp_path), [["a.py", "gone.py"], ["gone.py", "b.py"]], limit=10)
    assert sorted(newest) == ["a.py", "b.py"] and total == 2


def test_a_text_file_with_a_stray_nul_is_still_searched_past_it(box, ws, engine):
    # rg stops reading at a NUL byte; a log or .txt file with one is not source code, so the
    # search for binary files that match still reads it to the end and names it. (The walker
    # tells binary files by their first bytes only, so it shows the line itself.)
    (ws / "run.txt").write_bytes(b"started\n" * 2000 + b"\0" + b"\nfailed: disk_quota_exceeded\n")
    assert run(box, "grep", pattern="disk_quota_exceeded").text == (
        "No text matches for /disk_quota_exceeded/ in the workspace; "
        "1 binary file matches (lines not shown): run.txt." if engine == "rg"
        else "run.txt:2002: failed: disk_quota_exceeded")
