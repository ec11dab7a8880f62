"""Compaction under the user's control (issue 14): where it fires (CODEAGENT_AUTO_COMPACT_PCT,
--compact-at)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from agent_support import make_agent, request_tokens, script, sized_text

from mini_letta.notices import Notices
from mini_letta.context import compaction_threshold, output_reserve, resolve_window
from mini_letta.context.threshold import compaction_trigger
from mini_letta.messages import Message

WINDOW = 20_000


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("CODEAGENT_AUTO_COMPACT_PCT", "CODEAGENT_AUTO_COMPACT_WINDOW", "CODEAGENT_MAX_CONTEXT_TOKENS",
                 "CODEAGENT_MODEL_LIMIT", "CODEAGENT_DISABLE_COMPACT"):
        monkeypatch.delenv(name, raising=False)


# --- the trigger point ----------------------------------------------------------------------------
@pytest.mark.parametrize("window", [200_000, 32_000, 2_000, 8_192, 128_000])
def test_without_a_percentage_the_seed_formula_is_the_threshold(window):
    assert compaction_trigger(window, window) == compaction_threshold(window)
    assert resolve_window("m", window).threshold == compaction_threshold(window)


@pytest.mark.parametrize(("percent", "threshold"), [(50, 100_000), (90, 180_000), (70.5, 141_000)])
def test_a_percentage_moves_the_threshold_both_ways(percent, threshold):
    assert compaction_trigger(200_000, 200_000, percent) == threshold


# The reply's room is window // 8 between 256 and 8,192 tokens; 99.9% of each window is above the
# window less that room, so both are clamped to it exactly; half of the window is not clamped.
@pytest.mark.parametrize(("window", "clamped", "half"), [
    (200_000, 191_808, 100_000), (16_384, 14_336, 8_192), (4_096, 3_584, 2_048), (2_000, 1_744, 1_000)])
def test_a_high_percentage_is_clamped_so_a_whole_reply_still_fits(window, clamped, half):
    assert window - output_reserve(window) == clamped
    assert compaction_trigger(window, window, 100) == clamped
    assert compaction_trigger(window, window, 99.9) == clamped
    assert compaction_trigger(window, window, 50) == half


def test_the_percentage_applies_to_the_capped_auto_compact_window(monkeypatch):
    monkeypatch.setenv("CODEAGENT_AUTO_COMPACT_WINDOW", "100000")
    monkeypatch.setenv("CODEAGENT_AUTO_COMPACT_PCT", "50")
    assert resolve_window("m", 200_000).threshold == 50_000


def test_the_flag_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("CODEAGENT_AUTO_COMPACT_PCT", "50")
    assert resolve_window("m", 200_000, compact_at="60%").threshold == 120_000


@pytest.mark.parametrize("raw", ["abc", "0", "-5", "150", "nan", "inf", "50 percent"])
def test_a_bad_percentage_gives_one_notice_and_keeps_the_default(monkeypatch, raw):
    monkeypatch.setenv("CODEAGENT_AUTO_COMPACT_PCT", raw)
    channel = Notices()
    first = resolve_window("m", 200_000, say=channel.say)
    second = resolve_window("m", 200_000, say=channel.say)
    assert first.threshold == second.threshold == compaction_threshold(200_000)
    notices = channel.take()
    assert len(notices) == 1 and "CODEAGENT_AUTO_COMPACT_PCT" in notices[0] and raw in notices[0]


def test_a_learned_window_keeps_the_percentage(monkeypatch):
    monkeypatch.setenv("CODEAGENT_AUTO_COMPACT_PCT", "50")
    assert resolve_window("m", 200_000).learned(40_000).threshold == 20_000


# --- through the agent loop -----------------------------------------------------------------------
def _first_compaction(tmp_path, monkeypatch, percent: str | None):
    """Turns of ~1,000 tokens each in a 20k window; the request size at which compaction first ran,
    the threshold and every chat request with its max_tokens."""
    if percent is not None:
        monkeypatch.setenv("CODEAGENT_AUTO_COMPACT_PCT", percent)
    replies = [Message.assistant(f"answer {n}: " + sized_text(500, seed=n)) for n in range(30)]
    provider = script(replies, window=WINDOW, count=request_tokens)
    workspace = tmp_path / (percent or "default")
    workspace.mkdir()
    agent = make_agent(provider, workspace, lean_system="You are a coding agent.", tool_names=())
    sizes = []
    for turn in range(30):
        before = agent.context_tokens()
        result = agent.run_turn(f"question {turn}: " + sized_text(500, seed=turn + 3))
        if result.compactions:
            sizes.append(before)
            break
    chat = [r for r in provider.requests if r.purpose == "chat"]
    return turn, agent.budget.threshold, agent.context_state(), chat


@pytest.mark.parametrize(("percent", "threshold"), [(None, 16_000), ("50", 10_000),
                                                    ("95", WINDOW - output_reserve(WINDOW))])
def test_the_percentage_decides_when_compaction_fires_and_the_reply_always_fits(tmp_path, monkeypatch, percent,
                                                                               threshold):
    turn, used, state, chat = _first_compaction(tmp_path, monkeypatch, percent)
    assert used == threshold and state.threshold == threshold
    sizes = [request_tokens(r) for r in chat]
    # Every request up to the compacting one stayed at or under the threshold, the one that
    # triggered it would not have, and prompt + max_tokens always fit the window.
    assert all(size <= threshold for size in sizes)
    assert all(size + r.max_tokens <= WINDOW for size, r in zip(sizes, chat))
    assert max(sizes[:-1]) + 1_000 > threshold * 0.9


def test_fifty_fires_before_the_default_and_ninety_five_after(tmp_path, monkeypatch):
    turns = {}
    for percent in (None, "50", "95"):
        turns[percent] = _first_compaction(tmp_path, monkeypatch, percent)[0]
    assert turns["50"] < turns[None] < turns["95"]


def test_the_status_bars_zero_follows_the_percentage(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEAGENT_AUTO_COMPACT_PCT", "50")
    provider = script([], window=WINDOW, count=request_tokens)
    agent = make_agent(provider, tmp_path, lean_system="You are a coding agent.", tool_names=())
    assert agent.budget.limit == 10_000
    assert agent.budget.state(10_000).percent_left == 0 and agent.budget.state(10_000).level != "blocked"
    assert agent.budget.state(10_001).level == "blocked"
    assert agent.budget.state(5_000).percent_left == 50


# --- the command line ------------------------------------------------------------------------------
def _print_json(tmp_path, *args, env=None):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CODEAGENT_"))}
    full_env.update({"MINI_LETTA_HOME": str(tmp_path / "home")}, **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "mini_letta", "-p", "hello", "--provider", "demo",
                           "--output-format", "json", *args],
                          cwd=workspace, env=full_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize(("env", "args", "threshold"), [
    ({}, (), 13_108),
    ({"CODEAGENT_AUTO_COMPACT_PCT": "50"}, (), 8_192),
    ({"CODEAGENT_AUTO_COMPACT_PCT": "95"}, (), 16_384 - 2_048),  # clamped: window less the reply
    ({}, ("--compact-at", "60"), 9_830),
])
def test_print_mode_json_threshold_follows_the_setting(tmp_path, env, args, threshold):
    data, _ = _print_json(tmp_path, *args, env=env)
    assert data["context"]["threshold"] == threshold


def test_a_bad_flag_value_is_one_notice_and_the_default_threshold(tmp_path):
    data, stderr = _print_json(tmp_path, "--compact-at", "eighty")
    assert data["context"]["threshold"] == 13_108
    assert stderr.count("--compact-at") == 1


# --- /compact --preview: computed on the side, applied later --------------------------------------
def _previewable(tmp_path):
    from mini_letta.sessions.store import SessionWriter

    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    provider = script([f"reply {n}: " + sized_text(200, seed=n) for n in range(12)])
    session = SessionWriter.create(home, workspace, provider.name, provider.model)
    agent = make_agent(provider, workspace, window=200_000, session=session)
    for n in range(12):
        agent.run_turn(f"prompt {n}: " + sized_text(200, seed=n + 3))
    return agent, provider


def test_a_preview_changes_nothing_until_it_is_applied(tmp_path):
    from mini_letta.compaction.plan import CompactionResult

    agent, provider = _previewable(tmp_path)
    before = list(agent.conversation.messages)
    tokens = agent.context_tokens()
    session_text = agent.session.path.read_text()

    plan = agent.preview_compaction("the parser")

    assert isinstance(plan, CompactionResult) and plan.tokens_after < plan.tokens_before
    assert agent.conversation.messages == before and agent.context_tokens() == tokens
    assert agent.session.path.read_text() == session_text and agent.compactions == []
    assert "the parser" in [r for r in provider.requests if r.purpose == "summary"][0].messages[-1].text
    assert plan.summarised() and plan.kept() and len(plan.summarised()) + len(plan.kept()) == len(before)

    record = agent.apply_compaction(plan)

    assert not record.edited and "summarize" in record.layers
    assert agent.conversation.messages[0].kind == "summary" and agent.compactions == [record]
    assert agent.context_tokens() == record.tokens_after < tokens
    saved = [json.loads(line) for line in agent.session.path.read_text().splitlines()]
    assert [e["record"]["edited"] for e in saved if e.get("type") == "compaction"] == [False]


def test_an_edited_summary_is_applied_and_recorded_as_edited(tmp_path):
    agent, _ = _previewable(tmp_path)
    plan = agent.preview_compaction()
    draft = plan.summary

    record = agent.apply_compaction(plan, "We refactored the parser; next: the cache tests.")

    summary = agent.conversation.messages[0]
    assert record.edited and summary.meta["edited"] and summary.meta["summary_body"].startswith("We refactored")
    assert "We refactored the parser; next: the cache tests." in summary.text and draft not in summary.text
    saved = [json.loads(line) for line in agent.session.path.read_text().splitlines()]
    [compaction] = [e for e in saved if e.get("type") == "compaction"]
    assert compaction["record"]["edited"] and "We refactored the parser" in compaction["summary"]["text"]


def test_a_preview_does_not_apply_once_the_conversation_moved_on(tmp_path):
    agent, provider = _previewable(tmp_path)
    plan = agent.preview_compaction()
    provider.enqueue("one more reply")
    agent.run_turn("one more prompt")
    after_turn = list(agent.conversation.messages)

    with pytest.raises(ValueError, match="changed since the preview"):
        agent.apply_compaction(plan)
    assert agent.conversation.messages == after_turn and agent.compactions == []
