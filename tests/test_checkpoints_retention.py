"""Old checkpoints are deleted at start-up (``checkpoints/retention.py``); the conversation stays,
and a session open elsewhere or being started is never touched."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mini_letta import session_lock
from mini_letta.app import Options, build_agent
from mini_letta.checkpoints import retention
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.toolbox import approve_all

DAY = 86_400


def session_with_checkpoints(sessions: Path, name: str, age_days: float, now: float) -> Path:
    session = sessions / f"{name}.jsonl"
    session.write_text('{"t": "meta"}\n')
    folder = session.with_suffix(".checkpoints")
    (folder / "objects").mkdir(parents=True)
    (folder / "objects" / "ab").write_bytes(b"x" * 1000)
    (folder / "log.jsonl").write_text("{}\n")
    then = now - age_days * DAY
    for path in (session, folder / "log.jsonl", folder / "objects" / "ab", folder / "objects", folder):
        os.utime(path, (then, then))
    return session


def test_checkpoints_older_than_the_limit_are_deleted_and_the_conversation_stays(tmp_path):
    now = time.time()
    old = session_with_checkpoints(tmp_path, "old", 31, now)
    recent = session_with_checkpoints(tmp_path, "recent", 29, now)
    deleted = retention.prune(tmp_path, days=30, now=now)
    assert deleted == [old.with_suffix(".checkpoints")]
    assert old.exists() and not old.with_suffix(".checkpoints").exists()
    assert recent.with_suffix(".checkpoints").exists()


def test_a_rewind_keeps_a_session_in_use_even_when_its_conversation_is_old(tmp_path):
    now = time.time()
    session = session_with_checkpoints(tmp_path, "rewound", 40, now)
    os.utime(session.with_suffix(".checkpoints") / "log.jsonl", (now - DAY, now - DAY))
    assert retention.prune(tmp_path, days=30, now=now) == []


def test_the_current_session_and_one_open_elsewhere_are_never_touched(tmp_path):
    now = time.time()
    current = session_with_checkpoints(tmp_path, "current", 90, now)
    elsewhere = session_with_checkpoints(tmp_path, "elsewhere", 90, now)
    lock = session_lock.acquire(elsewhere)  # as another process holds it (flock is per open file)
    try:
        assert retention.prune(tmp_path, days=30, current=current, now=now) == []
    finally:
        lock.release()
    assert retention.prune(tmp_path, days=30, current=current, now=now) == [elsewhere.with_suffix(".checkpoints")]
    assert not session_lock.lock_path(elsewhere).exists()


def test_the_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("MINI_LETTA_CHECKPOINT_DAYS", "7")
    assert retention.keep_days() == 7
    monkeypatch.setenv("MINI_LETTA_CHECKPOINT_DAYS", "soon")
    assert retention.keep_days() == retention.DEFAULT_DAYS


def test_starting_a_session_prunes_the_old_ones(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = build_agent(Options(workspace=workspace, headless=True), approve_all, provider=ScriptedProvider(["ok"]))
    first.run_turn("hello")
    first.session.close()
    old = session_with_checkpoints(Path(first.session.path).parent, "20200101-000000-aaaaaa", 400, time.time())
    build_agent(Options(workspace=workspace, headless=True), approve_all, provider=ScriptedProvider([]))
    assert old.exists() and not old.with_suffix(".checkpoints").exists()
