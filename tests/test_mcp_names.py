"""MCP tools whose names meet once made valid tool names (``get.x`` and ``get_x``; two long names
cut at 64 characters; a server ``a`` with ``b__x`` and a server ``a__b`` with ``x``) are all
offered, the later ones with a numbered suffix, and the user is told (issue 32): they were merged
silently, and calling one ran the other."""

from __future__ import annotations

from agent_support import make_agent, script, tool_call
from mcp_support import agents, agent_with_servers, python_server, said, stdio  # noqa: F401 (agents: a fixture)
from mini_letta.mcp.tools import MAX_NAME, unique_name

LONG = "summarise_the_quarterly_revenue_figures_for_each_sales_region_"

BODY = f"""
@server.tool(name="get.x")
def dotted() -> str:
    return "dotted get.x ran"

@server.tool(name="get_x")
def underscored() -> str:
    return "underscored get_x ran"

@server.tool(name="{LONG}north")
def north() -> str:
    return "north ran"

@server.tool(name="{LONG}south")
def south() -> str:
    return "south ran"
"""


def test_tools_whose_names_meet_are_all_offered_numbered_and_named_in_a_notice(agents, workspace, tmp_path):
    provider = script([tool_call("mcp__s__get_x"), tool_call("mcp__s__get_x_2"), "done"], window=64_000)
    agent, tools = agent_with_servers(agents, workspace, {"s": stdio(python_server(tmp_path, "s", BODY))}, provider)
    names = sorted(tools.routes)
    cut = f"mcp__s__{LONG}north"[:MAX_NAME]
    assert names == sorted(["mcp__s__get_x", "mcp__s__get_x_2", cut, cut[:MAX_NAME - 2] + "_2"])
    assert tools.routes["mcp__s__get_x"] == ("s", "get.x") and tools.routes["mcp__s__get_x_2"] == ("s", "get_x")
    notices = said(agent)
    assert any("'get_x' of s and the tool 'get.x' of s" in n and "offered as mcp__s__get_x_2" in n for n in notices)
    assert any(f"'{LONG}south'" in n for n in notices)
    agent.run_turn("call both")
    results = [m.text for m in agent.conversation.messages if m.role == "tool"]
    assert results == ["dotted get.x ran", "underscored get_x ran"]


def test_a_numbered_name_never_takes_one_already_used_and_stays_within_the_limit():
    taken = {"mcp__s__a", "mcp__s__a_2"}
    assert unique_name("mcp__s__a", taken) == "mcp__s__a_3"
    long = "m" * MAX_NAME
    assert unique_name(long, {long}) == "m" * (MAX_NAME - 2) + "_2"
    assert unique_name("mcp__s__b", taken) == "mcp__s__b"
