"""Repositories that already exist under the workspace (a vendored repository, submodules and
their submodules in ``.git/modules``) keep their hooks and config read-only inside the sandbox, as
the workspace's own do (issue 32): writing ``.git/modules/<name>/config`` was enough to run a
program at the next ``git status``. Their git folders are read-only whole, one mount each. Each
attack succeeds with the protection switched off.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from mini_letta.messages import ToolCall
from mini_letta.toolbox import Toolbox, approve_all, disarm, sandbox as sandbox_module
from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings

pytestmark = pytest.mark.usefixtures("bubblewrap")  # conftest.py: skip, or fail in CI, without it

ARMED = "touch /var/tmp/armed-by-the-sandbox"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def ws():
    """A repository with a vendored repository (``vendor/lib``), a submodule whose git folder is
    ``.git/modules/sub`` and a submodule of it (``.git/modules/sub/modules/inner``), under /var/tmp."""
    root = Path(tempfile.mkdtemp(prefix="mini-letta-repos-", dir="/var/tmp"))
    workspace = root / "ws"
    workspace.mkdir()
    git("init", "-q", cwd=workspace)
    (workspace / "vendor" / "lib").mkdir(parents=True)
    git("init", "-q", cwd=workspace / "vendor" / "lib")
    (workspace / ".git" / "modules" / "sub" / "modules").mkdir(parents=True)
    git("init", "-q", f"--separate-git-dir={workspace / '.git/modules/sub'}", "sub", cwd=workspace)
    (workspace / ".git" / "modules" / "sub" / "modules").mkdir(exist_ok=True)
    git("init", "-q", f"--separate-git-dir={workspace / '.git/modules/sub/modules/inner'}", "inner",
        cwd=workspace / "sub")
    try:
        yield workspace
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(workspace: Path, command: str) -> str:
    box = Toolbox(workspace, approve_all,
                  sandbox=Sandbox.create(workspace, SandboxSettings(), workspace.parent / "data"))
    return box.run(ToolCall("call_1", "bash", json.dumps({"command": command}))).text


ATTACKS = {
    "vendored config": ("vendor/lib/.git/config", f"git -C vendor/lib config core.fsmonitor '{ARMED}'"),
    "vendored hook": ("vendor/lib/.git/hooks/pre-commit",
                      f"mkdir -p vendor/lib/.git/hooks; printf '#!/bin/sh\\n{ARMED}\\n' > vendor/lib/.git/hooks/pre-commit"),
    "submodule config": (".git/modules/sub/config", f"printf '[core]\\n\\tfsmonitor = {ARMED}\\n' >> .git/modules/sub/config"),
    "submodule of a submodule": (".git/modules/sub/modules/inner/config",
                                 f"git -C sub/inner config core.hooksPath /var/tmp"),
    "submodule pointer": ("sub/.git", "echo 'gitdir: ../evil' > sub/.git"),
    "rename a git folder away": ("vendor/lib/.git/HEAD", "mv vendor/lib/.git vendor/lib/.git-old && mkdir vendor/lib/.git "
                                 "&& echo 'ref: refs/heads/evil' > vendor/lib/.git/HEAD"),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_hooks_and_config_of_repositories_that_existed_are_read_only_inside(attack, ws, monkeypatch):
    target, command = ATTACKS[attack]
    path = ws / target
    before = path.read_bytes() if path.exists() else None
    inside = run(ws, command)
    assert (path.read_bytes() if path.exists() else None) == before, inside
    assert "[sandbox (workspace-write)" in inside, inside
    # Switched off (no repositories found, and no clean-up after the command, which would take the
    # change out again): the same command changes the file.
    monkeypatch.setattr(sandbox_module, "repositories_under", lambda workspace: [])
    monkeypatch.setattr(disarm.RepositoryWatch, "disarm", lambda self: [])
    run(ws, command)
    assert (path.read_bytes() if path.exists() else None) != before


def test_the_repositories_are_found_once_per_session_and_can_still_be_read(ws, monkeypatch):
    walks = []
    real = sandbox_module.repositories_under
    monkeypatch.setattr(sandbox_module, "repositories_under", lambda workspace: walks.append(1) or real(workspace))
    sandbox = Sandbox.create(ws, SandboxSettings(), ws.parent / "data")
    assert sorted(str(p.relative_to(ws)) for p in real(ws)) == [".git/modules", "sub/.git", "sub/inner/.git",
                                                                "vendor/lib/.git"]
    for _ in range(3):
        assert sandbox.run("git -C vendor/lib status --short && git -C sub/inner status --short",
                           10, 1000).text.endswith("[exit code 0]")
    assert walks == [1]
    shutil.rmtree(ws / "vendor")  # a repository removed since is left out, not mounted on
    assert sandbox.run("git -C sub status --short", 10, 1000).text.endswith("[exit code 0]")


def test_a_repository_put_where_a_read_only_one_was_is_disarmed(ws, monkeypatch):
    """What is mounted read-only is not read by the clean-up, but a command can rename the folder
    that holds it and make a repository of its own at the old place: the clean-up checks that each
    read-only mount is still the one it was (device and inode) and reads the new one."""
    command = (f"mv vendor vendor-old && mkdir -p vendor/lib && git init -q vendor/lib && "
               f"git -C vendor/lib config core.fsmonitor '{ARMED}'")
    config = ws / "vendor" / "lib" / ".git" / "config"

    def armed() -> bool:
        return "fsmonitor" in subprocess.run(["git", "config", "--file", str(config), "--list"],
                                             capture_output=True, text=True).stdout

    run(ws, command)
    assert (ws / "vendor-old" / "lib" / ".git").is_dir() and config.exists() and not armed()
    shutil.rmtree(ws / "vendor")
    (ws / "vendor-old").rename(ws / "vendor")
    monkeypatch.setattr(disarm.Fixed, "check", lambda self: None)  # the identity no longer checked
    run(ws, command)
    assert armed()


def test_the_clean_up_does_not_read_what_is_mounted_read_only(ws, monkeypatch):
    sandbox = Sandbox.create(ws, SandboxSettings(), ws.parent / "data")
    read = []
    real = disarm._GitFolder.read
    monkeypatch.setattr(disarm._GitFolder, "read", classmethod(lambda cls, git, fixed=None: read.append(git)
                                                                or real(git, fixed)))
    assert sandbox.run("true", 10, 1000).text == "(no output)\n[exit code 0]"
    assert read and all(path == ws / ".git" for path in read), read  # only the workspace's own
    read.clear()
    watch = disarm.RepositoryWatch.before(ws)  # told nothing is fixed: reads every git folder
    assert {ws / ".git/modules/sub", ws / "vendor/lib/.git"} <= set(read) and watch.disarm() == []
