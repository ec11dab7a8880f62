"""A repository a sandboxed command plants never runs its program on the host: not through our own
checkpoint git (``safe_git``), not through the user's next ``git status/diff/commit`` (``disarm``).

Each attack names a program that touches a marker file outside the workspace, in a folder under
/var/tmp that is read-only inside the sandbox: the marker appears only if the program ran on the
host. Each is run three times: with every protection (no marker), with the clean-up and the
read-only mounts of existing repositories switched off (our git still runs nothing; the user's git
runs it: the attack is real), and, for the attacks our own git could fall into, with ``safe_git``
switched off too (our checkpoint runs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from mini_letta import safe_git
from mini_letta.checkpoints.gitsnap import Snapshotter
from mini_letta.checkpoints.recorder import Checkpoints
from mini_letta.messages import Message, ToolCall
from mini_letta.toolbox import Toolbox, approve_all, disarm
from mini_letta.toolbox import sandbox as sandbox_module
from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings

pytestmark = pytest.mark.usefixtures("bubblewrap")

IDENTITY = ["-c", "user.name=U", "-c", "user.email=u@example.invalid"]
COMMIT = "git -c user.name=A -c user.email=a@example.invalid commit -q"
HOOK = "printf '#!/bin/sh\\ntouch {marker}\\n' > {path} && chmod +x {path}"


@pytest.fixture
def place(monkeypatch):
    """``ws``: a git repository with one commit (and a submodule ``sub``); ``out``: where the marker goes."""
    root = Path(tempfile.mkdtemp(prefix="mini-letta-git-", dir="/var/tmp"))
    ws, out, home, upstream = root / "ws", root / "out", root / "home", root / "upstream"
    for folder in (ws, out, home, upstream):
        folder.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MINI_LETTA_HOME", str(root / "data"))
    user = {**os.environ, "GIT_AUTHOR_NAME": "U", "GIT_AUTHOR_EMAIL": "u@example.invalid",
            "GIT_COMMITTER_NAME": "U", "GIT_COMMITTER_EMAIL": "u@example.invalid"}
    setup = (f"git init -q {upstream} && echo up > {upstream}/up.txt && git -C {upstream} add up.txt "
             f"&& git -C {upstream} commit -qm up && cd {ws} && git init -q . && echo one > f.txt "
             f"&& git -c protocol.file.allow=always submodule add -q {upstream} sub && git add -A "
             "&& git commit -qm one")
    subprocess.run(setup, shell=True, check=True, env=user, capture_output=True)
    try:
        yield type("Place", (), {"ws": ws, "out": out, "marker": out / "marker", "root": root})
    finally:
        disarm._TREES.pop(ws.resolve(), None)
        shutil.rmtree(root, ignore_errors=True)


# name -> (the command the sandbox runs, the user's git commands afterwards, our git can fall into it)
ATTACKS = {
    "fsmonitor in a nested repository": (
        "git init -q nested && echo a > nested/a.txt && cd nested && git add a.txt && " + COMMIT + " -m n "
        "&& git config core.fsmonitor 'touch {marker}; false'",
        ["git -C nested status", "git status"], True),
    "a submodule's .git/modules/<name>/config": (
        "git config --file .git/modules/sub/config core.fsmonitor 'touch {marker}; false'",
        ["git status", "git -C sub status"], True),
    "commondir pointing at a folder with hooks": (
        "git init -q nested && cp -r nested/.git common && " + HOOK.format(marker="{marker}",
                                                                            path="common/hooks/pre-commit")
        + " && echo ../../common > nested/.git/commondir",
        ["git -C nested commit -q --allow-empty -m x"], False),
    "hooksPath on the section line": (
        "git init -q nested && mkdir nested/h && " + HOOK.format(marker="{marker}", path="nested/h/pre-commit")
        + " && printf '[core] hooksPath = h\\n' >> nested/.git/config",
        ["git -C nested commit -q --allow-empty -m x"], False),
    "a quoted ! alias": (
        "git init -q nested && printf '[alias]\\n\\tst = \"!touch {marker}\"\\n' >> nested/.git/config",
        ["git -C nested st"], False),
    "a diff driver's command with .gitattributes": (
        "git init -q nested && cd nested && echo a > a.txt && git add a.txt && " + COMMIT + " -m n "
        "&& echo b >> a.txt && echo '* diff=x' > .gitattributes "
        "&& printf '[diff \"x\"]\\n\\tcommand = touch {marker}\\n' >> .git/config",
        ["git -C nested diff"], False),
}


def run_attack(place, command: str, user_commands: list[str]) -> tuple[bool, bool, str]:
    """The command in the sandbox with checkpoints around it, then a second one; whether the marker
    was there after our git, whether after the user's, and what the model was told."""
    sandbox = Sandbox.create(place.ws, SandboxSettings("workspace-write"), place.root / "data")
    box = Toolbox(place.ws, approve_all, sandbox=sandbox)
    notices: list[str] = []
    checkpoints = Checkpoints(place.ws, box.ws.resolve, lambda: place.root / "s.jsonl", notices.append)
    box.watch_changes = checkpoints.watch
    checkpoints.begin(Message.user("go"))
    told = box.run(ToolCall("c1", "bash", json.dumps({"command": command.format(marker=place.marker)}))).text
    box.run(ToolCall("c2", "bash", json.dumps({"command": "echo two >> f.txt && echo b >> nested/a.txt; true"})))
    after_ours = place.marker.exists()
    for line in user_commands:
        subprocess.run(line, shell=True, cwd=place.ws, capture_output=True, timeout=30,
                       env={**os.environ, "GIT_AUTHOR_NAME": "U", "GIT_AUTHOR_EMAIL": "u@example.invalid",
                            "GIT_COMMITTER_NAME": "U", "GIT_COMMITTER_EMAIL": "u@example.invalid"})
    assert not any("git failed" in notice or "could not be recorded" in notice for notice in notices), notices
    return after_ours, place.marker.exists(), told


@pytest.mark.parametrize("name", ATTACKS)
def test_the_attack_leaves_no_marker_on_the_host_and_the_model_is_told(place, name):
    command, user_commands, _ = ATTACKS[name]
    after_ours, after_users, told = run_attack(place, command, user_commands)
    assert not after_ours and not after_users
    # Refused (a repository that existed is read-only inside) or cleaned up, and said either way.
    assert "the sandbox removed them" in told or "Read-only file system" in told, told


def protections_off(monkeypatch):
    """No clean-up, and no read-only mounts of the repositories that existed before."""
    monkeypatch.setattr(disarm.RepositoryWatch, "disarm", lambda self: [])
    monkeypatch.setattr(sandbox_module, "repositories_under", lambda workspace: [])


@pytest.mark.parametrize("name", ATTACKS)
def test_without_the_clean_up_the_users_git_runs_the_program(place, name, monkeypatch):
    protections_off(monkeypatch)
    command, user_commands, _ = ATTACKS[name]
    after_ours, after_users, _ = run_attack(place, command, user_commands)
    assert not after_ours  # our own git still ran nothing
    assert after_users


@pytest.mark.parametrize("name", [name for name, (_, _, ours) in ATTACKS.items() if ours])
def test_without_safe_git_our_checkpoint_runs_the_program(place, name, monkeypatch):
    protections_off(monkeypatch)
    monkeypatch.setattr(safe_git, "environment", lambda user_config=False, filters=(), extra=None:
                        {**os.environ, **(extra or {})})
    monkeypatch.setattr(Snapshotter, "_forget", lambda self, paths: None)
    command, _, _ = ATTACKS[name]
    after_ours, _, _ = run_attack(place, command, [])
    assert after_ours
