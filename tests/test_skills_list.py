"""The skills list in the system prompt: within its share of the window, shortened first, then left out."""

from __future__ import annotations

import pytest

from mini_letta.context.tokens import TokenCounter
from mini_letta.settings import SETTINGS, SkillSettings
from mini_letta.skills.listing import list_cap, skill_list
from fakes import tokens as fake_tokens
from skills_support import many

COUNTER = TokenCounter()


# --- the list ---------------------------------------------------------------------------------------
def test_the_caps_are_the_anchors_numbers():
    assert (SETTINGS.skills.list_share, SETTINGS.skills.list_chars_unknown_window) == (0.02, 8_000)  # Codex
    assert SETTINGS.skills.reattach_tokens_per_skill == 5_000  # Claude Code
    assert list_cap(32_000).tokens == 640
    assert list_cap(None).chars == 8_000


@pytest.mark.parametrize("count", [COUNTER.count_text, fake_tokens.count_text])
def test_200_skills_in_a_32k_window_stay_within_the_cap_shortened_first(count):
    skills = many(200, "Reads the files, runs the checks and writes a careful report of what it found " * 3)
    listed = skill_list(skills, 32_000, count)
    assert count(listed.text) == listed.tokens <= 640
    assert listed.shortened == listed.shown > 0  # every description shown was shortened first
    assert "…" in listed.text and listed.left_out == 200 - listed.shown > 0
    assert f"({listed.left_out} more skills not listed for lack of room.)" in listed.text
    assert listed.notice() == (f"The skills list is kept within 640 tokens (2% of the 32,000-token window): "
                               f"{listed.shown} descriptions shortened and {listed.left_out} skills left out. "
                               "/skills shows them all.")


def test_shortening_alone_is_used_when_it_is_enough():
    skills = many(40, "A long description that goes on and on about what this skill is for, " * 4)
    listed = skill_list(skills, 32_000, COUNTER.count_text)
    assert listed.left_out == 0 and listed.shortened == 40 and listed.tokens <= 640
    # The longest length that fits: with one character more, some skills would have to go.
    longer = listed.description_chars + 1
    assert skill_list(skills, 32_000, COUNTER.count_text,
                      limits=SkillSettings(min_description_chars=longer, description_chars=longer)).left_out > 0


def test_a_list_that_fits_is_whole():
    skills = many(3, "Short.")
    listed = skill_list(skills, 200_000, COUNTER.count_text)
    assert (listed.shown, listed.shortened, listed.left_out, listed.notice()) == (3, 0, 0, None)
    assert "- skill-000: Short. (variant 0)" in listed.text


def test_at_4k_only_names_within_the_cap():
    skills = many(50, "Something the model would like to read.")
    listed = skill_list(skills, 4_096, COUNTER.count_text)
    assert listed.names_only and "Something" not in listed.text and "skill-000" in listed.text
    assert listed.tokens <= 81 and listed.left_out == 50 - listed.shown > 0
    assert "names only" in listed.notice()


def test_the_compact_floor_lists_names_only_in_any_window():
    listed = skill_list(many(3, "Described."), 200_000, COUNTER.count_text, compact=True)
    assert listed.names_only and listed.text.endswith("skill-000, skill-001, skill-002")


def test_an_unknown_window_caps_the_list_in_characters():
    listed = skill_list(many(200, "Words " * 40), None, COUNTER.count_text)
    assert len(listed.text) <= 8_000 and listed.shortened > 0


def test_no_skills_no_list():
    listed = skill_list([], 32_000, COUNTER.count_text)
    assert (listed.text, listed.tokens) == ("", 0)

