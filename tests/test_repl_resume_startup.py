"""``-c`` in the REPL: the prompt comes first; the history is loaded once, by the background
start-up, and its recap is said above the prompt from what that load found."""

from __future__ import annotations

import io

from rich.console import Console

from mini_letta import config
from mini_letta.app import Options
from mini_letta.messages import Message
from mini_letta.repl.app import Repl
from mini_letta.sessions import store
from mini_letta.sessions.store import SessionWriter


def _earlier_session(workspace) -> SessionWriter:
    writer = SessionWriter.create(config.home(), workspace, "demo", "demo")
    writer.append_message(Message.user("hello from yesterday", seq=1, meta={"turn": 1}))
    writer.append_message(Message.assistant("You said: hello from yesterday", seq=2))
    writer.close()
    return writer


def test_continue_draws_the_banner_without_loading_the_history_and_recaps_from_the_start_ups_load(
        tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    earlier = _earlier_session(workspace)
    loads = []
    real_load = store.load_session
    monkeypatch.setattr(store, "load_session", lambda path: loads.append(path) or real_load(path))
    out = io.StringIO()
    repl = Repl(Options(provider="demo", continue_session=True, workspace=workspace), Console(file=out, width=200))
    repl._banner()
    assert loads == [] and "Resumed session" not in out.getvalue()
    agent = repl.agent()
    repl.startup.show_notices()
    assert len(loads) == 1 and agent.session.path == earlier.path
    assert f"Resumed session {earlier.id}" in out.getvalue() and "You: hello from yesterday" in out.getvalue()
    agent.session.close()
