"""AGENTS.md / CLAUDE.md are loaded, labelled and capped with a note that gives the figures."""

import pytest

from mini_letta.notices import Notices
from mini_letta.instructions import load_instructions


def test_no_files_gives_empty_instructions(tmp_path):
    result = load_instructions(tmp_path)
    assert (result.text, result.sources, result.truncated) == ("", [], False)


def test_both_files_are_loaded_in_order_and_labelled(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Run pytest -q.\n")
    (tmp_path / "CLAUDE.md").write_text("Use British spelling.\n")
    result = load_instructions(tmp_path)
    assert result.sources == ["AGENTS.md", "CLAUDE.md"]
    assert result.truncated is False
    assert result.text == (
        '<project_instructions file="AGENTS.md">\nRun pytest -q.\n</project_instructions>\n\n'
        '<project_instructions file="CLAUDE.md">\nUse British spelling.\n</project_instructions>'
    )


def test_long_file_is_capped_with_a_note(tmp_path):
    (tmp_path / "AGENTS.md").write_text("x" * 60_000)
    result = load_instructions(tmp_path, cap_chars=48_000)
    assert result.truncated is True
    assert result.text.count("x") == 48_000
    assert "[AGENTS.md truncated: 48,000 of 60,000 chars shown]" in result.text


def test_cap_is_shared_so_the_second_file_gets_what_is_left(tmp_path):
    (tmp_path / "AGENTS.md").write_text("x" * 15_000)
    (tmp_path / "CLAUDE.md").write_text("z" * 10_000)
    result = load_instructions(tmp_path)  # default cap: 20,000
    assert result.text.count("x") == 15_000 and result.text.count("z") == 5_000
    assert "[CLAUDE.md truncated: 5,000 of 10,000 chars shown]" in result.text
    assert "AGENTS.md truncated" not in result.text


def test_cut_prefers_a_line_break_near_the_cap(tmp_path):
    lines = "".join(f"rule {i:04d}\n" for i in range(1000))  # 10 chars a line
    (tmp_path / "AGENTS.md").write_text(lines)
    result = load_instructions(tmp_path, cap_chars=1005)
    assert "rule 0099\n[AGENTS.md truncated: 1,000 of 9,999 chars shown]" in result.text


@pytest.mark.parametrize("how", ["symlink", "copy"])
def test_claude_md_identical_to_agents_md_is_included_once(tmp_path, how):
    (tmp_path / "AGENTS.md").write_text("Same rules.")
    if how == "symlink":
        (tmp_path / "CLAUDE.md").symlink_to(tmp_path / "AGENTS.md")
    else:
        (tmp_path / "CLAUDE.md").write_text("Same rules.")
    result = load_instructions(tmp_path)
    assert result.sources == ["AGENTS.md"]
    assert result.text.count("Same rules.") == 1


def test_unreadable_file_is_skipped_with_a_notice(tmp_path):
    (tmp_path / "AGENTS.md").mkdir()  # unreadable as a file, for root too
    (tmp_path / "CLAUDE.md").write_text("Still here.")
    channel = Notices()
    result = load_instructions(tmp_path, say=channel.say)
    assert result.sources == ["CLAUDE.md"]
    notices = channel.take()
    assert len(notices) == 1 and "AGENTS.md: it is a folder, not a regular file" in notices[0]
