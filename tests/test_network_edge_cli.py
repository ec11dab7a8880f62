"""The attacks of issue 45, end to end: the installed ``mini-letta`` console script, ``-p
--output-format json``, in a subprocess against a hostile server (tests/fakes/hostile.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.hostile import HostileServer, gzip_bomb, pings_only, redirect_to
from fault_support import cli_env

SCRIPT = Path(sys.executable).parent / "mini-letta"
SECRET = "sk-secret-0123456789"



def run(base_url: str, tmp_path: Path, workspace: Path, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    completed = subprocess.run(
        [str(SCRIPT), "-p", "the secret plan", "--provider", "openai", "--base-url", base_url, "--model", "m",
         "--output-format", "json"],
        cwd=workspace, capture_output=True, text=True, timeout=60,
        env=cli_env(tmp_path / "home", {"OPENAI_API_KEY": SECRET, "MINI_LETTA_SANDBOX": "off", **env}))
    assert "Traceback" not in completed.stderr, completed.stderr
    return completed, json.loads(completed.stdout)


def test_the_console_script_is_installed():
    assert SCRIPT.exists(), f"{SCRIPT}: install the package (pip install -e .)"


def test_a_redirect_to_another_server_carries_neither_key_nor_conversation(hostile, elsewhere, tmp_path, workspace):
    hostile.on_any(redirect_to(elsewhere.root_url, 307))
    completed, result = run(hostile.root_url + "/v1", tmp_path, workspace)
    assert completed.returncode == 1 and result["is_error"] is True
    assert "redirected the request to http://127.0.0.2:" in result["result"]
    assert hostile.requests and elsewhere.requests == []


def test_a_gzip_bomb_labelled_json_ends_in_one_line_naming_the_cap(hostile, tmp_path, workspace):
    hostile.on("/v1/chat/completions", gzip_bomb(64 << 20))
    completed, result = run(hostile.root_url + "/v1", tmp_path, workspace)
    assert completed.returncode == 1
    assert "sent a reply larger than 16 MiB, the most mini-letta reads" in result["result"]


def test_a_stream_of_pings_ends_at_mini_letta_timeout(hostile, tmp_path, workspace):
    # 200 pings 50 ms apart (10 s) against MINI_LETTA_TIMEOUT=1.
    hostile.on("/v1/chat/completions", pings_only(0.05, 200))
    completed, result = run(hostile.root_url + "/v1", tmp_path, workspace, MINI_LETTA_TIMEOUT="1")
    assert completed.returncode == 1
    assert "no event for 1 s, only keep-alive comments" in result["result"]


def test_a_base_urls_password_is_printed_nowhere(tmp_path, workspace):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    completed, result = run(f"http://alice:hunter2-secret@127.0.0.1:{port}/v1", tmp_path, workspace)
    assert completed.returncode == 1
    assert "http://***@127.0.0.1:" in result["result"]
    everything = completed.stdout + completed.stderr + "".join(
        path.read_text(errors="replace") for path in (tmp_path / "home").rglob("*") if path.is_file())
    assert "hunter2" not in everything
