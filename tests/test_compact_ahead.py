"""Compaction ahead of time (issue 14): the summary is prepared while the user types and installed at
once at the threshold, only while it still matches the history, never two summaries at once."""

from __future__ import annotations

import threading
import time

from agent_support import make_agent, request_tokens, script, sized_text

from mini_letta.loop.agent import AgentEvents
from mini_letta.messages import Message
from mini_letta.settings import SETTINGS

WINDOW = 8_000


def session(summary=None, turns=30):
    replies = [Message.assistant(f"answer {n}: " + sized_text(400, seed=n)) for n in range(turns)]
    kwargs = {"summary": summary} if summary is not None else {}
    return script(replies, window=WINDOW, count=request_tokens, **kwargs)


def idle(agent):
    """What the REPL does while the user types: prepare, and (here) let the preparation finish."""
    started = agent.prepare_compaction()
    while agent.ahead.running:
        time.sleep(0.01)
    return started


def summaries(provider):
    return [r for r in provider.requests if r.purpose == "summary"]


def test_a_summary_prepared_while_the_user_types_is_installed_at_the_threshold(tmp_path):
    provider = session()
    agent = make_agent(provider, tmp_path, lean_system="You are a coding agent.", tool_names=())
    prepared_at = None
    for turn in range(30):
        if idle(agent) and prepared_at is None:
            prepared_at = agent.context_tokens()
            assert agent.ahead.ready and len(summaries(provider)) == 1
        result = agent.run_turn(f"question {turn}: " + sized_text(400, seed=turn + 3))
        if result.compactions:
            break
    [record] = result.compactions
    assert prepared_at is not None and prepared_at >= agent.budget.threshold * SETTINGS.ahead_early_ratio
    assert record.prepared and record.trigger == "context_pressure" and "summarize" in record.layers
    assert "prepared ahead of time" in record.note
    # No summary was made at the threshold itself: the prepared one was used.
    assert len(summaries(provider)) == 1 and not agent.ahead.ready
    assert agent.conversation.messages[0].kind == "summary"
    assert record.tokens_after < agent.budget.threshold


def test_a_prepared_summary_that_no_longer_matches_is_never_used(tmp_path):
    provider = session()
    agent = make_agent(provider, tmp_path, lean_system="You are a coding agent.", tool_names=())
    for turn in range(30):
        if idle(agent):
            break
        agent.run_turn(f"question {turn}: " + sized_text(400, seed=turn + 3))
    plan_history = list(agent.ahead._plan.before)
    # A manual compaction rewrites the history the plan was made from.
    agent.compact_now()
    assert agent.conversation.messages[:len(plan_history)] != plan_history
    assert agent.ahead.take(agent.conversation.messages) is None


def test_cancel_drops_the_prepared_summary_and_the_usual_compaction_runs(tmp_path):
    provider = session()
    agent = make_agent(provider, tmp_path, lean_system="You are a coding agent.", tool_names=())
    compacted = None
    cancelled = False
    for turn in range(30):
        if not cancelled and idle(agent):
            agent.ahead.cancel()  # Ctrl-C, /clear, a model change or exit
            cancelled = True
            assert not agent.ahead.ready
        result = agent.run_turn(f"question {turn}: " + sized_text(400, seed=turn + 3))
        if result.compactions:
            compacted = result.compactions[0]
            break
    assert cancelled and compacted is not None and not compacted.prepared
    assert len(summaries(provider)) == 2  # the dropped preparation, then the usual one


def test_clear_cancels_a_preparation_under_way(tmp_path):
    gate = threading.Event()

    def slow_summary(request):
        gate.wait(10)
        return "Earlier: questions were asked and answered."

    provider = session(slow_summary)
    agent = make_agent(provider, tmp_path, lean_system="You are a coding agent.", tool_names=())
    for turn in range(30):
        if agent.prepare_compaction():
            break
        agent.run_turn(f"question {turn}: " + sized_text(400, seed=turn + 3))
    assert agent.ahead.running, "no preparation was under way to cancel"
    agent.reset(None)  # /clear
    gate.set()
    while agent.ahead.running:
        time.sleep(0.01)
    assert not agent.ahead.ready and agent.conversation.messages == []


def test_clear_starts_the_same_compaction_afresh_and_it_compacts_again(tmp_path):
    provider = session()
    agent = make_agent(provider, tmp_path, lean_system="You are a coding agent.", tool_names=())
    compacting, hooks = agent.compacting, agent.hooks
    for turn in range(30):
        idle(agent)
        agent.run_turn(f"question {turn}: " + sized_text(400, seed=turn + 3))
        if agent.compactions and agent.ahead.ready:
            break
    assert agent.compactions and agent.ahead.ready, "no compaction and no prepared plan to start afresh from"
    for _ in range(SETTINGS.breaker_limit):
        compacting.guards.failed()
    assert compacting.guards.breaker_open
    agent.reset(None)  # /clear
    # The same part, started afresh: records, the prepared plan, the breaker all gone; its hooks kept.
    assert agent.compacting is compacting and agent.hooks is hooks
    assert agent.compactions == [] and not agent.ahead.ready and agent.ahead.prepared == 0
    assert not compacting.guards.breaker_open
    for turn in range(30):  # the new conversation fills and compacts as the first one did
        agent.run_turn(f"again {turn}: " + sized_text(400, seed=turn + 5))
        if agent.compactions:
            break
    assert [record.trigger for record in agent.compactions] == ["context_pressure"]


def test_the_threshold_waits_for_a_preparation_under_way_instead_of_a_second_summary(tmp_path):
    lock = threading.Lock()
    running = [0]
    most = [0]

    def counted_summary(request):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.3)
        with lock:
            running[0] -= 1
        return "Earlier: questions were asked and answered."

    provider = session(counted_summary)
    agent = make_agent(provider, tmp_path, lean_system="You are a coding agent.", tool_names=())
    record = None
    for turn in range(30):
        agent.prepare_compaction()  # the user answers at once: no waiting for the preparation
        result = agent.run_turn(f"question {turn}: " + sized_text(400, seed=turn + 3))
        if result.compactions:
            record = result.compactions[0]
            break
    assert record is not None and most[0] == 1
    assert record.prepared and len(summaries(provider)) == 1


def test_nothing_is_prepared_below_the_early_mark_or_with_auto_compaction_off(tmp_path, monkeypatch):
    provider = session()
    agent = make_agent(provider, tmp_path, lean_system="You are a coding agent.", tool_names=())
    agent.run_turn("a short question")
    assert agent.context_tokens() < agent.budget.threshold * SETTINGS.ahead_early_ratio
    assert not agent.prepare_compaction() and summaries(provider) == []

    off = make_agent(session(), tmp_path, lean_system="You are a coding agent.", tool_names=(), auto_compact=False)
    for turn in range(8):
        off.run_turn(f"question {turn}: " + sized_text(400, seed=turn + 3))
    assert off.context_tokens() >= off.budget.threshold * SETTINGS.ahead_early_ratio and not off.prepare_compaction()


def test_a_summary_prepared_for_another_model_or_window_is_never_used(tmp_path):
    provider = session()
    agent = make_agent(provider, tmp_path, lean_system="You are a coding agent.", tool_names=())
    for turn in range(30):
        if idle(agent):
            break
        agent.run_turn(f"question {turn}: " + sized_text(400, seed=turn + 3))
    assert agent.ahead.ready
    agent.budget.learn_window(WINDOW - 1_000)  # the server named a smaller window (or the model changed)
    assert agent.ahead.take(agent.conversation.messages) is None


def test_what_came_after_a_prepared_summary_is_compacted_the_usual_way_when_still_over():
    from test_compaction_support import History, controller, measure

    ctl = controller(threshold=10_000, window=12_000)
    history = History()
    for turn in range(8):
        history.user(f"question {turn} " + "word " * 800).say(f"answer {turn} " + "word " * 800)
    plan = ctl.prepare(list(history.messages))
    assert plan is not None and plan.tokens_after < plan.tokens_before
    # Much more is said before the threshold is reached: the plan still covers a prefix.
    for turn in range(8, 16):
        history.user(f"question {turn} " + "text " * 800).say(f"answer {turn} " + "text " * 800)
    ctl.guards.start_turn()

    prepared = ctl.apply_prepared(history.conversation, plan)

    assert prepared is not None and prepared.prepared
    assert history.messages[0].kind == "summary" and history.messages[-1].text.startswith("answer 15")
    assert measure(history.messages) > 10_000  # the newer part alone is over the threshold
    # Not a failed compaction: the usual one summarises the rest (the summary merged into it).
    record = ctl.before_request(history.conversation)
    assert record is not None and not record.prepared and measure(history.messages) <= 10_000
    assert ctl.guards.consecutive_failures == 0


def test_a_plan_whose_history_was_rewritten_is_not_applied():
    from test_compaction_support import History, controller

    ctl = controller(threshold=10_000, window=12_000)
    history = History()
    for turn in range(8):
        history.user(f"question {turn} " + "word " * 800).say(f"answer {turn} " + "word " * 800)
    plan = ctl.prepare(list(history.messages))
    history.conversation.messages = history.messages[2:]  # e.g. a withdrawn message or another compaction
    before = list(history.messages)

    assert ctl.apply_prepared(history.conversation, plan) is None and history.messages == before


def _overlap_run(folder, serves_concurrently: bool):
    """The user answers while a preparation is under way; returns whether a chat request was ever
    sent while a summary request was running, and the notices of that turn. Held by events, so that
    a passing run does not depend on timing: the summary is under way before the turn's request
    looks, and it lasts until the turn has said it waits (a server of one's own) and then until the
    turn's request arrives next to it (30 s for a hosted API, where it must; 0.5 s otherwise)."""
    started, noticed, chat_arrived = threading.Event(), threading.Event(), threading.Event()
    summarizing, overlapped, armed = [False], [False], [False]

    def held_summary(request):
        summarizing[0] = True
        started.set()
        if not serves_concurrently:
            noticed.wait(30)
        chat_arrived.wait(30 if serves_concurrently else 0.5)
        summarizing[0] = False
        return "Earlier: questions were asked and answered."

    provider = session(held_summary)
    provider.serves_concurrently = serves_concurrently
    answer = provider.default

    def chat(request):
        if armed[0] and request.purpose != "summary":
            started.wait(30)
            overlapped[0] = overlapped[0] or summarizing[0]
            chat_arrived.set()
        return answer(request)

    provider.default = chat
    notices: list[str] = []
    events = AgentEvents()
    events.notice = lambda text: (notices.append(text), noticed.set())
    folder.mkdir()
    agent = make_agent(provider, folder, lean_system="You are a coding agent.", tool_names=())
    for turn in range(30):
        prepared = armed[0] = agent.prepare_compaction()  # the user answers at once
        agent.run_turn(f"question {turn}: " + sized_text(400, seed=turn + 3), events if prepared else None)
        if prepared:
            return overlapped[0], notices
    raise AssertionError("no preparation started")


def test_a_server_of_ones_own_gets_no_chat_request_while_a_summary_is_prepared(tmp_path):
    # llama-server -c 4096 shares its 4,096 tokens among four slots: a turn sent next to the
    # summary in preparation failed both. The turn waits for the preparation instead, and says so.
    overlapped, notices = _overlap_run(tmp_path / "own", serves_concurrently=False)
    assert not overlapped
    assert notices == ["Waiting for the summary being prepared: this server answers one request at a time."]
    # A hosted API takes both at once: the turn does not wait.
    overlapped, notices = _overlap_run(tmp_path / "hosted", serves_concurrently=True)
    assert overlapped and notices == []


def test_waiting_for_a_summary_still_being_prepared_is_shown_as_compacting():
    # A line queued during a reply is sent the moment the reply ends, when the preparation has just
    # started: on a slow local model the turn then waited for it with nothing on the screen (45 s).
    from test_compaction_support import FakeSummarizer, History, controller, measure

    release, finished = threading.Event(), []

    class HeldSummarizer(FakeSummarizer):
        def __call__(self, *args, **kwargs):
            release.wait(5)  # until the turn has shown it compacts (or 5 s: then the test fails)
            finished.append(True)
            return super().__call__(*args, **kwargs)

    ctl = controller(HeldSummarizer(), threshold=10_000, window=12_000)
    history = History()
    for turn in range(16):
        history.user(f"question {turn} " + "word " * 800).say(f"answer {turn} " + "word " * 800)
    ctl.state.conversation = history.conversation
    assert ctl.compacting.ahead.start(list(history.messages))
    shown = []
    events = ctl._on(history.conversation)
    events.compaction_started = lambda trigger: (shown.append((trigger, bool(finished))), release.set())
    record = ctl.compacting.install_prepared(events)
    assert shown[0] == ("context_pressure", False)  # said while the summary was still being written
    assert record is not None and record.prepared


def test_a_summary_prepared_between_turns_may_take_the_finished_newest_turn():
    # At 4k: a small first turn, then one large turn (an @file of 2k tokens and its answer). Planned
    # ahead, "keep the newest turn verbatim" left nothing to summarise, so the preparation was
    # wasted; at the next message that turn is no longer the newest and the compaction summarised
    # it in the foreground, with the user waiting. Between turns it is finished and may be summarised.
    from test_compaction_support import History, controller, measure

    ctl = controller(threshold=10_000, window=12_000)
    history = History()
    history.user("question 0").say("answer 0")
    history.user("look at this file " + "word " * 8_000).say("answer 1 " + "word " * 1_000)
    plan = ctl.prepare(list(history.messages))
    assert plan is not None and plan.tokens_after < plan.tokens_before
    history.user("and now?")
    ctl.guards.start_turn()
    record = ctl.apply_prepared(history.conversation, plan)
    assert record is not None and record.prepared
    assert history.messages[0].kind == "summary" and history.messages[-1].text == "and now?"
    assert measure(history.messages) <= 10_000
