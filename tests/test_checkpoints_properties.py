"""Property: after any sequence of turns that write, edit, create and delete files (with the tools
and, in a git work tree, with commands), rewinding to any earlier message leaves every file exactly
as it was then, bytes and executable bit, and the user's git index, HEAD, refs and stash as they were.
A second rewind, to any message (a later one too), holds as well."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_letta.checkpoints.recorder import Checkpoints
from mini_letta.checkpoints.restore import apply, plan
from mini_letta.messages import Message, ToolCall
from mini_letta.toolbox import Toolbox, approve_all

NAMES = ("a.txt", "b.txt", "sub/c.sh", "sub/deep/d.md")
GIT_ENV = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@example.invalid", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@example.invalid",
           # `git status` would otherwise refresh the index itself, and the test must see only what we do.
           "GIT_OPTIONAL_LOCKS": "0"}

texts = st.text(st.characters(min_codepoint=32, max_codepoint=0x24F, blacklist_characters="\\"), max_size=40)
tool_ops = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(NAMES), texts),
    st.tuples(st.just("edit"), st.sampled_from(NAMES), texts),
)
command_ops = st.one_of(
    st.tuples(st.just("sh_write"), st.sampled_from(NAMES), texts),
    st.tuples(st.just("rm"), st.sampled_from(NAMES), st.just("")),
    st.tuples(st.just("chmod+x"), st.sampled_from(NAMES), st.just("")),
    st.tuples(st.just("chmod-x"), st.sampled_from(NAMES), st.just("")),
)


def files_of(workspace: Path) -> dict[str, tuple[bytes, bool]]:
    found = {}
    for path in workspace.rglob("*"):
        if ".git" in path.relative_to(workspace).parts or not path.is_file():
            continue
        found[path.relative_to(workspace).as_posix()] = (path.read_bytes(), os.access(path, os.X_OK))
    return found


def git(workspace: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=workspace, env={**os.environ, **GIT_ENV}, check=True,
                          capture_output=True, text=True).stdout


def repository_state(workspace: Path) -> tuple:
    """What the user's repository is, apart from the work tree: index, HEAD, refs, stash."""
    return ((workspace / ".git" / "index").read_bytes(), (workspace / ".git" / "HEAD").read_text(),
            git(workspace, "rev-parse", "HEAD"), git(workspace, "for-each-ref"), git(workspace, "stash", "list"))


def make_repository(workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.txt").write_text("committed a\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "c.sh").write_text("#!/bin/sh\necho c\n")
    os.chmod(workspace / "sub" / "c.sh", 0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "first")
    git(workspace, "branch", "feature")
    (workspace / "a.txt").write_text("stashed a\n")
    git(workspace, "stash", "-q")
    (workspace / "a.txt").write_text("staged a\n")
    git(workspace, "add", "a.txt")
    (workspace / "a.txt").write_text("staged a, then changed in the work tree\n")
    (workspace / "b.txt").write_text("untracked b\n")


def run_op(toolbox: Toolbox, op: tuple[str, str, str]) -> None:
    kind, name, text = op
    path = toolbox.workspace / name
    if kind == "write":
        call = ToolCall("c", "write_file", json.dumps({"path": name, "content": text}))
    elif kind == "edit":
        current = path.read_text() if path.exists() else ""
        if current and current.count(current) == 1:
            arguments = {"path": name, "old_string": current, "new_string": current + text + "\n"}
        else:
            arguments = {"path": name, "old_string": "", "new_string": text}
        call = ToolCall("c", "edit_file", json.dumps(arguments))
    else:
        quoted = shlex.quote(name)
        command = {"sh_write": f"mkdir -p {shlex.quote(str(Path(name).parent))} && printf %s {shlex.quote(text)} > {quoted}",
                   "rm": f"rm -f {quoted}", "chmod+x": f"chmod +x {quoted} 2>/dev/null; true",
                   "chmod-x": f"chmod -x {quoted} 2>/dev/null; true"}[kind]
        call = ToolCall("c", "bash", json.dumps({"command": command}))
    toolbox.run(call)


def check_rewinds(turns, first: int, second: int, *, in_git: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "ws"
        workspace.mkdir()
        if in_git:
            make_repository(workspace)
        else:
            (workspace / "a.txt").write_text("existing a\n")
        toolbox = Toolbox(workspace, approve_all)
        notices = []
        checkpoints = Checkpoints(workspace, toolbox.ws.resolve, lambda: Path(folder) / "session.jsonl",
                                  notices.append)
        toolbox.watch_changes = checkpoints.watch
        repository = repository_state(workspace) if in_git else None
        messages, states = [], []
        for ops in turns:
            message = Message.user("turn")
            checkpoints.begin(message)
            messages.append(message)
            states.append(files_of(workspace))
            for op in ops:
                run_op(toolbox, op)
        store = checkpoints.store()
        for target in (first % len(turns), second % len(turns)):
            restore = plan(store, workspace, messages[target].id)
            assert not restore.contested and not restore.blocked
            assert apply(store, workspace, restore.items) == []
            assert files_of(workspace) == states[target]
            if in_git:
                assert repository_state(workspace) == repository
        assert not notices


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(st.lists(tool_ops, max_size=4), min_size=1, max_size=5),
       first=st.integers(0, 10), second=st.integers(0, 10))
def test_rewinding_restores_every_file_changed_by_tools(turns, first, second):
    check_rewinds(turns, first, second, in_git=False)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(st.lists(st.one_of(tool_ops, command_ops), max_size=4), min_size=1, max_size=4),
       first=st.integers(0, 10), second=st.integers(0, 10))
def test_rewinding_in_git_restores_what_commands_changed_and_leaves_the_repository_alone(turns, first, second):
    check_rewinds(turns, first, second, in_git=True)
