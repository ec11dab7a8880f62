"""The floor as the server counts it, read off usage reports (``context/usage_floor.py``), for a
server that cannot count it for us: a LiteLLM proxy in front of llama-server, whose SmolLM2
template leaves the tool schemas out. One ratio for the whole request there is about 0.5, which
undercounts prose by half: the summarizer's request (no tools) was rejected at 2,221 tokens where
we counted 1,810 (``tests/real_server/test_litellm.py`` against the real pair)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from agent_support import fake_count, request_tokens, script, sized_text

from mini_letta.app import Options, build_agent
from mini_letta.context.usage_floor import UsageFloors, floor_digest
from mini_letta.errors import ContextFullError
from mini_letta.messages import Message, ToolSpec
from mini_letta.toolbox import approve_all
from mini_letta.settings import SETTINGS

RANGE = (0.5, 2.0)
TOOLS = [ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}})]


WINDOW = 2_048  # what the proxy's server enforces, and does not publish


def continued_turns(tmp_path, count, turns: int = 8):
    """``-c`` turns behind a proxy, each a new process (a new agent on the same session): yields each
    turn's provider once its turn has run (a turn refused as too full included)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for turn in range(turns):
        provider = script([f"Noted {turn}."], window=WINDOW, count=count)
        provider.served_window = lambda: None
        agent = build_agent(Options(workspace=workspace, headless=True, continue_session=turn > 0), approve_all,
                            provider=provider)
        try:
            agent.run_turn(f"Note {turn}: keep this in mind. " + sized_text(450, seed=turn))
        except ContextFullError:
            pass
        yield provider
        agent.session.close()


def without_tools(request) -> int:
    """A template without tool support: the schemas are neither in the prompt nor in its count."""
    return fake_count(replace(request, tools=[]))


# --- the inference --------------------------------------------------------------------------------
def test_two_replies_with_one_floor_give_the_floor_and_the_message_ratio():
    floors = UsageFloors()
    # The server counts the floor as 500 and each of our message tokens as 1.1.
    assert floors.infer("a", 500 + 1100, 1000, None, slope_range=RANGE) is None  # one reply cannot tell
    inferred = floors.infer("a", 500 + 2200, 2000, None, slope_range=RANGE)
    assert inferred is not None
    assert inferred.floor == 500 and inferred.slope == pytest.approx(1.1)
    assert floors.known("a") == 500 and floors.known("b") is None


def test_replies_too_close_or_with_another_floor_infer_nothing():
    floors = UsageFloors()
    floors.infer("a", 1600, 1000, None, slope_range=RANGE)
    assert floors.infer("a", 1700, 1000 + SETTINGS.usage_floor_min_slope_sample_tokens - 1, None, slope_range=RANGE) is None
    assert floors.infer("b", 2700, 2000, None, slope_range=RANGE) is None  # a memory edit: another floor
    # A slope no tokenizer has (the second reply was counted by something else) is not believed.
    assert floors.infer("a", 9000, 2000, None, slope_range=RANGE) is None


def test_once_the_message_ratio_is_known_one_reply_shows_a_new_floor():
    floors = UsageFloors()
    inferred = floors.infer("compact", 160 + 1650, 1500, 1.1, slope_range=RANGE)
    assert inferred is not None and inferred.floor == 160 and inferred.slope is None
    # An impossible floor (usage smaller than the messages alone) is not kept.
    assert floors.infer("other", 1000, 1500, 1.1, slope_range=RANGE) is None and floors.known("other") is None


def test_the_digest_names_a_floor_by_its_text():
    assert floor_digest("system", TOOLS) == floor_digest("system", list(TOOLS))
    assert floor_digest("system", TOOLS) != floor_digest("system.", TOOLS)
    assert floor_digest("system", TOOLS) != floor_digest("system", [])


# --- in the agent ---------------------------------------------------------------------------------
def test_the_summarizer_request_is_counted_as_the_server_counts_it(tmp_path):
    """After two replies, prose is counted at the server's ratio for messages (not the whole
    request's, which the dropped tools halve), and the floor as the server counts it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    provider = script(["Noted."] * 2, count=without_tools)
    agent = build_agent(Options(workspace=workspace, headless=True), approve_all, provider=provider)
    agent.run_turn("Note 1: " + sized_text(300, seed=1))
    agent.run_turn("Note 2: " + sized_text(700, seed=2))
    first, second = provider.requests
    whole_request_ratio = without_tools(second) / request_tokens(second)
    assert whole_request_ratio < 0.8  # the tools are much of what we count
    system, tools = agent.system_prompt(), agent.tool_specs()
    assert agent.budget.calibration.served_floor(system, tools) == pytest.approx(without_tools(replace(second, messages=[])), abs=25)
    prose = Message.user(sized_text(1500, seed=3))
    theirs = fake_count(replace(second, system="", tools=[], messages=[prose]))
    assert agent.budget.calibration.count_message(prose) == pytest.approx(theirs, rel=0.06)


def test_a_resumed_session_replays_its_replies_to_tell_the_floor_apart(tmp_path):
    """Each `-p -c` turn is a new process: the two replies that show the floor come from two runs."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for turn, words in enumerate((300, 700)):
        agent = build_agent(Options(workspace=workspace, headless=True, continue_session=turn > 0), approve_all,
                            provider=script(["Noted."], count=without_tools))
        agent.run_turn(f"Note {turn}: " + sized_text(words, seed=turn))
        agent.session.close()
    resumed = build_agent(Options(workspace=workspace, headless=True, continue_session=True), approve_all,
                          provider=script([], count=without_tools))
    assert resumed.budget.calibration.message_ratio
    system, tools = resumed.system_prompt(), resumed.tool_specs()
    assert resumed.budget.calibration.served_floor(system, tools) is not None
    assert resumed.budget.calibration.served_floor(system, tools) < 0.6 * resumed.budget.calibration.floor(system, tools)


def test_continued_turns_behind_a_proxy_whose_template_drops_the_tools_are_rejected_at_most_once(tmp_path):
    """The LiteLLM scenario with the scripted server: each turn a new process, a 2,048-token window
    the proxy does not publish, a template without tools. The first rejection teaches the window;
    nothing after it is rejected, the summarizer's requests included."""
    rejections, summaries = 0, 0
    for provider in continued_turns(tmp_path, without_tools):
        rejections += provider.overflows
        summaries += sum(r.purpose == "summary" for r in provider.requests)
    # The scripted server rejects exactly the requests over its window by its own count (prompt plus
    # max_tokens), so one rejection in all the turns says every other request fit, those after it
    # and the summarizer's included; no per-request check can add to that.
    assert rejections == 1 and summaries > 0


def bounded_count(limit: int = 200):
    """The server's count (tool schemas dropped), failing the test once ``limit`` requests were
    sent: a turn that resends without end must fail, not fill the memory."""
    sent = []

    def counted(request) -> int:
        sent.append(request)
        if len(sent) > limit:
            raise AssertionError(f"still sending after {limit} requests")
        return without_tools(request)
    return counted


def test_when_usage_cannot_tell_the_floor_apart_a_turn_is_not_resent_without_end(tmp_path, monkeypatch):
    """The same proxy, with the floor inference switched off: one ratio for the whole request makes
    the anchored estimate say "fits" while each rejection says "too long". That once resent the
    request without end (memory grew to gigabytes); a second rejection in a turn now compacts, and
    the compactions are bounded."""
    monkeypatch.setattr(UsageFloors, "infer", lambda self, *args, **kwargs: None)
    counted = bounded_count()

    for provider in continued_turns(tmp_path, counted):
        # Per turn: at most one rejection resizes, later ones compact (SETTINGS.max_overflow_retries of them).
        assert provider.overflows <= 1 + SETTINGS.max_overflow_retries


def test_after_a_rejection_the_next_request_is_compacted_or_sized_smaller_not_resent(tmp_path, monkeypatch):
    """The same disagreement, with the per-turn breaker raised out of the way: a rejection called
    "explained" must be explained by the estimate the next request is sized with, so the request
    after a rejection has other messages (compacted) or a smaller reply budget; the same request
    is never sent again."""
    monkeypatch.setattr(UsageFloors, "infer", lambda self, *args, **kwargs: None)
    monkeypatch.setattr(SETTINGS, "resizes_per_turn", 1_000)
    counted = bounded_count()

    rejected = 0
    for provider in continued_turns(tmp_path, counted):
        chat = [r for r in provider.requests if r.purpose != "summary"]
        for request, following in zip(chat, chat[1:]):
            if without_tools(request) + request.max_tokens > WINDOW:
                rejected += 1
                assert following.messages != request.messages or following.max_tokens < request.max_tokens
    assert rejected > 0
