"""The clean-up after a sandboxed command, on its own: what it removes from the repositories a
command created or changed (as git reads their config), and what it leaves (the user's own)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mini_letta.toolbox import disarm
from mini_letta.toolbox.disarm import RUNS_A_PROGRAM, RepositoryWatch, config_entries


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def ws(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    git(folder, "init", "-q")
    yield folder
    disarm._TREES.pop(folder.resolve(), None)


def keys(config: Path) -> list[str]:
    return [key for key, _ in config_entries(config.read_bytes())]


def example_key(pattern: str) -> str:
    return pattern.replace("*", "x")


def test_every_listed_setting_is_removed_from_a_new_repository_in_either_form(ws):
    watch = RepositoryWatch.before(ws)
    nested = ws / "deep" / "nested"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    config = nested / ".git" / "config"
    lines = []
    for pattern in RUNS_A_PROGRAM:
        section, _, rest = example_key(pattern).partition(".")
        subsection, _, name = rest.rpartition(".")
        header = f'[{section} "{subsection}"]' if subsection else f"[{section}]"
        lines.append(f"{header} {name} = \"!touch marker\"")  # the key on the section line, quoted
    config.write_text(config.read_text() + "\n".join(lines) + "\n[user]\n\tname = Kept\n")
    assert {example_key(p).lower() for p in RUNS_A_PROGRAM} <= {k.lower() for k in keys(config)}
    removed = watch.disarm()
    left = keys(config)
    assert not [key for key in left if disarm.runs_a_program(key)], left
    assert "user.name" in left and "core.bare" in left
    assert "deep/nested/.git/config: alias.x" in removed


def test_in_a_repository_that_existed_only_what_the_command_added_is_removed(ws):
    git(ws, "config", "alias.mine", "!echo my own alias")
    git(ws, "config", "core.hooksPath", ".husky")
    watch = RepositoryWatch.before(ws)
    git(ws, "config", "--add", "alias.evil", "!touch marker")
    git(ws, "config", "core.fsmonitor", "touch marker")
    removed = watch.disarm()
    assert sorted(removed) == [".git/config: alias.evil", ".git/config: core.fsmonitor"]
    left = dict(config_entries((ws / ".git" / "config").read_bytes()))
    assert left["alias.mine"] == "!echo my own alias" and left["core.hookspath"] == ".husky"


def test_hooks_the_command_wrote_go_and_the_users_stay(ws):
    hooks = ws / ".git" / "hooks"
    (hooks / "pre-commit").write_text("#!/bin/sh\necho mine\n")
    watch = RepositoryWatch.before(ws)
    (hooks / "post-checkout").write_text("#!/bin/sh\ntouch marker\n")
    removed = watch.disarm()
    assert removed == [".git/hooks/post-checkout"]
    assert (hooks / "pre-commit").exists() and not (hooks / "post-checkout").exists()


def test_pointers_out_of_the_workspace_are_removed(ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    git(outside, "init", "-q")
    watch = RepositoryWatch.before(ws)
    (ws / "a").mkdir()
    (ws / "a" / ".git").write_text(f"gitdir: {outside / '.git'}\n")
    git(ws, "init", "-q", "b")
    (ws / "b" / ".git" / "commondir").write_text(str(outside / ".git") + "\n")
    removed = watch.disarm()
    assert "a/.git (it pointed out of the workspace)" in removed
    assert "b/.git/commondir (it pointed out of the workspace)" in removed
    assert not (ws / "a" / ".git").exists() and not (ws / "b" / ".git" / "commondir").exists()


def test_a_config_git_cannot_read_is_emptied(ws):
    watch = RepositoryWatch.before(ws)
    git(ws, "init", "-q", "n")
    (ws / "n" / ".git" / "config").write_text("[core\n\tfsmonitor = touch marker\n")
    assert watch.disarm() == ["n/.git/config (git cannot read it)"]
    assert (ws / "n" / ".git" / "config").read_text() == ""


def test_a_change_made_with_times_set_back_is_still_found(ws):
    watch = RepositoryWatch.before(ws)
    git(ws, "init", "-q", "n")
    RepositoryWatch.before(ws).disarm()  # the repository is known now
    watch = RepositoryWatch.before(ws)
    config = ws / "n" / ".git" / "config"
    stamp, text = config.stat(), config.read_text()
    armed = text.replace("\tlogallrefupdates = true\n", "\tfsmonitor = touch marke\n")
    assert armed != text and len(armed) == len(text)
    with config.open("r+") as file:  # same size, same inode, times set back: only the ctime differs
        file.write(armed)
    os.utime(config, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert watch.disarm() == ["n/.git/config: core.fsmonitor"]
