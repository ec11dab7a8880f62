"""MCP tool definitions inside the budget: a real 200-tool server deferred behind tool_search, found,
loaded after the tools already sent, called; with deferral off the floor check refuses a window they
do not fit, with the numbers."""

from __future__ import annotations

import pytest

from agent_support import make_agent, script, tool_call
from mcp_support import agents, agent_with_servers, many_tools_body, python_server, said, stdio  # noqa: F401 (agents: a fixture)
from mini_letta.notices import Notices
from mini_letta.context import counter_for_model
from mini_letta.errors import FloorTooHighError
from mini_letta.mcp.deferral import Policy, policy_from_env, search
from mini_letta.messages import ToolSpec


@pytest.fixture
def many_tools(tmp_path):
    """The command of a stdio server with 200 ordinary tools (three typed parameters each)."""
    return python_server(tmp_path, "many", many_tools_body(200))


def test_two_hundred_tools_are_deferred_found_loaded_after_the_sent_tools_and_called(agents, workspace, many_tools):
    window = 64_000
    provider = script([
        tool_call("tool_search", query="approve_invoice_50"),
        tool_call("mcp__many__approve_invoice_50", record_id=7, region="north"),
        "approved",
    ], window=window)
    agent, tools = agent_with_servers(agents, workspace, {"many": stdio(many_tools)}, provider)
    counter = counter_for_model("scripted")
    assert tools.deferred
    assert counter.count_tools(tools.specs_by_server()["many"]) > window * 30 / 100  # ~28k tokens
    agent.run_turn("approve invoice 50")

    first, second, third = provider.requests[:3]
    mcp_first = [spec for spec in first.tools if spec.name.startswith("mcp__") or spec.name == "tool_search"]
    assert [spec.name for spec in mcp_first] == ["tool_search"]
    assert "approve_invoice_50" in mcp_first[0].description  # the deferred names are listed
    assert counter.count_tools(mcp_first) <= window * 10 / 100
    # The found tool's schema comes after every tool already sent: the cached prefix stays valid.
    assert second.tools[:len(first.tools)] == first.tools
    assert [spec.name for spec in second.tools[len(first.tools):]] == ["mcp__many__approve_invoice_50"]
    assert second.tools[-1].parameters["required"] == ["record_id", "region"]
    assert third.tools == second.tools
    results = [m.text for m in agent.conversation.messages if m.role == "tool"]
    assert "mcp__many__approve_invoice_50" in results[0]
    assert results[1] == "approve_invoice_50 done for 7 in north"
    row = tools.rows()[0]
    assert (row.tools, row.loaded, row.deferred) == (200, 1, True)
    search_cost = counter.count_tools([agent.toolbox.spec("tool_search")])
    assert f"deferred behind tool_search (it and the names cost {search_cost:,} tokens)" in tools.summary()


def test_with_deferral_off_the_floor_check_refuses_a_window_they_do_not_fit(agents, workspace, many_tools,
                                                                          monkeypatch):
    monkeypatch.setenv("MINI_LETTA_TOOL_SEARCH", "off")
    provider = script(["never sent"], window=32_000)
    agent, tools = agent_with_servers(agents, workspace, {"many": stdio(many_tools)}, provider)
    assert not tools.deferred and len([s for s in agent.tool_specs() if s.name.startswith("mcp__")]) == 200
    with pytest.raises(FloorTooHighError) as refused:
        agent.run_turn("hello")
    floor = agent.budget.calibration.floor(agent.system_prompt(), agent.tool_specs())
    assert f"take {floor:,} tokens" in str(refused.value) and "32,000-token window" in str(refused.value)
    assert provider.requests == []


def test_in_a_small_window_even_the_names_are_left_out_and_the_servers_named(agents, workspace, many_tools):
    agent, tools = agent_with_servers(agents, workspace, {"many": stdio(many_tools)}, script(["ok"], window=8_192))
    notices = said(agent)
    assert tools.names_only_servers
    assert any("do not fit 10% of the 8,192-token window" in n and "many (200 tools)" in n for n in notices), notices
    search_spec = next(spec for spec in agent.tool_specs() if spec.name == "tool_search")
    assert "- many: 200 tools" in search_spec.description and "approve_invoice_50" not in search_spec.description
    assert agent.run_turn("hi").text == "ok"


def test_a_few_tools_under_the_share_are_sent_up_front(agents, workspace, tmp_path):
    command = python_server(tmp_path, "few", many_tools_body(3))
    provider = script(["ok"], window=64_000)
    agent, tools = agent_with_servers(agents, workspace, {"few": stdio(command)}, provider)
    agent.run_turn("hi")
    names = [spec.name for spec in provider.requests[0].tools]
    assert not tools.deferred and "tool_search" not in names
    assert names[-3:] == ["mcp__few__create_invoice_0", "mcp__few__create_customer_1", "mcp__few__create_ticket_2"]


def test_calling_a_deferred_tool_by_name_loads_it_too(agents, workspace, many_tools, monkeypatch):
    monkeypatch.setenv("MINI_LETTA_TOOL_SEARCH", "on")
    provider = script([tool_call("mcp__many__find_order_36", record_id=1, region="east"), "done"], window=64_000)
    agent, _ = agent_with_servers(agents, workspace, {"many": stdio(many_tools)}, provider)
    agent.run_turn("go")
    assert provider.requests[1].tools[-1].name == "mcp__many__find_order_36"
    assert [m.text for m in agent.conversation.messages if m.role == "tool"] == ["find_order_36 done for 1 in east"]


@pytest.mark.parametrize("raw, policy", [
    ("", Policy("auto", 10.0)), ("auto", Policy("auto", 10.0)), ("auto:25", Policy("auto", 25.0)),
    ("on", Policy("on")), ("off", Policy("off")),
])
def test_tool_search_setting(monkeypatch, raw, policy):
    monkeypatch.setenv("MINI_LETTA_TOOL_SEARCH", raw)
    assert policy_from_env() == policy


def test_a_bad_tool_search_setting_is_one_notice_and_auto(monkeypatch):
    monkeypatch.setenv("MINI_LETTA_TOOL_SEARCH", "sometimes")
    channel = Notices()
    assert policy_from_env(channel.say) == Policy("auto")
    assert len(channel.take()) == 1


def test_auto_defers_only_past_the_share():
    assert not Policy("auto", 10).defers(999, 10_000)
    assert Policy("auto", 10).defers(1_001, 10_000)
    assert Policy("on").defers(1, 10_000) and not Policy("off").defers(10**6, 10_000)


def test_search_ranks_name_words_over_description_words_and_honours_select():
    specs = [ToolSpec("mcp__a__create_issue", "Open a ticket in the tracker.", {}),
             ToolSpec("mcp__a__list_issues", "List issues.", {}),
             ToolSpec("mcp__b__send_mail", "Create an email and send it; mentions an issue.", {})]
    assert [s.name for s in search("create issue", specs)][:2] == ["mcp__a__create_issue", "mcp__a__list_issues"]
    assert [s.name for s in search("select:mcp__b__send_mail,nope", specs)] == ["mcp__b__send_mail"]
    assert [s.name for s in search("send_mail", specs)] == ["mcp__b__send_mail"]
    assert search("unrelated words", specs) == []


def test_a_smaller_window_learned_later_defers_the_tools_it_no_longer_fits(agents, workspace, tmp_path):
    command = python_server(tmp_path, "hundred", many_tools_body(100))  # ~14k tokens of definitions
    provider = script(["first", "second"], window=200_000)
    agent, tools = agent_with_servers(agents, workspace, {"hundred": stdio(command)}, provider)
    agent.run_turn("one")
    assert not tools.deferred and len(provider.requests[0].tools) > 100
    said(agent)
    assert agent.budget.learn_window(64_000)  # as after a rejection naming the server's real window
    agent.run_turn("two")
    names = [spec.name for spec in provider.requests[1].tools]
    assert tools.deferred and names[-1] == "tool_search" and not any(n.startswith("mcp__") for n in names)
    assert any("now 64,000 tokens: MCP tool definitions are deferred" in n for n in said(agent))
