"""Old checkpoints are deleted at start-up (``checkpoints/retention.py``), in the background; the
conversation stays, and a session open elsewhere or being started is never touched."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from mini_letta.sessions import lock as session_lock
from mini_letta.app import Options, build_agent
from mini_letta.checkpoints import retention
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.settings import SETTINGS
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
    assert retention.keep_days() == SETTINGS.checkpoint_retention_days


def test_starting_a_session_prunes_the_old_ones(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = build_agent(Options(workspace=workspace, headless=True), approve_all, provider=ScriptedProvider(["ok"]))
    first.run_turn("hello")
    first.session.close()
    old = session_with_checkpoints(Path(first.session.path).parent, "20200101-000000-aaaaaa", 400, time.time())
    build_agent(Options(workspace=workspace, headless=True), approve_all, provider=ScriptedProvider([]))
    retention.join()
    assert old.exists() and not old.with_suffix(".checkpoints").exists()
    assert [p.name for p in old.parent.iterdir() if p.name.startswith(retention.TRASH_PREFIX)] == []


def test_start_up_does_not_wait_for_pruning(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    started, release, finished = threading.Event(), threading.Event(), threading.Event()
    real_prune = retention.prune

    def slow_prune(*args, **kwargs):
        started.set()
        release.wait(60)  # a safety net should start-up ever wait for it: the test fails, it does not hang
        finished.set()
        return real_prune(*args, **kwargs)

    monkeypatch.setattr(retention, "prune", slow_prune)
    agent = build_agent(Options(workspace=workspace, headless=True), approve_all, provider=ScriptedProvider(["ok"]))
    try:
        assert not finished.is_set()  # the agent is built while pruning is still held back
        assert agent.run_turn("hello").text == "ok"
    finally:
        release.set()
        retention.join()
    assert started.is_set() and finished.is_set()


def test_a_pruning_failure_is_not_raised_into_the_process(tmp_path, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("disk gone")

    monkeypatch.setattr(retention, "prune", broken)
    failures = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    with caplog.at_level("DEBUG", logger=retention.__name__):
        retention.prune_in_background(tmp_path, days=30).join()
    assert failures == [] and "pruning old checkpoints" in caplog.text


@pytest.mark.parametrize("stage", ["mkdtemp", "rename"])
def test_a_folder_that_cannot_be_taken_away_is_kept_whole(tmp_path, monkeypatch, stage):
    """A checkpoint folder is either all there or gone: it is renamed away under the lock (atomic),
    never deleted file by file where /rewind could find a log without its objects."""
    now = time.time()
    old = session_with_checkpoints(tmp_path, "old", 90, now)
    folder = old.with_suffix(".checkpoints")

    def refuse(*args, **kwargs):
        raise PermissionError("read-only")

    if stage == "mkdtemp":
        monkeypatch.setattr(retention.tempfile, "mkdtemp", refuse)
    else:
        monkeypatch.setattr(Path, "rename", refuse)
    assert retention.prune(tmp_path, days=30, now=now) == []
    assert (folder / "log.jsonl").exists() and (folder / "objects" / "ab").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.checkpoints", "old.jsonl"]
    monkeypatch.undo()
    assert retention.prune(tmp_path, days=30, now=now) == [folder]


def test_trash_a_killed_process_left_is_deleted_by_the_next_prune(tmp_path):
    trash = tmp_path / (retention.TRASH_PREFIX + "x1") / "old.checkpoints" / "objects"
    trash.mkdir(parents=True)
    (trash / "ab").write_bytes(b"x")
    recent = session_with_checkpoints(tmp_path, "recent", 1, time.time())
    assert retention.prune(tmp_path, days=30) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recent.checkpoints", "recent.jsonl"]
    assert recent.exists()
