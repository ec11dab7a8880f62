"""What the ahead-of-time thread reads is its own: preparation and the status bar run together
without error and give the same answers, and a prepared plan inherits nothing from a foreground one."""

from __future__ import annotations

import threading

from agent_support import make_agent, request_tokens, script, sized_text

from mini_letta.errors import ContextOverflowError
from mini_letta.loop.agent import AgentEvents
from mini_letta.messages import Message

WINDOW = 8_000
ITERATIONS = 2_000


def form(request) -> str:
    """The summary names the form it was asked in: in the conversation (tools sent) or quoted."""
    return "SHARED summary of the earlier work." if request.tools else "QUOTED summary of the earlier work."


def full_agent(tmp_path):
    replies = [Message.assistant(f"answer {n}: " + sized_text(400, seed=n)) for n in range(40)]
    agent = make_agent(script(replies, window=WINDOW, count=request_tokens, summary=form), tmp_path)
    while agent.context_tokens() < agent.budget.threshold * 0.9:
        agent.run_turn(f"question: " + sized_text(400, seed=len(agent.conversation.messages)))
    return agent


def test_preparation_and_the_status_bar_read_together_without_error_and_alike(tmp_path):
    agent = full_agent(tmp_path)
    snapshot = list(agent.conversation.messages)
    expected_state = agent.context_state()
    expected_plan = agent.compacting.plan_ahead(snapshot)
    assert expected_plan is not None
    errors: list[BaseException] = []
    states, plans = [], []

    def status_bar():
        try:
            for _ in range(ITERATIONS):
                states.append(agent.context_state())
        except BaseException as error:  # noqa: BLE001 (any error of the reader fails the test)
            errors.append(error)

    def ahead():
        try:
            for _ in range(ITERATIONS // 20):
                plan = agent.compacting.plan_ahead(snapshot)
                plans.append((plan.tokens_after, [m.text for m in plan.messages]))
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=status_bar), threading.Thread(target=ahead)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(states) == ITERATIONS and set(states) == {expected_state}
    assert len(plans) == ITERATIONS // 20
    assert set((tokens, tuple(texts)) for tokens, texts in plans) == {
        (expected_plan.tokens_after, tuple(m.text for m in expected_plan.messages))}


def test_a_plan_prepared_after_an_overflow_compaction_still_asks_in_the_conversation(tmp_path):
    """An overflow compaction may not ask for the summary inside the conversation (the server just
    refused it); a plan prepared afterwards for another history must not inherit that."""
    agent = full_agent(tmp_path)
    snapshot = list(agent.conversation.messages)
    agent.compacting.make_room(AgentEvents(), agent.sizing.step_size(agent.conversation), "context_overflow",
                               error=ContextOverflowError("too long", limit=WINDOW))
    plan = agent.compacting.plan_ahead(snapshot)
    assert plan is not None and "SHARED summary" in plan.summary
