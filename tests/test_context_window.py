"""Window resolution order (seed 004) and its environment overrides."""

import pytest

from mini_letta.notices import Notices
from mini_letta.context import compaction_threshold, resolve_window
from mini_letta.resources import data
from mini_letta.settings import SETTINGS


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5-20250929", 200_000),
        ("claude-3-5-haiku-latest", 200_000),
        ("gpt-4o", 128_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4", 8_192),
        ("gpt-4-turbo", 128_000),
        ("gemini-2.5-pro", 1_048_576),
        ("deepseek-chat", 128_000),
        ("llama3.1:8b", 131_072),
        ("llama3.2:latest", 131_072),
        ("meta-llama/Llama-3.1-70B-Instruct", 131_072),
        ("qwen2.5-coder:7b", 32_768),
        ("mistral:7b", 32_768),
        ("mistral-large-latest", 131_072),
    ],
)
def test_table_picks_the_longest_matching_family(model, window):
    info = resolve_window(model)
    assert info.window == window
    assert info.model_limit == window
    assert info.source.startswith("built-in table")


def test_table_covers_every_required_family():
    keys = data("model_windows.json")["windows"]
    for family in ("claude", "gpt", "gemini", "deepseek", "llama", "qwen", "mistral"):
        assert any(family in key for key in keys), family


def test_unknown_model_gets_the_default():
    info = resolve_window("some-new-model")
    assert (info.window, info.source, info.model_limit) == (SETTINGS.default_window, "default", None)


def test_served_window_beats_the_table_even_when_small():
    info = resolve_window("llama3.2:latest", served_window=4096)
    assert info.window == 4096
    assert info.source == "served by the provider"
    assert info.model_limit == 4096


@pytest.mark.parametrize("served", [None, 0, -5])
def test_missing_or_nonsense_served_window_is_ignored(served):
    assert resolve_window("llama3.2", served_window=served).window == 131_072


def test_one_million_suffix_beats_served_window_and_table():
    info = resolve_window("claude-sonnet-4-5[1m]", served_window=200_000)
    assert info.window == 1_000_000
    assert info.source == "model name suffix [1m]"


def test_max_context_tokens_env_beats_everything_else(monkeypatch):
    monkeypatch.setenv("CODEAGENT_MAX_CONTEXT_TOKENS", "500000")
    info = resolve_window("claude-sonnet-4-5[1m]", served_window=4096)
    assert info.window == 500_000
    assert info.source == "CODEAGENT_MAX_CONTEXT_TOKENS"
    assert info.model_limit == 4096  # what the server said is still shown


def test_model_limit_env_replaces_the_resolved_window(monkeypatch):
    monkeypatch.setenv("CODEAGENT_MAX_CONTEXT_TOKENS", "500000")
    monkeypatch.setenv("CODEAGENT_MODEL_LIMIT", "64000")
    info = resolve_window("gpt-4o")
    assert info.window == 64_000
    assert info.auto_compact_window == 64_000
    assert info.source == "CODEAGENT_MODEL_LIMIT"


def test_auto_compact_window_caps_only_the_threshold_window(monkeypatch):
    monkeypatch.setenv("CODEAGENT_AUTO_COMPACT_WINDOW", "100000")
    info = resolve_window("claude-sonnet-4-5")
    assert info.window == 200_000
    assert info.auto_compact_window == 100_000
    assert info.threshold == compaction_threshold(100_000) == 83_616


def test_auto_compact_window_never_raises_the_window(monkeypatch):
    monkeypatch.setenv("CODEAGENT_AUTO_COMPACT_WINDOW", "1000000")
    info = resolve_window("gpt-4o")
    assert info.auto_compact_window == 128_000
    assert info.threshold == 111_616


@pytest.mark.parametrize(
    "name", ["CODEAGENT_MAX_CONTEXT_TOKENS", "CODEAGENT_MODEL_LIMIT", "CODEAGENT_AUTO_COMPACT_WINDOW"]
)
@pytest.mark.parametrize("bad", ["lots", "0", "-100", "1e309", "12.5", "nan"])
def test_bad_values_are_reported_once_and_ignored(monkeypatch, name, bad):
    monkeypatch.setenv(name, bad)
    channel = Notices()
    first = resolve_window("gpt-4o", served_window=None, say=channel.say)
    second = resolve_window("gpt-4o", served_window=None, say=channel.say)
    assert first.window == second.window == 128_000
    assert first.auto_compact_window == 128_000
    notices = channel.take()
    assert len(notices) == 1
    assert name in notices[0]


def test_underscored_number_is_accepted(monkeypatch):
    monkeypatch.setenv("CODEAGENT_MAX_CONTEXT_TOKENS", "32_000")
    channel = Notices()
    assert resolve_window("gpt-4o", say=channel.say).window == 32_000
    assert channel.take() == []
