"""The workspace's folders between two commands: the ``.git`` entries a command makes anywhere are
found from inotify's events, listing only the folders that changed, or by the ctime walk where
inotify cannot be used (toolbox/folder_tree.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mini_letta.toolbox import folder_tree
from mini_letta.toolbox.folder_tree import FolderTree

needs_inotify = pytest.mark.skipif(folder_tree.INotify is None, reason="inotify_simple is not installed")


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "ws"
    found = make_tree(root)
    yield root, found
    found.close()


def no_walk(monkeypatch) -> None:
    def refused(self, root):
        raise AssertionError("walked")
    monkeypatch.setattr(FolderTree, "_walk", refused)


CHANGES = {
    "in a folder that was there": (lambda root: (root / "src" / "deep" / ".git").mkdir(), "src/deep/.git"),
    "a .git file": (lambda root: (root / "src" / ".git").write_text("gitdir: ../x\n"), "src/.git"),
    "in folders made since": (lambda root: (root / "new" / "a" / "b" / ".git").mkdir(parents=True), "new/a/b/.git"),
    "in a folder moved in": (lambda root: (shutil.move(str(root / "src"), str(root.parent / "out")),
                                           (root.parent / "out" / "deep" / ".git").mkdir(),
                                           shutil.move(str(root.parent / "out"), str(root / "back"))),
                             "back/deep/.git"),
    "where a folder was moved away": (lambda root: (os.rename(root / "vendor", root / "vendor-old"),
                                                    (root / "vendor" / "lib" / ".git").mkdir(parents=True),
                                                    (root / "vendor" / "lib" / "in" / ".git").mkdir(parents=True)),
                                      "vendor/lib/in/.git"),
}


def make_tree(root: Path) -> FolderTree:
    (root / "src" / "deep").mkdir(parents=True)
    (root / "vendor" / "lib" / ".git").mkdir(parents=True)
    found = FolderTree()
    found.refresh(root)
    return found


@needs_inotify
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_new_git_entry_is_found_from_the_events_without_a_walk(change, tree, monkeypatch):
    root, found = tree
    make, expected = CHANGES[change]
    no_walk(monkeypatch)
    make(root)
    assert expected in {str(path.relative_to(root)) for path in found.refresh(root)}
    # The events ignored (the protection switched off): the new entry is not seen.
    monkeypatch.undo()
    other_root = root.parent / "other"
    other = make_tree(other_root)
    monkeypatch.setattr(FolderTree, "_changed_folders", lambda self: {})
    make(other_root)
    assert expected not in {str(path.relative_to(other_root)) for path in other.refresh(other_root)}
    other.close()


@needs_inotify
def test_a_folder_removed_is_forgotten_with_what_it_held(tree):
    root, found = tree
    shutil.rmtree(root / "vendor")
    assert found.refresh(root) == [] and not [f for f in found.folders if "vendor" in f]


@needs_inotify
def test_after_an_overflow_or_without_inotify_the_ctime_walk_finds_it(tree, monkeypatch):
    root, found = tree
    monkeypatch.setattr(FolderTree, "_changed_folders", lambda self: None)  # what an overflow returns
    (root / "src" / "deep" / ".git").mkdir()
    assert "src/deep/.git" in {str(p.relative_to(root)) for p in found.refresh(root)}


def test_without_inotify_the_ctime_walk_is_used(tmp_path, monkeypatch):
    monkeypatch.setattr(folder_tree, "INotify", None)
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    found = FolderTree()
    found.refresh(root)
    (root / "a" / ".git").mkdir()
    assert [str(p.relative_to(root)) for p in found.refresh(root)] == ["a/.git"]
    assert found._inotify is None


@needs_inotify
def test_past_the_watch_limit_it_gives_up_watching_and_walks(tmp_path, monkeypatch):
    monkeypatch.setattr(folder_tree, "MAX_WATCHED", 3)
    root = tmp_path / "ws"
    for name in "abcde":
        (root / name).mkdir(parents=True)
    found = FolderTree()
    found.refresh(root)
    assert found._inotify is None and found._gave_up
    (root / "c" / ".git").mkdir()
    assert [str(p.relative_to(root)) for p in found.refresh(root)] == ["c/.git"]


@needs_inotify
def test_a_repository_a_sandboxed_command_makes_is_seen_through_its_mount_namespace(bubblewrap, monkeypatch):
    """The events of a command inside bubblewrap (another mount namespace, the workspace a bind
    mount) reach the watches: the repository it makes is disarmed with no walk after the first."""
    import subprocess
    import tempfile

    from mini_letta.toolbox import disarm
    from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings

    place = Path(tempfile.mkdtemp(prefix="mini-letta-tree-", dir="/var/tmp"))
    try:
        workspace = place / "ws"
        (workspace / "a" / "b").mkdir(parents=True)
        sandbox = Sandbox.create(workspace, SandboxSettings(), place / "data")
        command = "git init -q a/b/{0} && git -C a/b/{0} config core.fsmonitor 'touch /var/tmp/armed-by-tree'"

        def armed(name: str) -> bool:
            config = workspace / "a" / "b" / name / ".git" / "config"
            return "fsmonitor" in subprocess.run(["git", "config", "--file", str(config), "--list"],
                                                 capture_output=True, text=True).stdout

        sandbox.run("true", 10, 1000)  # the first command walks and starts watching
        assert disarm._TREES[sandbox.workspace]._inotify is not None
        no_walk(monkeypatch)
        sandbox.run(command.format("n"), 10, 2000)
        assert (workspace / "a/b/n/.git").is_dir() and not armed("n")
        monkeypatch.setattr(FolderTree, "_changed_folders", lambda self: {})  # the events ignored
        sandbox.run(command.format("m"), 10, 2000)
        assert armed("m")
    finally:
        disarm._TREES.pop((place / "ws").resolve(), FolderTree()).close()
        shutil.rmtree(place, ignore_errors=True)
