"""What the REPL offers when the session asked for (``-c``, ``-r``, ``/resume``) is open in another
process: fork it (a new session that starts from the same history) or wait until that process
closes it. Two processes never append to one session (``sessions/lock.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from mini_letta.errors import SessionError
from mini_letta.repl.views import plain
from mini_letta.sessions.lock import SessionBusyError, SessionLock, acquire, describe_holder, wait_for


def _one_key(question: str) -> str:
    from mini_letta.repl.one_key import ask_one_key

    answer = ask_one_key(question, {"f": "fork", "w": "wait", "enter": "cancel"}, on_escape="enter")
    return "" if answer == "enter" else answer


@dataclass
class Choice:
    fork: bool
    lock: SessionLock | None = None  # held: the user waited for it


def choose(console, busy: SessionBusyError, ask: Callable[[str], str] | None = None) -> Choice | None:
    """Ask fork or wait, one key; None when the user cancels (Enter, Esc, Ctrl-C, or Ctrl-C while waiting)."""
    if ask is None:
        ask = _one_key
    session_id, holder = busy.session_path.stem, describe_holder(busy.holder)
    # The holder's description and the id were read from files: data, never markup.
    console.print(plain(f"Session {session_id} is open in {holder}; two processes writing one session "
                        "would mix their conversations.", "yellow"))
    console.print("f: fork it, a new session that starts from the same history · w: wait until it is closed · "
                  "Enter or Esc: cancel")
    while True:
        try:
            typed = ask("Fork or wait? [f/w] ").strip().lower()
        except (KeyboardInterrupt, EOFError):
            typed = ""
        if typed in ("f", "fork"):
            return Choice(fork=True)
        if not typed:
            return None
        if typed in ("w", "wait"):
            break
    try:  # a Ctrl-C the moment the line below is shown stops the wait too
        console.print(plain(f"Waiting for {holder} to close session {session_id}… Ctrl-C stops waiting."))
        return Choice(fork=False, lock=wait_for(busy.session_path))
    except KeyboardInterrupt:
        console.print("Stopped waiting.")
        return None


def settle_at_start(options, path: Path, console, interactive: bool) -> None:
    """Before the REPL opens with ``-c`` / ``-r``: when the session is open elsewhere, ask, and set
    ``options`` to fork it or to resume exactly that file once it is free. Without a terminal to
    ask in, the one-line error (which names ``--fork-session``) ends the start."""
    if options.fork_session:
        return
    try:
        acquire(path).release()
        return
    except SessionBusyError as error:
        if not interactive:
            raise
        busy = error
    choice = choose(console, busy)
    if choice is None:
        raise SessionError(f"Nothing resumed: session {path.stem} is still open in another process.")
    # The agent, built in a background thread, goes on with exactly this file and the lock waited for.
    options.resume, options.continue_session = path.stem, False
    options.fork_session, options.session_lock = choice.fork, choice.lock
