"""Where the window came from, and saying so when it is a guess (issue 10 §3)."""

from __future__ import annotations

from mini_letta.context import ContextBudget, counter_for_model, resolve_window
from mini_letta.context.window import LEARNED_SOURCE, split_one_million_suffix


def test_an_unknown_model_gets_the_default_window_marked_as_a_guess():
    info = resolve_window("my-finetune", None)
    assert (info.window, info.guessed) == (200_000, True)


def test_the_table_is_a_guess_for_a_server_of_the_users_own_but_not_for_the_hosted_api():
    assert resolve_window("llama-3.1-8b-instruct", None, custom_server=True).guessed
    assert not resolve_window("gpt-4.1", None, custom_server=False).guessed


def test_a_served_window_names_its_source_and_is_no_guess():
    info = resolve_window("anything", 4_096, served_source="llama.cpp /props n_ctx", custom_server=True)
    assert (info.window, info.guessed) == (4_096, False) and "llama.cpp /props n_ctx" in info.source


def test_an_override_is_no_guess(monkeypatch):
    monkeypatch.setenv("CODEAGENT_MAX_CONTEXT_TOKENS", "9000")
    info = resolve_window("my-finetune", None, custom_server=True)
    assert (info.window, info.guessed) == (9_000, False)


def test_the_status_label_marks_a_guess():
    budget = ContextBudget(counter_for_model("x"), resolve_window("my-finetune"), auto_compact=True)
    assert budget.window_label == "~200k?"
    assert budget.learn_window(8_192) and budget.window_label == "8.2k"


def test_a_learned_window_replaces_even_an_override_and_keeps_the_auto_compact_cap(monkeypatch):
    monkeypatch.setenv("CODEAGENT_MAX_CONTEXT_TOKENS", "32000")
    monkeypatch.setenv("CODEAGENT_AUTO_COMPACT_WINDOW", "3000")
    budget = ContextBudget(counter_for_model("x"), resolve_window("m"), auto_compact=True)
    assert budget.learn_window(4_096)
    info = budget.window_info
    assert (info.window, info.source, info.auto_compact_window) == (4_096, LEARNED_SOURCE, 3_000)
    assert not budget.learn_window(8_000)  # a rejection never raises the window
    assert budget.window == 4_096


def test_reply_budget_never_exceeds_what_is_left_of_the_window():
    budget = ContextBudget(counter_for_model("x"), resolve_window("m", 4_096), auto_compact=False)
    assert budget.reply_budget(1_000) == 512
    # What is left (196) less the margin for what our estimate misses: 1% of the window, at least 48.
    assert budget.reply_budget(3_900) == 196 - 48 and budget.reply_budget(5_000) == 0
    wide = ContextBudget(counter_for_model("x"), resolve_window("m", 32_768), auto_compact=False)
    assert wide.reply_budget(32_000) == 768 - 327


def test_the_one_million_suffix_is_split_off():
    assert split_one_million_suffix("claude-sonnet-4-5[1m]") == ("claude-sonnet-4-5", True)
    assert split_one_million_suffix("gpt-4.1") == ("gpt-4.1", False)


def test_the_status_bar_says_in_one_word_where_the_window_came_from(monkeypatch):
    def origin(info) -> str:
        return ContextBudget(counter_for_model("x"), info, auto_compact=True).window_origin

    assert origin(resolve_window("my-finetune")) == "guessed"
    assert origin(resolve_window("m", 4_096, served_source="llama.cpp /props n_ctx")) == "served"
    assert origin(resolve_window("gpt-4.1")) == "published"
    assert origin(resolve_window("m").learned(2_048)) == "learned"
    monkeypatch.setenv("CODEAGENT_MAX_CONTEXT_TOKENS", "9000")
    assert origin(resolve_window("m")) == "set"
