"""Request estimates (usage-anchored, calibrated), levels, tool output caps, /context rows, floor."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_letta.context import (
    ContextBudget,
    TokenCounter,
    WindowInfo,
    compaction_threshold,
    output_reserve,
    should_compact,
)
from mini_letta.conversation import Conversation
from mini_letta.context.tokens import CHARS_PER_TOKEN
from mini_letta.messages import Message, ToolCall, ToolSpec, Usage
from mini_letta.settings import SETTINGS
from mini_letta.toolbox.outcome import cap_text, fit_tokens

SYSTEM = "You are a careful coding agent working in a repository."
TOOLS = [
    ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}}),
]


def window_info(window: int, auto_compact_window: int | None = None) -> WindowInfo:
    return WindowInfo(window, "test", window, auto_compact_window or window)


def make_budget(window: int = 200_000, *, auto_compact: bool = True, auto_compact_window: int | None = None):
    return ContextBudget(TokenCounter("o200k_base"), window_info(window, auto_compact_window), auto_compact=auto_compact)


def conversation_with_reply(usage: Usage) -> Conversation:
    conversation = Conversation()
    conversation.append(Message.user("Please look at the failing test in tests/test_app.py"))
    conversation.append(Message.assistant("I will read it.", [ToolCall("c1", "read", '{"path": "tests/test_app.py"}')], usage=usage))
    return conversation


# --- estimate --------------------------------------------------------------------------------------


def test_without_usage_estimate_is_floor_plus_local_message_counts():
    budget = make_budget()
    conversation = Conversation()
    conversation.append(Message.user("hello world"))
    conversation.append(Message.assistant("hi there"))
    estimate = budget.size(SYSTEM, TOOLS, conversation)
    floor = budget.counter.count_system(SYSTEM) + budget.counter.count_tools(TOOLS)
    messages = budget.counter.count_messages(conversation.messages)
    assert not estimate.anchored
    assert (estimate.floor, estimate.messages, estimate.total) == (floor, messages, floor + messages)
    assert estimate.total == (budget.calibration.floor(SYSTEM, TOOLS) + budget.counter.count_messages(conversation.messages))
    assert budget.counter.count_messages(conversation.messages) == messages


def test_estimate_anchors_on_usage_and_counts_only_later_messages():
    budget = make_budget()
    conversation = conversation_with_reply(Usage(input_tokens=5_000, output_tokens=40))
    result = conversation.append(Message.tool_result(ToolCall("c1", "read", "{}"), "def test():\n    assert 1 == 2\n"))
    estimate = budget.size(SYSTEM, TOOLS, conversation)
    assert estimate.anchored
    assert estimate.anchor_tokens == 5_040
    assert estimate.estimated_tail == budget.counter.count_message(result)
    assert estimate.total == 5_040 + budget.counter.count_message(result)
    assert estimate.messages == estimate.total - estimate.floor


def test_anthropic_cache_tokens_count_toward_the_context():
    budget = make_budget()
    # Anthropic: input_tokens excludes cache writes and reads.
    usage = Usage(input_tokens=100, output_tokens=50, cache_write_tokens=300, cache_read_tokens=600)
    estimate = budget.size(SYSTEM, TOOLS, conversation_with_reply(usage))
    assert estimate.anchor_tokens == estimate.total == 1_050


def test_openai_cached_tokens_are_not_counted_twice():
    budget = make_budget()
    prompt_tokens, cached_tokens, completion_tokens = 1_000, 600, 50  # prompt_tokens includes cached
    usage = Usage(input_tokens=prompt_tokens - cached_tokens, output_tokens=completion_tokens, cache_read_tokens=cached_tokens)
    estimate = budget.size(SYSTEM, TOOLS, conversation_with_reply(usage))
    assert estimate.total == prompt_tokens + completion_tokens


def test_zero_usage_from_a_local_server_is_no_anchor():
    budget = make_budget()
    conversation = conversation_with_reply(Usage())
    estimate = budget.size(SYSTEM, TOOLS, conversation)
    assert not estimate.anchored
    assert estimate.total == (budget.calibration.floor(SYSTEM, TOOLS) + budget.counter.count_messages(conversation.messages))


def test_usage_from_before_a_compaction_is_ignored():
    budget = make_budget()
    conversation = conversation_with_reply(Usage(input_tokens=150_000, output_tokens=500))
    kept = conversation.append(Message.tool_result(ToolCall("c1", "read", "{}"), "short result"))
    conversation.mark_boundary()
    summary = Message.user("Summary: the user asked to fix tests/test_app.py.", kind="summary")
    conversation.replace([summary, conversation.messages[1], kept])  # old assistant (with usage) kept

    estimate = budget.size(SYSTEM, TOOLS, conversation)
    assert not estimate.anchored
    assert estimate.total == (budget.calibration.floor(SYSTEM, TOOLS) + budget.counter.count_messages(conversation.messages))
    assert estimate.total < 1_000

    conversation.append(Message.assistant("Fixed.", usage=Usage(input_tokens=900, output_tokens=10)))
    assert budget.size(SYSTEM, TOOLS, conversation).total == 910


def test_edited_message_after_anchor_changes_the_estimate():
    budget = make_budget()
    conversation = conversation_with_reply(Usage(input_tokens=2_000, output_tokens=20))
    result = conversation.append(Message.tool_result(ToolCall("c1", "read", "{}"), "log line\n" * 2_000))
    before = budget.size(SYSTEM, TOOLS, conversation).total
    result.text = "[output cleared]"
    result.meta["cleared"] = True
    after = budget.size(SYSTEM, TOOLS, conversation).total
    assert after < before - 2_000


def test_floor_is_memoised_by_value_and_recounted_when_tools_change():
    budget = make_budget()
    first = budget.calibration.floor(SYSTEM, TOOLS)
    calls = []
    original = budget.counter.count_tools
    budget.counter.count_tools = lambda tools: calls.append(1) or original(tools)
    assert budget.calibration.floor(SYSTEM, TOOLS) == first
    rebuilt = [ToolSpec(t.name, t.description, dict(t.parameters)) for t in TOOLS]  # equal, new objects
    assert budget.calibration.floor(SYSTEM, rebuilt) == first
    assert calls == []
    fewer = TOOLS[:1]
    assert budget.calibration.floor(SYSTEM, fewer) < first
    assert calls == [1]


# --- calibration -----------------------------------------------------------------------------------


def test_calibration_converges_on_the_provider_ratio_and_scales_the_tail():
    budget = make_budget()
    for _ in range(30):
        budget.calibration.observe(1_120, 1_000)
    assert budget.calibration.ratio == pytest.approx(1.12, abs=1e-3)

    conversation = conversation_with_reply(Usage(input_tokens=3_000, output_tokens=0))
    result = conversation.append(Message.tool_result(ToolCall("c1", "read", "{}"), "x = 1\n" * 300))
    local_tail = budget.counter.count_message(result)
    estimate = budget.size(SYSTEM, TOOLS, conversation)
    assert estimate.estimated_tail == math.ceil(local_tail * budget.calibration.ratio)
    assert estimate.total == 3_000 + estimate.estimated_tail


def test_calibration_is_clamped_and_ignores_empty_reports():
    budget = make_budget()
    budget.calibration.observe(0, 1_000)
    budget.calibration.observe(1_000, 0)
    assert budget.calibration.ratio == 1.0
    for _ in range(50):
        budget.calibration.observe(10_000, 1_000)
    assert budget.calibration.ratio == pytest.approx(2.0)
    for _ in range(50):
        budget.calibration.observe(1, 1_000)
    assert budget.calibration.ratio == pytest.approx(0.5)


def test_measure_is_the_calibrated_floor_plus_the_calibrated_messages():
    budget = make_budget()
    messages = [Message.user("hello world " * 50)]
    local = (budget.calibration.floor(SYSTEM, TOOLS) + budget.counter.count_messages(messages))
    assert budget.calibration.request(SYSTEM, TOOLS, messages) == local
    for _ in range(40):
        budget.calibration.observe(1_500, 1_000)
    floor, tail = budget.calibration.floor(SYSTEM, TOOLS), budget.counter.count_messages(messages)
    assert budget.calibration.request(SYSTEM, TOOLS, messages) == math.ceil(floor * budget.calibration.ratio) + math.ceil(tail * budget.calibration.ratio)
    assert budget.calibration.request(SYSTEM, TOOLS, messages) - math.ceil(local * budget.calibration.ratio) in (0, 1)


def test_without_an_anchor_a_new_floor_is_estimated_as_the_server_counted_the_last_one():
    """Usage showed the server counting our floor at 30% (a template that drops the tools) and our
    messages at 1.2 each. A new floor (a memory edit, the compact form) with no reply yet to anchor
    on is scaled as the last one was, in the estimate the preflight sizes requests with as in
    ``measure``; scaling it by the messages' ratio made it four times too big."""
    budget = make_budget()
    floor = budget.calibration.floor(SYSTEM, TOOLS)
    for messages in (1_000, 2_000):
        budget.calibration.observe_request(round(floor * 0.3) + round(messages * 1.2), SYSTEM, TOOLS, messages)
    assert budget.calibration.ratio == pytest.approx(1.2)
    edited = SYSTEM + " Core memory: the user prefers tabs to spaces."
    conversation = Conversation()
    conversation.append(Message.user("hello world " * 50))
    estimate = budget.size(edited, TOOLS, conversation)
    assert estimate.floor == budget.calibration.floor_calibrated(edited, TOOLS)
    assert estimate.floor == pytest.approx(budget.calibration.floor(edited, TOOLS) * 0.3, abs=2)
    assert estimate.total == budget.calibration.request(edited, TOOLS, conversation.messages)


# --- levels ----------------------------------------------------------------------------------------


def boundary(limit: int, percent: int) -> int:
    """Smallest token count with at most ``percent`` of ``limit`` left."""
    return limit - (percent * limit) // 100


def test_levels_with_auto_compaction_at_200k():
    budget = make_budget(200_000)
    assert budget.limit == 183_616
    assert budget.state(146_892).level == "ok"
    assert budget.state(146_893).level == "warning"  # 36,723 left ≤ 20% of 183,616
    assert budget.state(165_254).level == "warning"
    assert budget.state(165_255).level == "critical"  # 18,361 left ≤ 10%
    assert budget.state(183_616).level == "critical"
    assert budget.state(183_617).level == "blocked"


@pytest.mark.parametrize("window", [200_000, 128_000, 32_000, 8_192, 4_096, 2_000])
def test_every_auto_compaction_boundary_from_both_sides(window):
    budget = make_budget(window)
    limit = compaction_threshold(window)
    warning, critical = boundary(limit, 20), boundary(limit, 10)
    assert budget.state(warning - 1).level == "ok"
    assert budget.state(warning).level == "warning"
    assert budget.state(critical - 1).level == "warning"
    assert budget.state(critical).level == "critical"
    assert budget.state(limit).level == "critical"
    assert budget.state(limit + 1).level == "blocked"


@pytest.mark.parametrize("window", [200_000, 32_000, 4_096])
def test_every_manual_boundary_from_both_sides(window):
    budget = make_budget(window, auto_compact=False)
    limit = window - output_reserve(window)
    assert budget.limit == limit
    warning, critical, blocked = boundary(limit, 20), boundary(limit, 10), boundary(limit, 5)
    assert budget.state(warning - 1).level == "ok"
    assert budget.state(warning).level == "warning"
    assert budget.state(critical - 1).level == "warning"
    assert budget.state(critical).level == "critical"
    assert budget.state(blocked - 1).level == "critical"
    assert budget.state(blocked).level == "blocked"


@given(st.integers(min_value=1, max_value=2_000_000), st.integers(min_value=0, max_value=2_500_000))
def test_blocked_with_auto_compaction_is_exactly_should_compact(window, tokens):
    budget = make_budget(window)
    assert (budget.state(tokens).level == "blocked") == should_compact(tokens, window)


def test_threshold_comes_from_the_capped_auto_compact_window():
    budget = make_budget(200_000, auto_compact_window=100_000)
    state = budget.state(83_617)
    assert state.threshold == 83_616
    assert state.window == 200_000
    assert state.level == "blocked"
    assert budget.threshold_window == 100_000
    assert should_compact(83_617, budget.threshold_window) and not should_compact(83_616, budget.threshold_window)


def test_percent_left_is_relative_to_threshold_with_auto_compaction():
    budget = make_budget(200_000)
    limit = 183_616
    assert budget.state(0).percent_left == 100
    assert budget.state(1).percent_left == 99  # never 100% once anything is in context
    assert budget.state(limit // 2).percent_left == 50
    assert budget.state(limit - 1).percent_left == 1  # never 0% while room remains
    assert budget.state(limit).percent_left == 0
    assert budget.state(limit + 5_000).percent_left == 0


def test_percent_left_is_floored_never_rounded_up():
    """45.9% left shows 45%: the bar never promises room that is not there (rounding passed every
    other test, whose cases fall on whole percents)."""
    budget = make_budget(200_000)
    limit = 183_616
    tokens = limit - limit * 459 // 1000  # 45.9% of the room left
    assert budget.state(tokens).percent_left == 45
    assert budget.state(limit - limit * 995 // 1000).percent_left == 99  # 99.5% is not 100


def test_percent_left_is_relative_to_window_less_reply_without_auto_compaction():
    budget = make_budget(200_000, auto_compact=False)
    limit = 200_000 - 8_192
    assert budget.state(limit // 4).percent_left == 75
    assert budget.state(limit).percent_left == 0
    assert budget.state(0).threshold == 183_616  # still reported for /context


def test_tool_output_limit_shrinks_with_level_and_remaining_room():
    budget = make_budget(200_000)
    assert budget.tool_output_limit("ok") == budget.tool_output_limit("warning") == 40_000
    assert budget.tool_output_limit("critical") == 8_000
    assert budget.tool_output_limit("blocked") == 2_000
    assert budget.tool_output_limit("ok", tokens=1_000) == 40_000
    # The room left before the threshold (183,616), less a whole reply (8,192).
    assert budget.tool_output_token_limit("ok", tokens=170_000) == 183_616 - 170_000 - 8_192
    assert budget.tool_output_limit("ok", tokens=170_000) == (183_616 - 170_000 - 8_192) * 4
    assert budget.tool_output_limit("blocked", tokens=199_999) == SETTINGS.tool_output_min_chars == 500


def test_tool_output_limit_leaves_room_for_the_next_reply_in_a_small_window():
    budget = make_budget(4_096)  # threshold 3,277, reply 512
    assert budget.tool_output_token_limit("ok", tokens=1_500) == 3_277 - 1_500 - 512
    assert budget.tool_output_token_limit("ok", tokens=3_000) == 125  # the smallest: a few lines and the note
    budget.calibration.observe(130, 100)  # the server counts 1.3x ours: fewer of our characters fit
    assert budget.tool_output_limit("ok", tokens=1_500) == int((3_277 - 1_500 - 512) / budget.calibration.ratio * 4)


def test_a_room_smaller_than_what_a_compaction_leaves_gives_the_output_that_instead():
    """Near the threshold a read cut to the room left was a few lines a step that never crossed it;
    the output may take what a compaction would leave, and the loop compacts before the next step.
    With automatic compaction off nothing would make room, so the room alone caps it."""
    budget = make_budget(8_192)  # a reply of 1,024
    tokens = budget.limit - 1_024 - 600
    assert budget.tool_output_token_limit("ok", tokens=tokens) == 600  # the threshold less the request and a reply
    assert budget.tool_output_token_limit("ok", tokens=tokens, after_compaction=1_400) == 1_400
    assert budget.tool_output_token_limit("ok", tokens=tokens, after_compaction=500) == 600  # the larger of the two
    off = make_budget(8_192, auto_compact=False)
    assert off.tool_output_token_limit("ok", tokens=tokens, after_compaction=20_000) == off.limit - tokens - 1_024


def test_the_tool_output_floor_is_one_amount_in_characters_and_in_tokens():
    """At the floor, the characters a tool may write count, as the provider counts them, within the
    token limit the loop fits the result to: the tool's own note on how to page on is not cut away
    by the token fit after it (it was with a 500-character floor in the toolbox and 50 tokens here)."""
    budget = make_budget(4_096)
    for _ in range(10):
        budget.calibration.observe(150, 100)  # the server counts 1.5x ours
    full = 4_000
    chars = budget.tool_output_limit("ok", tokens=full)
    tokens = budget.tool_output_token_limit("ok", tokens=full)
    assert chars == SETTINGS.tool_output_min_chars
    assert tokens == math.ceil(chars / CHARS_PER_TOKEN * budget.calibration.ratio) > chars // CHARS_PER_TOKEN
    output = cap_text("\n".join(f"line {n}: the build step wrote its usual report" for n in range(200)),
                      chars, "call bash again with a narrower command")
    assert fit_tokens(output, tokens, lambda text: math.ceil(len(text) / CHARS_PER_TOKEN * budget.calibration.ratio)) == output


# --- /context and floor ----------------------------------------------------------------------------


def test_breakdown_rows_sum_to_the_window():
    budget = make_budget(32_000)
    conversation = Conversation()
    conversation.append(Message.user("Summary of earlier work: fixed the parser.", kind="summary"))
    conversation.append(Message.user("Now run the tests."))
    rows = dict(budget.breakdown(SYSTEM, "<memory>prefers pytest</memory>", TOOLS, conversation))
    assert list(rows) == [
        "system prompt", "core memory", "tool schemas", "messages", "summary", "reserved output", "free",
    ]
    counter = budget.counter
    assert rows["summary"] == counter.count_message(conversation.messages[0])
    assert rows["messages"] == counter.count_message(conversation.messages[1])
    assert rows["tool schemas"] == counter.count_tools(TOOLS)
    assert rows["reserved output"] == 32_000 - 25_600
    assert sum(rows.values()) == 32_000


def test_breakdown_counts_memory_embedded_in_the_system_prompt_once():
    budget = make_budget(32_000)
    memory = "<memory>\nThe user prefers pytest and short answers. " * 20 + "</memory>"
    rows = dict(budget.breakdown(SYSTEM + "\n" + memory, memory, TOOLS, Conversation()))
    assert rows["core memory"] == budget.counter.count_text(memory)
    assert rows["system prompt"] == budget.counter.count_system(SYSTEM + "\n")


def test_breakdown_free_is_zero_when_over_full():
    budget = make_budget(2_000)
    conversation = Conversation()
    conversation.append(Message.user("word " * 3_000))
    rows = dict(budget.breakdown(SYSTEM, "", TOOLS, conversation))
    assert rows["free"] == 0


def test_floor_that_fits_is_no_problem():
    assert make_budget(8_192).floor_problem(6_554, "ollama") is None


def test_floor_problem_for_ollama_names_a_power_of_two_context_length():
    budget = make_budget(4_096)
    message = budget.floor_problem(5_000, "ollama")
    assert "5,000" in message and "4,096" in message
    # 8192's threshold 6,554 leaves less room than the floor takes; 16384's (13,108) does not.
    assert "OLLAMA_CONTEXT_LENGTH=16384 ollama serve" in message


@pytest.mark.parametrize(("compact_at", "env", "named"), [
    ("1", {}, "--compact-at 1 (1% of the 16,384-token window)"),
    (None, {"CODEAGENT_AUTO_COMPACT_PCT": "2"}, "CODEAGENT_AUTO_COMPACT_PCT=2 (2% of the 16,384-token window)"),
])
def test_a_threshold_setting_below_the_floor_is_named_as_the_cause(monkeypatch, compact_at, env, named):
    from mini_letta.context.window import resolve_window

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    info = resolve_window("m", 16_384, compact_at=compact_at)
    message = ContextBudget(TokenCounter("o200k_base"), info, auto_compact=True).floor_problem(1_785, "openai")
    assert named in message and "set it to 22 or more, or leave it out" in message
    assert "larger window" not in message


def test_a_floor_over_the_default_threshold_too_still_blames_the_window(monkeypatch):
    from mini_letta.context.window import resolve_window

    info = resolve_window("m", 2_048, compact_at="50")
    message = ContextBudget(TokenCounter("o200k_base"), info, auto_compact=True).floor_problem(1_785, "openai")
    assert "larger window" in message and "--compact-at" not in message


def test_floor_problem_for_ollama_suggests_at_least_8192():
    message = make_budget(2_048).floor_problem(1_700, "ollama")
    assert "OLLAMA_CONTEXT_LENGTH=8192 ollama serve" in message


def test_floor_problem_without_auto_compaction_uses_window_less_reply():
    budget = make_budget(4_096, auto_compact=False)
    assert budget.floor_problem(4_096 - 512, "ollama") is None
    # 8192 less its 1,024-token reply leaves 7,168: under twice the 3,585-token floor.
    assert "OLLAMA_CONTEXT_LENGTH=16384" in budget.floor_problem(4_096 - 511, "ollama")
    small = make_budget(2_048, auto_compact=False)
    assert small.floor_problem(2_048 - 256, "ollama") is None
    assert "OLLAMA_CONTEXT_LENGTH=8192 ollama serve" in small.floor_problem(2_048 - 255, "ollama")


def test_floor_problem_for_other_providers_says_what_to_shrink():
    message = make_budget(8_192).floor_problem(9_000, "openai")
    assert "9,000" in message
    assert "larger window" in message and "fewer tools" in message and "AGENTS.md" in message
    assert "OLLAMA" not in message
    assert message.endswith(".")


def test_breakdown_gives_the_skills_list_its_own_row_counted_once():
    budget = make_budget(32_000)
    listing = "# Skills\n- review: Reviews a change the way this project wants.\n"
    rows = dict(budget.breakdown(SYSTEM + "\n" + listing, "", TOOLS, Conversation(), listing))
    assert rows["skills list"] == budget.counter.count_text(listing)
    assert rows["system prompt"] == budget.counter.count_system(SYSTEM + "\n")
    assert sum(rows.values()) == 32_000
