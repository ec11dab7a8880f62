"""What a subagent's toolbox holds, and how it is wired: the parent's MCP tools it selects (the
deferred ones behind a tool_search of its own, which loads nothing into the parent's requests),
no core memory or conversation_search unless its file names them, and every part given to the
builder as an argument, never assigned onto an agent or toolbox once built."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

from agent_support import script, tool_call
from mcp_support import agents, config_file, many_tools_body, python_server, stdio  # noqa: F401 (agents: a fixture)
from mini_letta import app, config
from mini_letta.app import assemble, make_budget, register_subagents
from mini_letta.memory import CoreMemory
from mini_letta.toolbox import Toolbox, approve_all
from mini_letta.toolbox.permissions import Permissions

SUBAGENTS = Path(app.__file__).parent / "subagents"


def parent_agent(provider, workspace, memory=None, servers=None):
    """An agent with the task tool (and ``servers``' tools, connected first), as ``build_agent`` wires it."""
    from mini_letta.mcp import open_tools

    mcp = None
    if servers:
        mcp = open_tools(config.home(), workspace, [config_file(workspace.parent, servers)])
        mcp.servers.wait()
    return assemble(provider, make_budget(provider, True), workspace, approver=approve_all, memory=memory,
                    subagents=register_subagents(config.home(), workspace), mcp=mcp)


def delegate(subagent_type: str, prompt: str = "Do the task."):
    return tool_call("task", description="the task", prompt=prompt, subagent_type=subagent_type)


def child_requests(provider):
    return [request for request in provider.requests if "You do not see the conversation of" in request.system]


def names(request) -> list[str]:
    return [spec.name for spec in request.tools]


def test_a_general_subagent_finds_the_parents_deferred_mcp_tools_without_loading_them_in_the_parent(
        agents, workspace, tmp_path, monkeypatch):  # noqa: F811 (agents: a fixture)
    monkeypatch.setenv("MINI_LETTA_TOOL_SEARCH", "on")
    provider = script([
        delegate("general", "Approve invoice 50."),
        tool_call("tool_search", query="approve_invoice_50"),
        tool_call("mcp__many__approve_invoice_50", record_id=7, region="north"),
        tool_call("mcp__many__find_order_36", record_id=1, region="east"),  # by its name, unsearched
        "REPORT: approved.",
        "Done.",
    ], window=64_000)
    agent = parent_agent(provider, workspace, servers={"many": stdio(python_server(tmp_path, "many", many_tools_body(200)))})
    agents.append(agent)
    agent.run_turn("Approve invoice 50 with a subagent.")
    first, second, third, fourth = child_requests(provider)
    assert "tool_search" in names(first) and not any(name.startswith("mcp__") for name in names(first))
    assert "approve_invoice_50" in first.tools[names(first).index("tool_search")].description
    assert names(second)[len(names(first)):] == ["mcp__many__approve_invoice_50"]
    assert names(fourth)[len(names(first)):] == ["mcp__many__approve_invoice_50", "mcp__many__find_order_36"]
    assert [m.text for m in fourth.messages if m.role == "tool"][1] == "approve_invoice_50 done for 7 in north"
    last = provider.requests[-1]
    assert not any(name.startswith("mcp__") for name in names(last))  # the parent's stay deferred
    assert not agent.toolbox.is_listed("mcp__many__approve_invoice_50")
    assert not agent.toolbox.is_listed("mcp__many__find_order_36")
    assert [m.text for m in agent.conversation.messages if m.role == "tool"] == ["REPORT: approved."]


def test_explore_gets_no_mcp_tools_and_no_tool_search(agents, workspace, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("MINI_LETTA_TOOL_SEARCH", "on")
    provider = script([delegate("explore"), "REPORT", "Done."], window=64_000)
    agent = parent_agent(provider, workspace, servers={"many": stdio(python_server(tmp_path, "many", many_tools_body(3)))})
    agents.append(agent)
    agent.run_turn("Go.")
    (request,) = child_requests(provider)
    assert names(request) == ["read_file", "grep", "glob"]


def test_core_memory_and_conversation_search_only_for_a_type_whose_file_names_them(workspace):
    folder = config.home() / "agents"
    folder.mkdir(parents=True)
    (folder / "scribe.md").write_text("---\nname: scribe\ndescription: keeps notes\n"
                                      "tools: Read, core_memory_append, conversation_search\n---\nYou keep notes.\n")
    memory = CoreMemory.for_workspace(workspace, config.home())
    memory.append("project", "NOTE-IN-MEMORY: the parser lives in src/parse.py.")
    provider = script([delegate("general"), "REPORT one", "Next.", delegate("scribe"),
                       tool_call("core_memory_append", label="project", content="SCRIBE-NOTE"), "REPORT two",
                       "Done."], window=64_000)
    agent = parent_agent(provider, workspace, memory=memory)
    assert {"core_memory_append", "core_memory_replace"} <= set(agent.toolbox.names())
    agent.run_turn("Go.")
    agent.run_turn("Again.")
    general, scribe, _ = child_requests(provider)
    assert not {"core_memory_append", "core_memory_replace", "conversation_search"} & set(names(general))
    assert "NOTE-IN-MEMORY" not in general.system
    assert names(scribe) == ["read_file", "core_memory_append", "conversation_search"]
    assert "NOTE-IN-MEMORY" in scribe.system  # it edits what it can see
    assert "SCRIBE-NOTE" in memory.render()


def test_a_toolbox_built_for_a_subagent_holds_only_its_tools_and_shares_the_permissions(workspace):
    parent = Toolbox(workspace, approve_all)
    child = Toolbox(workspace, approve_all, permissions=parent.permissions, select=lambda name: name == "read_file")
    assert child.names() == ["read_file"] and child.permissions is parent.permissions
    assert len(parent.permissions.always_ask) == 2  # the child's checks are the parent's, not added again
    child.register(parent.spec("bash"), lambda arguments: "ran")
    assert "bash" not in child
    alone = Toolbox(workspace, approve_all)
    assert isinstance(alone.permissions, Permissions) and alone.permissions is not parent.permissions


def test_a_child_has_a_budget_conversation_spend_and_toolbox_of_its_own(workspace):
    from mini_letta.subagents.runner import SubagentRun, read_task_request

    provider = script([], window=4_096)
    agent = parent_agent(provider, workspace)
    agent.toolbox.add_dir(workspace.parent)
    request = read_task_request({"description": "d", "prompt": "p", "subagent_type": "general"},
                                agent.subagents.catalog)
    child = agent.subagents.start(request, SubagentRun("general", "d")).agent
    assert child.budget is not agent.budget and child.budget.window == agent.budget.window == 4_096
    assert child.budget.calibration is not agent.budget.calibration
    assert child.conversation is not agent.conversation and child.conversation.messages == []
    assert child.spend is not agent.spend and child.compacting is not agent.compacting
    assert child.toolbox is not agent.toolbox and child.toolbox.permissions is agent.toolbox.permissions
    assert child.toolbox.watch_changes is agent.toolbox.watch_changes and child.toolbox.ws.added == [workspace.parent]


def test_the_runner_is_made_with_the_agent_itself_and_starts_its_children(workspace):
    from mini_letta.subagents.runner import SubagentRun, read_task_request

    agent = parent_agent(script([]), workspace)
    request = read_task_request({"description": "d", "prompt": "p", "subagent_type": "explore"},
                                agent.subagents.catalog)
    assert agent.subagents.start(request, SubagentRun("explore", "d")).parent is agent
    # The parent is given as it is, not as a function to call later.
    runner = register_subagents(config.home(), workspace).runner(agent)
    child = runner.start(request, SubagentRun("explore", "d"))
    assert child.parent is agent and child.agent.provider is agent.provider


# -- the wiring, read from the code -------------------------------------------------------------------
OWNED_BY_OTHERS = {"agent", "toolbox", "parent", "source"}


def assignments_onto_others(tree: ast.AST) -> list[str]:
    """``x.agent.y = …``, ``toolbox.y = …``: an attribute set on an agent, a toolbox or a parent
    from outside (its own ``self.y`` and the room's own records are not)."""
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for each in (target.elts if isinstance(target, ast.Tuple) else [target]):
                path = []
                while isinstance(each, ast.Attribute):
                    path.insert(0, each.attr)
                    each = each.value
                if isinstance(each, ast.Name):
                    path.insert(0, each.id)
                if len(path) > 1 and OWNED_BY_OTHERS & set(path[:-1]):
                    found.append(".".join(path))
    return found


def test_subagents_assign_nothing_onto_an_agent_or_a_toolbox_once_built():
    found = {path.name: assignments_onto_others(ast.parse(path.read_text())) for path in SUBAGENTS.glob("*.py")}
    wiring = ast.parse(textwrap.dedent(inspect.getsource(app.register_subagents)))
    found["app.register_subagents"] = assignments_onto_others(wiring)
    assert {name: paths for name, paths in found.items() if paths} == {}


def test_the_assignment_check_finds_one():
    assert assignments_onto_others(ast.parse("toolbox.permissions = p\nagent.subagents = r\nself.run.steps = 1\n"
                                             "self.agent = a\n")) == ["toolbox.permissions", "agent.subagents"]
