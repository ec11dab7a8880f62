"""Our own git (checkpoint snapshots, ``@`` completion) runs none of the programs a repository, the
user's global config or the system's names. Each setting is shown twice: run through ``safe_git``
no marker appears; run as plain git (``environment`` switched off) the same command runs the program."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from mini_letta import safe_git
from mini_letta.attachments import workspace_paths
from mini_letta.checkpoints.gitsnap import GitError, Snapshotter

USER = {"GIT_AUTHOR_NAME": "U", "GIT_AUTHOR_EMAIL": "u@example.invalid", "GIT_COMMITTER_NAME": "U",
        "GIT_COMMITTER_EMAIL": "u@example.invalid"}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **USER}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    (root / "f.txt").write_text("one\n")
    git(root, "add", "f.txt")
    git(root, "commit", "-qm", "one")
    return root


def plain_git(monkeypatch):
    """safe_git switched off: the environment the user's own git would have."""
    monkeypatch.setattr(safe_git, "environment", lambda user_config=False, filters=(), extra=None:
                        {**os.environ, **(extra or {})})


def snapshot(root: Path, tmp_path: Path) -> str:
    (root / "f.txt").write_text(f"changed {len(list(tmp_path.iterdir()))}\n")
    return Snapshotter(root, tmp_path / "index").tree()


def marker_program(tmp_path: Path) -> tuple[Path, str]:
    marker = tmp_path / "marker"
    return marker, f"touch {marker}; false"


def arm_fsmonitor(root, tmp_path):
    marker, program = marker_program(tmp_path)
    git(root, "config", "core.fsmonitor", program)
    return marker


def arm_post_index_change_hook(root, tmp_path):
    marker, _ = marker_program(tmp_path)
    hook = root / ".git" / "hooks" / "post-index-change"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    return marker


def arm_clean_filter(root, tmp_path):
    marker, _ = marker_program(tmp_path)
    git(root, "config", "filter.evil.clean", f"touch {marker}; cat")
    (root / ".gitattributes").write_text("* filter=evil\n")
    return marker


def arm_process_filter_through_an_include(root, tmp_path):
    marker, _ = marker_program(tmp_path)
    (root / "team.gitconfig").write_text(f"[filter \"Evil=1\"]\n\tprocess = sh -c 'touch {marker}'\n\trequired\n")
    git(root, "config", "include.path", "../team.gitconfig")
    (root / ".gitattributes").write_text("*.txt filter=Evil=1\n")
    return marker


def arm_users_global_filter(root, tmp_path):
    marker, _ = marker_program(tmp_path)
    (Path(os.environ["HOME"]) / ".gitconfig").write_text(f"[filter \"g\"]\n\tclean = touch {marker}; cat\n")
    (root / ".gitattributes").write_text("* filter=g\n")
    return marker


def arm_system_filter(root, tmp_path, monkeypatch):
    marker, _ = marker_program(tmp_path)
    system = tmp_path / "gitconfig"
    system.write_text(f"[filter \"s\"]\n\tclean = touch {marker}; cat\n")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(system))
    (root / ".gitattributes").write_text("* filter=s\n")
    return marker


ARMED = {"core.fsmonitor": arm_fsmonitor, "post-index-change hook": arm_post_index_change_hook,
         "clean filter": arm_clean_filter, "process filter of an included file": arm_process_filter_through_an_include,
         "the user's global config": arm_users_global_filter}


@pytest.mark.parametrize("name", ARMED)
def test_a_snapshot_runs_no_program_of_the_repository(repo, tmp_path, name, monkeypatch):
    marker = ARMED[name](repo, tmp_path)
    snapshot(repo, tmp_path / "a")
    assert not marker.exists()
    plain_git(monkeypatch)
    with contextlib.suppress(GitError):  # a required filter that fails stops git, after it ran
        snapshot(repo, tmp_path / "b")
    assert marker.exists()


@pytest.fixture(autouse=True)
def _folders(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()


def test_a_snapshot_reads_no_system_config(repo, tmp_path, monkeypatch):
    marker = arm_system_filter(repo, tmp_path, monkeypatch)
    snapshot(repo, tmp_path / "a")
    assert not marker.exists()
    plain_git(monkeypatch)
    snapshot(repo, tmp_path / "b")
    assert marker.exists()


def test_a_snapshot_stores_the_files_bytes_not_what_a_filter_makes_of_them(repo, tmp_path):
    git(repo, "config", "filter.upper.clean", "tr a-z A-Z")
    (repo / ".gitattributes").write_text("*.txt filter=upper\n")
    (repo / "f.txt").write_text("lower case\n")
    tree = Snapshotter(repo, tmp_path / "index").tree()
    assert git(repo, "cat-file", "blob", f"{tree}:f.txt") == "lower case\n"


def test_completion_of_at_paths_runs_no_fsmonitor(repo, tmp_path, monkeypatch):
    marker = arm_fsmonitor(repo, tmp_path)
    assert "f.txt" in workspace_paths(repo)
    assert not marker.exists()
    plain_git(monkeypatch)
    workspace_paths(repo)
    assert marker.exists()


def test_a_missing_object_of_a_partial_clone_is_not_fetched_through_the_remotes_program(tmp_path, monkeypatch):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q")
    (upstream / "a.txt").write_text("hello\n")
    git(upstream, "add", "a.txt")
    git(upstream, "commit", "-qm", "a")
    git(upstream, "config", "uploadpack.allowFilter", "true")
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{upstream}", "clone")
    clone = tmp_path / "clone"
    blob = git(clone, "rev-parse", "HEAD:a.txt").strip()
    marker = tmp_path / "marker"
    git(clone, "config", "remote.origin.uploadpack", f"touch {marker}; git-upload-pack")
    done = safe_git.run(clone, "cat-file", "blob", blob)
    assert done.returncode != 0 and not marker.exists()
    plain_git(monkeypatch)
    assert safe_git.run(clone, "cat-file", "blob", blob).stdout == b"hello\n" and marker.exists()


def test_an_empty_nested_repository_does_not_make_a_snapshot_fail(repo, tmp_path):
    git(repo, "init", "-q", "empty")
    (repo / "empty" / "inside.txt").write_text("x\n")
    tree = Snapshotter(repo, tmp_path / "index").tree()
    listed = git(repo, "ls-tree", "-r", "--name-only", tree).split()
    assert "f.txt" in listed and not any(path.startswith("empty") for path in listed)


def test_an_unreadable_file_still_makes_a_snapshot_fail(repo, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    (repo / "secret.txt").write_text("x\n")
    (repo / "secret.txt").chmod(0)
    with pytest.raises(GitError):
        Snapshotter(repo, tmp_path / "index").tree()


def test_a_nested_repository_is_snapshotted_as_its_commit_and_our_index_keeps_no_gitlink(repo, tmp_path):
    git(repo, "init", "-q", "nested")
    (repo / "nested" / "a.txt").write_text("a\n")
    git(repo / "nested", "add", "a.txt")
    git(repo / "nested", "commit", "-qm", "n")
    head = git(repo / "nested", "rev-parse", "HEAD").strip()
    snapshots = Snapshotter(repo, tmp_path / "index")
    tree = snapshots.tree()
    assert git(repo, "ls-tree", tree, "nested").split()[:3] == ["160000", "commit", head]
    staged = subprocess.run(["git", "ls-files", "-s"], cwd=repo, env={**os.environ, "GIT_INDEX_FILE":
                            str(tmp_path / "index")}, capture_output=True, text=True).stdout
    assert "nested" not in staged


def test_no_module_but_safe_git_starts_git():
    """A git started any other way would read the workspace's programs again."""
    import ast

    import mini_letta

    starters = {"run", "Popen", "call", "check_call", "check_output", "create_subprocess_exec"}
    found = []
    for path in Path(mini_letta.__file__).parent.rglob("*.py"):
        if path.name == "safe_git.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in starters
                    and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)) and node.args[0].elts
                    and isinstance(node.args[0].elts[0], ast.Constant) and node.args[0].elts[0].value == "git"):
                found.append(f"{path.name}:{node.lineno}")
    assert found == []
