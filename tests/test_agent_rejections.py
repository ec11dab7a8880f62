"""What a server's rejection teaches, and what must never reach a server.

The scripted server here disagrees with us on purpose: it counts with the fake servers' tokenizer
(not ours, by a ratio that depends on the text) plus template tokens, enforces prompt + ``max_tokens`` against a window smaller than
the one we were told, and words its rejection as llama.cpp does.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from agent_support import fake_count, make_agent, request_tokens, script, sized_text

from mini_letta.loop.agent import AgentEvents
from mini_letta.app import Options, build_agent
from mini_letta.context.window import LEARNED_SOURCE
from mini_letta.errors import ContextFullError
from mini_letta.sessions.store import load_session
from mini_letta.toolbox import approve_all

SERVED = 4_096


class Notices(AgentEvents):
    def __init__(self, into: list[str]):
        self.into = into

    def notice(self, text: str) -> None:
        self.into.append(text)


def their_count(request) -> int:
    """Another tokenizer, and a chat template's tokens on top."""
    return fake_count(request) + 5 * (len(request.messages) + 1)


def rejecting_server(replies: int = 60):
    """Enforces its window but does not tell it (like a proxy, or a server without /props)."""
    provider = script(["Done. " + sized_text(30, seed=i) for i in range(replies)], window=SERVED, count=their_count)
    provider.served_window = lambda: None
    return provider


def test_a_rejection_naming_the_window_is_learned_and_no_later_request_is_rejected(tmp_path):
    provider = rejecting_server()
    agent = make_agent(provider, tmp_path, window=32_000)  # what we were (wrongly) told
    notices: list[str] = []
    events = Notices(notices)
    for turn in range(25):
        agent.run_turn(sized_text(400, seed=turn), events)
    assert provider.overflows == 1
    assert agent.budget.window == SERVED and agent.budget.window_info.source == LEARNED_SOURCE
    assert any("4,096 tokens (learned from its rejection)" in text for text in notices)
    # Every request after the rejection fit, reply room included, summarizer requests too.
    assert all(their_count(r) + r.max_tokens <= SERVED for r in provider.requests[1:])
    assert any(r.purpose == "summary" for r in provider.requests)


def test_the_compaction_a_rejection_forces_is_recorded_as_an_overflow(tmp_path):
    """The learned window is smaller than the context already sent: the compaction that follows in
    the same turn is the rejection's doing, and says so; later ones come from ordinary pressure."""
    provider = script(["Done. " + sized_text(30, seed=i) for i in range(40)], window=SERVED, count=their_count)
    provider.served_window = lambda: None
    provider.reply_counts = False  # rejected for the prompt alone, which must then shrink
    agent = make_agent(provider, tmp_path, window=32_000)
    # Turns large enough that the rejected context is still over the threshold with the compact
    # floor the learned window brings (smaller turns fit once the floor shrinks, and are sent as they are).
    for turn in range(16):
        agent.run_turn(sized_text(800, seed=turn))
    assert provider.overflows == 1
    rejected = next(i for i, r in enumerate(provider.requests) if their_count(r) > SERVED)
    assert all(their_count(r) <= SERVED for r in provider.requests[rejected + 1:])
    triggers = [record.trigger for record in agent.compactions]
    assert triggers[0] == "context_overflow" and set(triggers[1:]) <= {"context_pressure"}


def test_the_learned_window_is_saved_with_the_session_and_used_on_resume(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    options = Options(workspace=workspace, headless=True)
    monkeypatch.setenv("CODEAGENT_MAX_CONTEXT_TOKENS", "32000")  # a wrong override
    agent = build_agent(options, approve_all, provider=rejecting_server())
    for turn in range(6):
        agent.run_turn(sized_text(300, seed=turn))
    assert agent.budget.window == SERVED
    agent.session.close()  # the first process ends: a session has one writer at a time
    resumed = build_agent(Options(workspace=workspace, headless=True, continue_session=True), approve_all,
                          provider=rejecting_server())
    assert resumed.budget.window == SERVED and resumed.budget.window_info.source == LEARNED_SOURCE
    resumed.run_turn("one more")
    assert resumed.provider.overflows == 0


def test_a_message_too_big_for_any_context_is_refused_before_anything_is_sent(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    provider = rejecting_server()
    agent = build_agent(Options(workspace=workspace, headless=True), approve_all, provider=provider)
    huge = "lorem ipsum dolor " * 120_000  # ~2 MB
    with pytest.raises(ContextFullError, match=r"Your message is about [\d,]+ tokens.*not sent"):
        agent.run_turn(huge)
    assert provider.requests == [] and agent.conversation.messages == []
    loaded = load_session(Path(agent.session.path))
    assert loaded.messages_in_context == [] and loaded.all_messages[0].text == huge  # on record, out of context
    assert agent.run_turn("a normal question").text.startswith("Done.")


def test_with_compaction_off_a_refused_message_is_withdrawn_from_the_context_and_the_session(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEAGENT_DISABLE_COMPACT", "1")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    provider = script(["ok"] * 5, window=SERVED, count=request_tokens)
    agent = build_agent(Options(workspace=workspace, headless=True), approve_all, provider=provider)
    floor = agent.budget.calibration.floor(agent.system_prompt(), agent.tool_specs())
    agent.run_turn(sized_text(agent.budget.limit - floor - 400))
    second = sized_text(300, seed=3)
    with pytest.raises(ContextFullError, match="not sent and your message is not kept"):
        agent.run_turn(second)
    assert second not in [m.text for m in agent.conversation.messages]
    loaded = load_session(Path(agent.session.path))
    assert second not in [m.text for m in loaded.messages_in_context]
    # The context figure does not count it, so a short message still goes through.
    assert agent.context_state().level != "blocked"
    assert agent.run_turn("ok?").text == "ok"


def test_dense_tool_output_is_capped_in_tokens_not_only_characters(tmp_path):
    rng = random.Random(0)
    lines = ("".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(60)) for _ in range(700))
    (tmp_path / "dense.txt").write_text("\n".join(lines), encoding="utf-8")  # rare CJK: over a token a character
    from agent_support import tool_call

    provider = script([tool_call("read_file", path="dense.txt"), "read it"])
    agent = make_agent(provider, tmp_path, window=200_000)
    agent.run_turn("read dense.txt")
    result = next(m for m in agent.conversation.messages if m.role == "tool")
    state = agent.context_state()
    limit = agent.budget.tool_output_token_limit("ok")
    assert agent.budget.counter.count_text(result.text) <= limit * 1.05 + 30
    assert "cut to about" in result.text and state.tokens < 200_000


def test_a_resumed_session_starts_with_the_ratio_it_had_learned(tmp_path):
    """Each `-p -c` run is a new process: without this, every run would start from our own
    tokenizer's view and refuse messages the server would take (a template that drops tools)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    halved = lambda request: request_tokens(request) // 2  # noqa: E731
    first = build_agent(Options(workspace=workspace, headless=True), approve_all,
                        provider=script(["ok"], count=halved))
    first.run_turn("hello")
    assert first.budget.calibration.ratio < 0.9
    first.session.close()  # the first process ends: a session has one writer at a time
    resumed = build_agent(Options(workspace=workspace, headless=True, continue_session=True), approve_all,
                          provider=script(["ok"], count=halved))
    assert abs(resumed.budget.calibration.ratio - 0.5) < 0.02


def test_a_message_is_measured_against_the_calibrated_floor(tmp_path):
    provider = script(["ok"] * 3, count=lambda request: request_tokens(request) // 2)
    agent = make_agent(provider, tmp_path, window=4_096)
    agent.run_turn("hello")
    agent.budget.calibration.observe(1, 2, weight=1.0)  # the server counts half of what we do
    floor = agent.budget.calibration.floor(agent.system_prompt(), agent.tool_specs())
    # By our count floor + message would not fit the limit; by the server's it does.
    message = sized_text(int((agent.budget.limit - floor / 2) * 2 * 0.8))
    assert floor + agent.budget.counter.count_text(message) > agent.budget.limit
    assert agent.run_turn(message).text == "ok"


def test_nine_continued_turns_against_a_server_counting_one_and_a_half_times_ours_are_rejected_at_most_once(
        tmp_path):
    """Issue 21: each `-c` turn is a new process. What the first rejection states (the server's
    count) sizes every later request, in the same process and after `-c`; a turn that cannot fit
    is refused before sending, with the numbers."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    window = 3_000
    rejections = 0
    refused = []
    for turn in range(9):
        provider = script([f"Answer {turn}. " + sized_text(60, seed=turn)], window=window,
                          count=lambda request: int(request_tokens(request) * 1.5))
        agent = build_agent(Options(workspace=workspace, headless=True, continue_session=turn > 0), approve_all,
                            provider=provider)
        try:
            agent.run_turn(f"Turn {turn}: " + sized_text(150, seed=turn + 20))
        except ContextFullError as error:
            refused.append(str(error))
        rejections += provider.overflows
        agent.session.close()
    # The scripted server rejects exactly the requests over its window by its count (prompt plus
    # max_tokens), so at most one rejection in all the turns says every other request fit.
    assert rejections <= 1
    assert all(re.search(r"[\d,]+ of [\d,]+ tokens", text) for text in refused)
