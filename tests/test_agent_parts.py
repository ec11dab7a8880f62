"""An agent's parts are built once, in order, by ``loop/parts.py`` ``build_parts`` and handed to the
Agent, which stores them (issue 46): every part works over the same state, prompt and measure."""

from __future__ import annotations

import dataclasses

from agent_support import LeanPrompt, make_agent, script

from mini_letta.app import make_budget
from mini_letta.loop.agent import Agent
from mini_letta.loop.parts import AgentParts, build_parts
from mini_letta.loop.prompt import Prompt
from mini_letta.toolbox import Toolbox, approve_all


def test_the_agent_holds_the_parts_it_is_given_and_they_share_one_state_prompt_and_measure(workspace):
    provider = script([])
    parts = build_parts(provider=provider, budget=make_budget(provider, True), toolbox=Toolbox(workspace, approve_all),
                        workspace=workspace)
    agent = Agent(parts=parts)
    for field in dataclasses.fields(AgentParts):
        assert getattr(agent, field.name) is getattr(parts, field.name), field.name
    assert agent.journal.state is agent.state and agent.compacting.state is agent.state
    assert agent.compacting.measure is agent.sizing and agent.compacting.journal is agent.journal
    assert agent.compacting.summarizer.prompt is agent.prompt and agent.compacting.summarizer.ledger is agent.ledger
    assert agent.prompt.model is agent.model and agent.prompt.toolbox is agent.toolbox
    assert type(agent.prompt) is Prompt


def test_assemble_builds_the_prompt_of_the_class_it_is_given(workspace):
    agent = make_agent(script(["hello"]), workspace, lean_system="Short and plain.", tool_names=("read_file",))
    assert isinstance(agent.prompt, LeanPrompt)
    agent.run_turn("hi")
    [request] = agent.provider.requests
    assert request.system.startswith("Short and plain.") and [spec.name for spec in request.tools] == ["read_file"]
    # The summarizer asks the same prompt the agent sends: one object, not a second one built beside it.
    assert agent.compacting.summarizer.prompt is agent.prompt
