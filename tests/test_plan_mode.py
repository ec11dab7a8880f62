"""Plan mode and the other permission modes (issue 49): what each lets run, exit_plan_mode's
answers, and ``--permission-mode`` in ``-p``."""

import json

import pytest

from agent_support import make_agent, script, tool_call
from fault_support import cli
from mini_letta.messages import Message
from mini_letta.permission_mode import ACCEPT_EDITS, DEFAULT, PLAN, PLAN_REMINDER, PermissionMode, parse
from mini_letta.planning import KeepPlan, PlanAnswer
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.toolbox import deny_with


class Reviewer:
    def __init__(self, *answers: PlanAnswer):
        self.answers, self.plans = list(answers), []

    def review_plan(self, plan: str) -> PlanAnswer:
        self.plans.append(plan)
        return self.answers.pop(0)


def results(agent) -> list[Message]:
    return [m for m in agent.conversation.messages if m.role == "tool"]


def test_shift_tab_order_and_the_names_users_type():
    mode = PermissionMode()
    seen = []
    mode.listeners.append(seen.append)
    assert [mode.cycle(), mode.cycle(), mode.cycle()] == [ACCEPT_EDITS, PLAN, DEFAULT]
    assert seen == [ACCEPT_EDITS, PLAN, DEFAULT]
    assert parse("accept-edits") == ACCEPT_EDITS and parse("Plan") == PLAN
    with pytest.raises(ValueError, match="choose default, acceptEdits or plan"):
        parse("bypassPermissions")


def test_plan_mode_refuses_writes_and_commands_and_runs_reads(workspace):
    (workspace / "app.py").write_text("x = 1\n")
    provider = script([tool_call("write_file", path="new.py", content="y = 2\n"),
                       tool_call("bash", command="touch made-by-bash"),
                       tool_call("read_file", path="app.py"), Message.assistant("done")])
    agent = make_agent(provider, workspace, mode=PermissionMode(PLAN), plan_reviewer=Reviewer())
    agent.run_turn("add y")
    write, command, read = results(agent)
    assert write.is_error and "plan mode" in write.text and "exit_plan_mode" in write.text
    assert command.is_error and "plan mode" in command.text
    assert not read.is_error and "x = 1" in read.text
    assert not (workspace / "new.py").exists() and not (workspace / "made-by-bash").exists()


def test_the_model_is_told_it_plans_and_sees_the_tool_only_in_plan_mode(workspace):
    seen = []
    provider = ScriptedProvider(default=lambda request: seen.append(request) or "ok")
    mode = PermissionMode(PLAN)
    agent = make_agent(provider, workspace, mode=mode, plan_reviewer=Reviewer())
    agent.run_turn("what would you change?")
    request = seen[-1]
    assert "exit_plan_mode" in [spec.name for spec in request.tools]
    assert [m.text for m in request.messages[-2:]] == [PLAN_REMINDER, "what would you change?"]
    mode.set(DEFAULT)
    agent.run_turn("go")
    assert "exit_plan_mode" not in [spec.name for spec in seen[-1].tools]
    assert seen[-1].messages[-1].text == "go" and PLAN_REMINDER not in seen[-1].messages[-2].text
    assert agent.turns == 2  # the reminder belongs to its message's turn


def test_an_approved_plan_switches_the_mode_and_the_write_runs(workspace):
    provider = script([tool_call("exit_plan_mode", plan="1. write new.py"),
                       tool_call("write_file", path="new.py", content="y = 2\n"), Message.assistant("done")])
    mode, reviewer = PermissionMode(PLAN), Reviewer(PlanAnswer(ACCEPT_EDITS))
    # An approver that refuses everything: the write runs because the approved mode accepts edits.
    agent = make_agent(provider, workspace, mode=mode, plan_reviewer=reviewer, approver=deny_with("no"))
    agent.run_turn("plan it")
    assert reviewer.plans == ["1. write new.py"] and mode.name == ACCEPT_EDITS
    approved, written = results(agent)
    assert "approved your plan" in approved.text and not written.is_error
    assert (workspace / "new.py").read_text() == "y = 2\n"
    assert "exit_plan_mode" not in agent.toolbox


def test_a_rejected_plan_stays_in_plan_mode_with_the_feedback(workspace):
    provider = script([tool_call("exit_plan_mode", plan="1. delete everything"), Message.assistant("ok")])
    mode = PermissionMode(PLAN)
    agent = make_agent(provider, workspace, mode=mode, plan_reviewer=Reviewer(PlanAnswer(None, "keep the tests")))
    agent.run_turn("plan it")
    [answer] = results(agent)
    assert mode.name == PLAN and "stays in plan mode" in answer.text and "keep the tests" in answer.text


def test_accept_edits_runs_edits_unasked_but_still_asks_for_commands_and_protected_files(workspace):
    provider = script([tool_call("write_file", path="a.py", content="a\n"),
                       tool_call("write_file", path=".mcp.json", content="{}\n"),
                       tool_call("bash", command="touch b"), Message.assistant("done")])
    agent = make_agent(provider, workspace, mode=PermissionMode(ACCEPT_EDITS), approver=deny_with("refused"))
    agent.run_turn("go")
    edit, protected, command = results(agent)
    assert not edit.is_error and (workspace / "a.py").exists()
    assert protected.text == "refused" and not (workspace / ".mcp.json").exists()
    assert command.text == "refused" and not (workspace / "b").exists()


def test_print_mode_plan_is_the_result_and_nothing_is_written(tmp_path, workspace):
    plan = "## Plan\n1. Create `notes.txt`"
    asked = cli(["-p", "call exit_plan_mode " + json.dumps({"plan": plan}), "--provider", "demo",
                 "--permission-mode", "plan", "--output-format", "json"], home=tmp_path / "h", cwd=workspace)
    result = json.loads(asked.stdout)
    assert asked.returncode == 0, asked.stderr
    assert result["result"] == plan == result["plan"] and result["stopped"] == "plan"
    assert result["permission_mode"] == "plan" and result["num_turns"] == 1  # the turn ended at the plan
    text = cli(["-p", "call exit_plan_mode " + json.dumps({"plan": plan}), "--provider", "demo",
                "--permission-mode", "plan"], home=tmp_path / "h", cwd=workspace)
    assert text.stdout.strip() == plan
    refused = cli(["-p", "write notes.txt: hi", "--provider", "demo", "--permission-mode", "plan", "--yolo"],
                  home=tmp_path / "h", cwd=workspace)
    assert "plan mode" in refused.stdout and not (workspace / "notes.txt").exists()


def test_print_mode_accept_edits_writes_without_yolo(tmp_path, workspace):
    done = cli(["-p", "write notes.txt: hi", "--provider", "demo", "--permission-mode", "acceptEdits"],
               home=tmp_path / "h", cwd=workspace)
    assert done.returncode == 0 and (workspace / "notes.txt").read_text() == "hi\n"
    bad = cli(["-p", "hi", "--provider", "demo", "--permission-mode", "bold"], home=tmp_path / "h", cwd=workspace)
    assert bad.returncode == 1 and "is not a permission mode" in bad.stderr
