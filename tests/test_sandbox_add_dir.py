"""Folders added with ``--add-dir`` / ``/add-dir`` are bound into the sandbox as the workspace is
(issue 37): writable in workspace-write mode, with the same protections (its ``.git/hooks`` and
config read-only, the repositories a command makes there disarmed); read-only in read-only mode.
Each test fails with the folders left out of the sandbox's command line."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from mini_letta.messages import ToolCall
from mini_letta.toolbox import Toolbox, approve_all, disarm, sandbox as sandbox_module
from mini_letta.toolbox.registry import Toolbox as RegistryToolbox
from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings

pytestmark = pytest.mark.usefixtures("bubblewrap")  # conftest.py: skip, or fail in CI, without it


@pytest.fixture
def place():
    """A workspace and a sibling folder to add (under /var/tmp: /tmp is private inside)."""
    root = Path(tempfile.mkdtemp(prefix="mini-letta-add-dir-", dir="/var/tmp"))
    (root / "ws").mkdir()
    (root / "other").mkdir()
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def toolbox(root: Path, mode: str = "workspace-write") -> Toolbox:
    box = Toolbox(root / "ws", approve_all,
                  sandbox=Sandbox.create(root / "ws", SandboxSettings(mode), root / "data"))
    box.add_dir(root / "other")
    return box


def bash(box: Toolbox, command: str) -> str:
    return box.run(ToolCall("call_1", "bash", json.dumps({"command": command}))).text


def without_added_folders(monkeypatch) -> None:
    """The protection switched off: the sandbox is not told of the added folders."""
    real = Sandbox.run
    monkeypatch.setattr(Sandbox, "run", lambda self, command, timeout, limit, added=(): real(self, command,
                                                                                            timeout, limit))


def test_a_command_writes_in_an_added_folder_in_workspace_write_mode(place, monkeypatch):
    box = toolbox(place)
    assert bash(box, f"echo made > {place}/other/made.txt && cat {place}/other/made.txt") == "made\n[exit code 0]"
    assert (place / "other" / "made.txt").read_text() == "made\n"
    without_added_folders(monkeypatch)
    assert "Read-only file system" in bash(box, f"echo again > {place}/other/again.txt")
    assert not (place / "other" / "again.txt").exists()


def test_in_read_only_mode_an_added_folder_is_read_only_and_readable(place, monkeypatch):
    (place / "other" / "kept.txt").write_text("kept\n")
    box = toolbox(place, "read-only")
    text = bash(box, f"cat {place}/other/kept.txt; echo changed > {place}/other/kept.txt")
    assert text.startswith("kept\n") and "Read-only file system" in text, text
    assert (place / "other" / "kept.txt").read_text() == "kept\n"


def test_an_added_repository_keeps_its_hooks_and_config_read_only_and_new_ones_are_disarmed(place, monkeypatch):
    subprocess.run(["git", "init", "-q"], cwd=place / "other", check=True)
    config = place / "other" / ".git" / "config"
    before = config.read_bytes()
    box = toolbox(place)
    text = bash(box, f"git -C {place}/other config core.fsmonitor 'touch /var/tmp/armed'")
    # git writes config.lock and renames it onto config: a mount point cannot be replaced.
    assert config.read_bytes() == before and "could not write config file" in text, text
    bash(box, f"git init -q {place}/other/nested && git -C {place}/other/nested config core.fsmonitor 'touch x'")
    nested = subprocess.run(["git", "config", "--file", str(place / "other/nested/.git/config"), "--list"],
                            capture_output=True, text=True).stdout
    assert "fsmonitor" not in nested and "core.bare" in nested
    # Switched off (no protected paths, no clean-up): the added repository's config is armed.
    monkeypatch.setattr(sandbox_module, "PROTECTED_IN_WORKSPACE", ())
    monkeypatch.setattr(disarm.RepositoryWatch, "disarm", lambda self: [])
    bash(toolbox(place), f"git -C {place}/other config core.fsmonitor 'touch /var/tmp/armed'")
    assert b"fsmonitor" in config.read_bytes()


def test_the_toolbox_passes_its_added_folders_to_the_sandbox(place, monkeypatch):
    seen = []
    monkeypatch.setattr(Sandbox, "run", lambda self, command, timeout, limit, added=(): seen.append(added))
    box = toolbox(place)
    assert isinstance(box, RegistryToolbox)
    box.run(ToolCall("call_1", "bash", json.dumps({"command": "true"})))
    assert seen == [((place / "other").resolve(),)]
