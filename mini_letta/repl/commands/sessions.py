"""/clear, /sessions and /resume: start, list and go on with the sessions of this folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mini_letta import config
from mini_letta.repl.commands.registry import command
from mini_letta.repl.views import plain

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost

RESUME_CHOICES = 10


@command("clear")
def clear_command(repl: "ReplHost", argument: str) -> None:
    """Start a new session with an empty context (the old one stays resumable)."""
    from mini_letta.sessions.store import SessionWriter

    agent = repl.agent()
    old = agent.session
    agent.reset(SessionWriter.create(config.home(), agent.workspace, agent.provider.name, agent.provider.model))
    if old is not None:
        old.close()  # and with it the lock: another process may resume it now
    repl.refresh_status()
    old_id = getattr(old, "id", None)
    # The id of a resumed session was read from its file: data, not markup.
    repl.console.print(plain("Started a new session." + (f" The previous one is `mini-letta --resume {old_id}`."
                                                         if old_id else "")))


@command("sessions")
def sessions_command(repl: "ReplHost", argument: str) -> None:
    """List the saved sessions of this folder, newest first (/resume picks one)."""
    from mini_letta.sessions.listing import list_sessions, session_table

    summaries = list_sessions(config.home(), repl.agent().workspace, repl.agent().say)
    if not summaries:
        repl.console.print("No saved sessions in this folder yet.")
        return
    repl.console.print(session_table(summaries, width=repl.console.width, home=config.home()))


@command("resume", "/resume [id]")
def resume_command(repl: "ReplHost", argument: str) -> None:
    """Go on with an earlier session of this folder: pick one from the list, or give its id (a prefix will do)."""
    resume(repl, argument or None)


def resume(repl: "ReplHost", session_id: str | None) -> None:
    """Go on with the session ``session_id``, or the one the user picks from the list."""
    from mini_letta.app import resume_into
    from mini_letta.repl.session_busy import choose
    from mini_letta.repl.views import resume_recap
    from mini_letta.sessions.listing import find_session
    from mini_letta.sessions.lock import SessionBusyError

    agent = repl.agent()
    path = find_session(config.home(), session_id) if session_id else _pick_session(repl, agent)
    if path is None:
        return
    if agent.session is not None and Path(path) == Path(agent.session.path):
        repl.console.print("That is the session you are in.")
        return
    try:
        loaded = resume_into(agent, path)
    except SessionBusyError as busy:
        choice = choose(repl.console, busy)
        if choice is None:
            repl.console.print("Nothing resumed.")
            return
        loaded = resume_into(agent, path, fork=choice.fork, lock=choice.lock)
    repl.outputs.clear()
    repl.refresh_status()
    repl.console.print(resume_recap(loaded, last_active(path)))


def _pick_session(repl: "ReplHost", agent) -> Path | None:
    from prompt_toolkit import PromptSession

    from mini_letta.sessions.listing import find_session, list_sessions, session_table

    current = Path(agent.session.path) if agent.session is not None else None
    summaries = [s for s in list_sessions(config.home(), agent.workspace, agent.say) if Path(s.path) != current]
    if not summaries:
        repl.console.print("No other saved sessions in this folder yet.")
        return None
    shown = summaries[:RESUME_CHOICES]
    repl.console.print(session_table(shown, width=repl.console.width, home=config.home(), numbered=True))
    try:
        typed = PromptSession().prompt("Resume which? A number or an id (Enter cancels): ").strip()
    except (KeyboardInterrupt, EOFError):
        typed = ""
    if not typed:
        repl.console.print("Nothing resumed.")
        return None
    if typed.isdigit() and 1 <= int(typed) <= len(shown):
        return Path(shown[int(typed) - 1].path)
    return find_session(config.home(), typed)


def last_active(path: Path) -> str:
    import datetime

    try:
        return datetime.datetime.fromtimestamp(Path(path).stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    except OSError:
        return ""
