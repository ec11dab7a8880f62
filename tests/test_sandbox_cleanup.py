"""What a sandboxed command creates at a protected path is removed afterwards, whatever it is: a
FIFO (``mkfifo .mcp.json``) or a socket survived the clean-up, which knew files, links and folders
only (issue 32). Each case is left in place with the clean-up switched off."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mini_letta.toolbox.sandbox import PROTECTED_IN_WORKSPACE, Sandbox, SandboxSettings

pytestmark = pytest.mark.usefixtures("bubblewrap")  # conftest.py: skip, or fail in CI, without it

MAKERS = {
    "fifo": "mkfifo {path}",
    "socket": f"{sys.executable} -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' {{path}}",
}


@pytest.fixture
def ws():
    root = Path(tempfile.mkdtemp(prefix="mini-letta-cleanup-", dir="/var/tmp"))
    workspace = root / "ws"
    workspace.mkdir()
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    shutil.rmtree(workspace / ".git" / "hooks", ignore_errors=True)
    try:
        yield workspace
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("kind", list(MAKERS))
@pytest.mark.parametrize("name", [".mcp.json", ".mini-letta", ".git/hooks"])
def test_a_special_file_made_at_a_protected_path_is_removed(kind, name, ws, monkeypatch):
    assert name in PROTECTED_IN_WORKSPACE
    sandbox = Sandbox.create(ws, SandboxSettings(), ws.parent / "data")
    outcome = sandbox.run(MAKERS[kind].format(path=name), 10, 2000)
    assert not (ws / name).exists() and not (ws / name).is_symlink(), outcome.text
    assert f"creating {name}" in outcome.text and outcome.is_error
    monkeypatch.setattr(Sandbox, "absent_protected", lambda self, added=(): [])
    sandbox.run(MAKERS[kind].format(path=name), 10, 2000)
    assert (ws / name).exists()
