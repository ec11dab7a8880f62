"""``@path`` (issue 26): completion from the workspace's files (gitignore-aware), and the file's
content attached to the message."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mini_letta.attachments import attach_mentions, workspace_paths


def make_tree(root):
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 42\n")
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_bytes(b"\0\1\2")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "secret.txt").write_text("x")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("x")
    (root / "README.md").write_text("# readme\n")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_in_a_git_tree_the_paths_are_git_ls_files_so_gitignore_is_honoured(tmp_path):
    make_tree(tmp_path)
    (tmp_path / ".gitignore").write_text("build/\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "src/app.py"], cwd=tmp_path, check=True)
    paths = workspace_paths(tmp_path)
    assert "src/app.py" in paths and "README.md" in paths  # tracked, and untracked but not ignored
    assert not any(p.startswith("build/") for p in paths)


def test_outside_git_the_walk_skips_hidden_and_generated_folders(tmp_path):
    make_tree(tmp_path)
    paths = workspace_paths(tmp_path)
    assert paths == ["README.md", "build/out.bin", "src/app.py"]


def test_a_mentioned_file_is_attached_and_other_at_words_are_left_alone(tmp_path):
    make_tree(tmp_path)
    attached = attach_mentions("explain @src/app.py, then mail ada@example.com or @nobody", tmp_path, 10_000)
    assert attached.paths == ["src/app.py"] and attached.problems == []
    assert attached.text.startswith("explain @src/app.py, then mail ada@example.com or @nobody")
    assert '<file path="src/app.py">' in attached.text and "return 42" in attached.text


def test_a_binary_or_outside_file_is_not_attached_and_says_why(tmp_path):
    make_tree(tmp_path)
    (tmp_path.parent / "outside.txt").write_text("not yours")
    attached = attach_mentions("see @build/out.bin and @../outside.txt", tmp_path, 10_000)
    assert attached.paths == [] and "not yours" not in attached.text
    binary, outside = attached.problems
    assert "build/out.bin" in binary
    assert outside == (f"@../outside.txt was not attached: {tmp_path.parent / 'outside.txt'} is outside the "
                       f"workspace {tmp_path}; only files inside it are attached (/add-dir adds a folder).")


def test_a_file_cut_to_the_room_says_which_lines_were_attached(tmp_path):
    (tmp_path / "long.py").write_text("".join(f"line_{n} = {n}\n" for n in range(1, 305)))
    attached = attach_mentions("explain @long.py", tmp_path, 400)
    assert attached.paths == ["long.py"]
    numbered = [line for line in attached.text.splitlines() if line.strip().split("\t")[0].isdigit()]
    assert len(numbered) == 5  # what 400 characters hold, less the note's room
    assert attached.described() == ["long.py (lines 1-5 of 304; 299 left out)"]
    (tmp_path / "longer.py").write_text("x = 1\n" * 2_500)  # over read_file's 2,000 lines
    assert attach_mentions("@longer.py", tmp_path, 10**7).partial == {"longer.py": "lines 1-2,000 of 2,500; 500 left out"}
    whole = attach_mentions("explain @long.py", tmp_path, 100_000)
    assert whole.partial == {} and whole.described() == ["long.py"]


def test_dense_code_is_cut_to_the_room_in_tokens_and_says_which_lines(tmp_path):
    from mini_letta.context.tokens import TokenCounter
    from mini_letta.toolbox.outcome import fit_tokens

    # Short numbered lines: about 2.4 characters a token, so a cap in characters at 4 a token overshoots.
    (tmp_path / "big.py").write_text("".join(f"def f{n}(x):\n    return x * {n}\n\n" for n in range(300)))
    count = TokenCounter().count_text
    by_chars = attach_mentions("see @big.py", tmp_path, 2_000 * 4)
    assert count(by_chars.text) > 2_000 * 1.3
    attached = attach_mentions("see @big.py", tmp_path, 2_000 * 4,
                               fit=lambda text: fit_tokens(text, 2_000, count, reader="read_file"))
    assert count(attached.text) <= 2_000 + 20  # the message's own words
    shown = attached.partial["big.py"]
    last = int(shown.split("-")[1].split(" ")[0].replace(",", ""))
    assert f"{last}\t" in attached.text and f"{last + 1}\t" not in attached.text
    assert shown == f"lines 1-{last:,} of 900; {900 - last:,} left out"


def test_a_file_in_a_folder_added_with_add_dir_is_attached(tmp_path):
    from mini_letta.toolbox.workspace import Workspace

    (tmp_path / "ws").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "util.py").write_text("HELPER = 1\n")
    refused = attach_mentions("see @../lib/util.py", tmp_path / "ws", 10_000)
    assert refused.paths == [] and "/add-dir" in refused.problems[0]
    ws = Workspace(tmp_path / "ws")
    ws.add(tmp_path / "lib")
    attached = attach_mentions("see @../lib/util.py", ws, 10_000)
    assert attached.problems == [] and "HELPER = 1" in attached.text
