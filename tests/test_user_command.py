"""``!command`` (issue 26): the user's own command runs in the workspace without the model, and
command and output reach the model with the next message, capped like a tool's output."""

from __future__ import annotations

from agent_support import make_agent

from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.user_command import run_user_command


def test_the_command_runs_in_the_workspace_and_reaches_the_next_request(tmp_path):
    (tmp_path / "marker.txt").write_text("here")
    provider = ScriptedProvider(["I see it."])
    agent = make_agent(provider, tmp_path)
    outcome = run_user_command(agent, "ls && echo ran-$((6*7))")
    assert "marker.txt" in outcome.text and "ran-42" in outcome.text and not outcome.is_error
    assert provider.requests == []  # the model was not asked
    agent.run_turn("what did that print?")
    sent = [m for m in provider.requests[0].messages if m.role == "user"]
    assert len(sent) == 2
    assert "ls && echo ran-$((6*7))" in sent[0].text and "ran-42" in sent[0].text
    assert sent[1].text == "what did that print?"


def test_a_huge_output_is_capped_before_it_enters_the_conversation(tmp_path):
    agent = make_agent(ScriptedProvider(), tmp_path, window=8_192)
    before = agent.context_tokens()
    outcome = run_user_command(agent, "seq 1 200000")
    assert len(outcome.text) < 40_000 and "output cut" in outcome.text
    room = agent.budget.threshold - before
    assert agent.context_tokens() - before < room  # counted, and it still fits before compaction


def test_a_failing_command_is_kept_with_its_exit_code(tmp_path):
    agent = make_agent(ScriptedProvider(), tmp_path)
    outcome = run_user_command(agent, "echo oops >&2; exit 3")
    assert outcome.is_error and "oops" in outcome.text and "exit code 3" in outcome.text
    assert "oops" in agent.conversation.messages[-1].text
