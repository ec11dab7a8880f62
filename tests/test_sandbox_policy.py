"""Approvals follow the sandbox; the mode comes from the user's settings, the environment or
--sandbox; where no sandbox can run, that is said once with the fix and every command asks."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from mini_letta.notices import Notices
from mini_letta import config
from mini_letta.app import Options, build_agent
from mini_letta.messages import ToolCall
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.toolbox import Toolbox
from mini_letta.toolbox import sandbox as sandbox_module
from mini_letta.toolbox.builtins import OUTSIDE_SANDBOX
from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings, load_settings


class Recorder:
    """An approver that remembers what it was asked and says ``answer``."""

    def __init__(self, answer: bool):
        self.answer, self.asked = answer, []

    def __call__(self, call, summary):
        self.asked.append(summary)
        return self.answer


def bash_call(**arguments) -> ToolCall:
    return ToolCall("c1", "bash", json.dumps(arguments))


@pytest.fixture
def no_bubblewrap(monkeypatch, tmp_path):
    """A PATH on which bwrap cannot be found (only bash is on it)."""
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir()
    (folder / "bash").symlink_to(shutil.which("bash"))
    monkeypatch.setenv("PATH", str(folder))
    sandbox_module.unavailable_reason.cache_clear()
    yield
    sandbox_module.unavailable_reason.cache_clear()


def test_in_workspace_write_a_command_runs_without_asking(bubblewrap, workspace):
    approver = Recorder(answer=False)
    box = Toolbox(workspace, approver, sandbox=Sandbox.create(workspace, SandboxSettings(), workspace.parent / "d"))
    outcome = box.run(bash_call(command="echo made > made.txt; cat made.txt"))
    assert approver.asked == [] and outcome.text == "made\n[exit code 0]"


def test_running_outside_the_sandbox_asks_showing_where_and_is_refused_when_the_user_says_no(bubblewrap, workspace):
    approver = Recorder(answer=False)
    box = Toolbox(workspace, approver, sandbox=Sandbox.create(workspace, SandboxSettings(), workspace.parent / "d"))
    outcome = box.run(bash_call(command="touch outside.txt", sandbox=False))
    assert approver.asked == [f"run outside the sandbox: touch outside.txt ({OUTSIDE_SANDBOX})"]
    assert outcome.is_error and not (workspace / "outside.txt").exists()
    box.approver = Recorder(answer=True)
    assert not box.run(bash_call(command="touch outside.txt", sandbox=False)).is_error
    assert (workspace / "outside.txt").exists()


class ReplLike(Recorder):
    """Takes ``protected`` as the REPL's approver does: a reason given means ask even after "always"."""

    def __call__(self, call, summary, protected=None):
        self.asked.append(protected)
        return self.answer


def test_a_call_outside_the_sandbox_is_asked_every_time_with_the_reason(bubblewrap, workspace):
    approver = ReplLike(answer=True)
    box = Toolbox(workspace, approver, sandbox=Sandbox.create(workspace, SandboxSettings(), workspace.parent / "d"))
    box.run(bash_call(command="true", sandbox=False))
    box.run(bash_call(command="true"))  # inside: not asked at all
    assert approver.asked == [OUTSIDE_SANDBOX]
    unsandboxed = Toolbox(workspace, approver, sandbox=Sandbox(workspace, SandboxSettings("off")))
    unsandboxed.run(bash_call(command="true", sandbox=False))
    assert approver.asked == [OUTSIDE_SANDBOX, None]  # no sandbox: an ordinary question, "always" applies


def test_without_bubblewrap_the_fix_is_said_once_and_every_command_asks(no_bubblewrap, workspace, monkeypatch):
    monkeypatch.delenv("MINI_LETTA_SANDBOX")
    options = Options(workspace=workspace)
    agent = build_agent(options, Recorder(answer=False), provider=ScriptedProvider([]))
    notices = [text for text in options.notices.take() if "andbox" in text]
    assert len(notices) == 1 and "apt install bubblewrap" in notices[0] and "every command asks" in notices[0]
    approver = agent.toolbox.approver
    outcome = agent.toolbox.run(bash_call(command="touch ran.txt"))
    assert approver.asked == ["run: touch ran.txt"] and outcome.is_error
    assert not (workspace / "ran.txt").exists()


def test_the_default_is_workspace_write_and_the_settings_file_or_the_option_change_it(bubblewrap, workspace,
                                                                                       monkeypatch):
    monkeypatch.delenv("MINI_LETTA_SANDBOX")
    scripted = lambda: ScriptedProvider([])  # noqa: E731
    assert build_agent(Options(workspace=workspace), Recorder(True), scripted()).toolbox.sandbox.mode == "workspace-write"
    config.private_folder(config.home())
    (config.home() / "settings.json").write_text(json.dumps({"sandbox": {"mode": "read-only", "network": True}}))
    box = build_agent(Options(workspace=workspace), Recorder(True), scripted()).toolbox
    assert box.sandbox.mode == "read-only" and box.sandbox.settings.network
    box = build_agent(Options(workspace=workspace, sandbox="off"), Recorder(True), scripted()).toolbox
    assert box.sandbox.mode == "off" and not box.sandbox.active


def test_a_workspace_settings_file_cannot_turn_the_sandbox_off(bubblewrap, workspace, monkeypatch):
    monkeypatch.delenv("MINI_LETTA_SANDBOX")
    (workspace / ".mini-letta").mkdir()
    (workspace / ".mini-letta" / "settings.json").write_text(json.dumps({"sandbox": "off"}))
    box = build_agent(Options(workspace=workspace), Recorder(True), ScriptedProvider([])).toolbox
    assert box.sandbox.mode == "workspace-write"


@pytest.mark.parametrize("entry, notice", [
    ({"mode": "yolo"}, "Ignoring sandbox mode 'yolo'"),
    ({"network": "yes"}, "Ignoring sandbox network 'yes'"),
    ({"hide": "~/.kube"}, "Ignoring the sandbox hide list"),
    (5, 'Ignoring "sandbox"'),
])
def test_a_malformed_sandbox_setting_is_one_notice_and_the_default(tmp_path, entry, notice, monkeypatch):
    monkeypatch.delenv("MINI_LETTA_SANDBOX")
    (tmp_path / "settings.json").write_text(json.dumps({"sandbox": entry}))
    channel = Notices()
    settings = load_settings(tmp_path, say=channel.say)
    assert settings.mode == "workspace-write" and settings.network is False
    notices = channel.take()
    assert len(notices) == 1 and notice in notices[0]


def test_the_environment_overrides_the_settings_file_and_the_option_overrides_both(tmp_path, monkeypatch):
    (tmp_path / "settings.json").write_text(json.dumps({"sandbox": {"mode": "read-only", "hide": ["~/.kube"]}}))
    monkeypatch.delenv("MINI_LETTA_SANDBOX")
    assert load_settings(tmp_path) == SandboxSettings("read-only", False, ("~/.kube",))
    monkeypatch.setenv("MINI_LETTA_SANDBOX", "workspace-write")
    assert load_settings(tmp_path).mode == "workspace-write"
    assert load_settings(tmp_path, "off").mode == "off"


def test_hidden_paths_cover_secrets_the_users_list_and_env_files_around_the_workspace_but_not_inside(tmp_path):
    home, data = tmp_path / "home", tmp_path / "data"
    projects = home / "projects"
    workspace, sibling = projects / "app", projects / "other"
    for folder in (home / ".aws", home / ".kube", data, workspace, sibling):
        folder.mkdir(parents=True)
    for file in (home / ".netrc", sibling / ".env.local", projects / ".env", workspace / ".env"):
        file.write_text("secret\n")
    sandbox = Sandbox(workspace, SandboxSettings(hide=(str(home / ".kube"), str(home / "nothing-here"))),
                      data, user_home=home)
    hidden = set(sandbox.hidden_paths())
    assert {home / ".aws", home / ".kube", home / ".netrc", data, sibling / ".env.local", projects / ".env"} <= hidden
    assert workspace / ".env" not in hidden and home / "nothing-here" not in hidden
    assert home / ".ssh" not in hidden  # only what exists is hidden


def test_the_sandbox_command_shows_the_mode(workspace):
    from mini_letta.repl.commands import dispatch

    for sandbox, expected in [
        (Sandbox(workspace, SandboxSettings()), "Sandbox: workspace-write (the workspace and a private /tmp writable"),
        (Sandbox(workspace, SandboxSettings("off")), "Sandbox: off (chosen): commands run unsandboxed"),
        (Sandbox(workspace, SandboxSettings(), unavailable="bubblewrap is not installed; install bubblewrap "
                                                          "(`apt install bubblewrap`)"),
         "Sandbox: unavailable: bubblewrap is not installed"),
    ]:
        console = Console(file=io.StringIO(), width=200)
        repl = SimpleNamespace(console=console, agent=lambda s=sandbox: SimpleNamespace(toolbox=SimpleNamespace(sandbox=s)))
        dispatch(repl, "/sandbox")
        assert expected in console.file.getvalue()


def test_the_status_bar_names_an_active_sandbox(workspace):
    from mini_letta.repl.views import status_fields
    from agent_support import make_agent

    agent = make_agent(ScriptedProvider([]), workspace)
    agent.toolbox.sandbox = Sandbox(workspace, SandboxSettings("read-only"))
    assert ("sandbox", "sandbox: read-only", "") in status_fields(agent)
    agent.toolbox.sandbox = Sandbox(workspace, SandboxSettings("off"))
    assert all(name != "sandbox" for name, _, _ in status_fields(agent))


def test_the_repl_says_once_at_start_that_commands_run_unsandboxed_and_print_mode_stays_quiet(workspace):
    """conftest.py turns the sandbox off (MINI_LETTA_SANDBOX=off) for every test."""
    options = Options(workspace=workspace)
    build_agent(options, Recorder(True), ScriptedProvider([]))
    assert [notice for notice in options.notices.take() if "Sandbox" in notice] == [
        "Sandbox: off (chosen): commands run unsandboxed, with your rights; every command asks before it runs."]
    options = Options(workspace=workspace, headless=True)
    build_agent(options, Recorder(True), ScriptedProvider([]))
    assert not [notice for notice in options.notices.take() if "Sandbox" in notice]
