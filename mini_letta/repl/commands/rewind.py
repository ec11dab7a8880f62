"""``/rewind`` (and Esc Esc at an empty prompt) and ``/undo``: pick a past message, then put the
code, the conversation or both back as they were, or summarize from there.

Restoring files shows what will change and asks; a file changed since by someone else (its content
is not what mini-letta left) is named and needs its own yes. The picked message comes back in the
prompt, to edit and send again.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.key_binding import KeyBindings
from rich.table import Table
from rich.text import Text

from mini_letta.checkpoints.restore import NoCheckpoint, apply
from mini_letta.checkpoints.store import Store
from mini_letta.checkpoints.rewind import (RewindPoint, code_plan, failed_snapshots_note, rewind_conversation,
                                           rewind_points, summary_from)
from mini_letta.context.budget import short_tokens
from mini_letta.errors import MiniLettaError, SessionError
from mini_letta.repl.commands.registry import command
from mini_letta.repl.views import plain
from mini_letta.sessions.store import read_history
from mini_letta.trust.terminal_text import preview, visible
from mini_letta.wording import counted

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost

CHOICES = {"1": "both", "2": "conversation", "3": "code", "4": "summarize"}
CHOICE_LABELS = ("Restore code and conversation", "Restore conversation only", "Restore code only",
                 "Summarize from here (the earlier part stays verbatim)")
SHOWN_FILES = 3
SHOWN_POINTS = 30


@command("rewind")
def rewind_command(repl: "ReplHost", argument: str) -> None:
    """Go back to one of your messages: restore code, conversation or both, or summarize from there (Esc Esc)."""
    run_rewind(repl)


@command("undo")
def undo_command(repl: "ReplHost", argument: str) -> None:
    """Undo what the last turn changed in files (code only; asks first)."""
    run_undo(repl)


def _ask(question: str) -> str:
    """One line of input; Esc, Ctrl-C and Ctrl-D answer "" (cancel)."""
    bindings = KeyBindings()

    @bindings.add("escape", eager=True)
    def _cancel(event):
        event.app.exit(result="")

    try:
        return PromptSession(key_bindings=bindings).prompt(question).strip()
    except (KeyboardInterrupt, EOFError):
        return ""


def _choose(question: str) -> str | None:
    """What to restore, one key: 1-4; Enter, Esc, Ctrl-C and Ctrl-D cancel (None)."""
    from mini_letta.repl.one_key import ask_one_key

    answers = {**{key: CHOICE_LABELS[int(key) - 1].lower() for key in CHOICES}, "enter": "cancelled"}
    try:
        return CHOICES.get(ask_one_key(question, answers, on_escape="enter"))
    except (KeyboardInterrupt, EOFError):
        return None


def _yes(question: str) -> bool:
    """One key, no Enter: ``y`` or ``n`` (Esc, Ctrl-C and Ctrl-D: no)."""
    from mini_letta.repl.one_key import ask_one_key

    try:
        return ask_one_key(question + " [y/n] ", {"y": "yes", "n": "no"}, on_escape="n") == "y"
    except (KeyboardInterrupt, EOFError):
        return False


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return ""
    when = datetime.datetime.fromtimestamp(timestamp)
    return when.strftime("%H:%M" if when.date() == datetime.date.today() else "%m-%d %H:%M")


def _files(point: RewindPoint, undone: bool = False) -> str:
    if undone:
        # /undo or a code rewind already put them back: nothing of this turn is left to restore.
        return f"{counted(len(point.files), 'file')} changed since, all back as they were (undone)"
    if not point.in_context:
        return "in the summary (code only)" + ("" if point.has_checkpoint else ", no checkpoint")
    if not point.has_checkpoint:
        return "no checkpoint"
    failed = f"; {failed_snapshots_note(point.snapshots_failed)}" if point.snapshots_failed else ""
    if not point.files:
        return "no files changed since" + failed
    shown = ", ".join(point.files[:SHOWN_FILES]) + (", …" if len(point.files) > SHOWN_FILES else "")
    return f"{counted(len(point.files), 'file')} changed since: {shown}{failed}"


def points_table(points: list[RewindPoint], undone: frozenset[int] = frozenset()) -> Table:
    """The list to pick from; ``undone``: the numbers of points whose files are already as they were."""
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for name in ("#", "Time", "Message", "Files"):
        table.add_column(name, no_wrap=name != "Files", overflow="ellipsis" if name == "Message" else "fold")
    for point in points:
        # Message text and file names are data: never markup, controls made visible.
        table.add_row(str(point.number), _when(point.time), Text(preview(visible(point.message.text), 50)),
                      Text(visible(_files(point, point.number in undone))))
    return table


def _points(agent) -> tuple[Store | None, list[RewindPoint]]:
    store = agent.checkpoints.store() if agent.checkpoints is not None else None
    try:
        history = read_history(agent.session.path) if agent.session is not None else []
    except SessionError:
        history = []  # the summarised messages are left out of the list; the rest still works
    return store, rewind_points(agent.conversation.messages, store, history)


def _undone(store, workspace, points: list[RewindPoint]) -> frozenset[int]:
    """The points whose changed files are all back as they were at that message (a plan with
    nothing to restore), so the list does not offer a turn already undone as if it were not."""
    undone = set()
    for point in points:
        if not (point.files and point.has_checkpoint) or point.snapshots_failed:
            continue
        try:
            if not code_plan(store, workspace, point).items:
                undone.add(point.number)
        except (NoCheckpoint, OSError):
            continue
    return frozenset(undone)


def run_rewind(repl: ReplHost) -> None:
    agent = repl.agent()
    store, points = _points(agent)
    if not points:
        repl.console.print("Nothing to rewind to: no message of yours is in the context yet.")
        return
    repl.console.print(Text("Rewind to which of your messages?", style="bold"))
    if len(points) > SHOWN_POINTS:
        repl.console.print(f"(the latest {SHOWN_POINTS} of {len(points)}; any number can be typed)")
    shown = points[-SHOWN_POINTS:]
    repl.console.print(points_table(shown, _undone(store, agent.workspace, shown)))
    typed = _ask(f"Message number (1-{len(points)}; Enter or Esc cancels): ")
    if not typed:
        repl.console.print("Nothing was changed.")
        return
    if not typed.isdigit() or not 1 <= int(typed) <= len(points):
        repl.console.print(plain(f"{typed!r} is not a message number; nothing was changed.", "yellow"))
        return
    point = points[int(typed) - 1]
    if not point.in_context:
        repl.console.print(f"Message {point.number} was compacted into the summary: only its files can be restored.")
        restore_files(repl, agent, store, point)
        return
    for number, label in enumerate(CHOICE_LABELS, start=1):
        repl.console.print(f"  {number}. {label}")
    choice = _choose("Which? (1-4; Enter or Esc cancels): ")
    if choice is None:
        repl.console.print("Nothing was changed.")
    elif choice == "summarize":
        summarize_from_here(repl, agent, point)
    else:
        if choice in ("both", "code"):
            restore_files(repl, agent, store, point)
        if choice in ("both", "conversation"):
            freed = rewind_conversation(agent, point.message)
            _freed(repl, agent, freed, f"The conversation is back to before message {point.number}")
            # Back in the prompt, to edit and send again.
            repl.draft = point.message.text


def summarize_from_here(repl: ReplHost, agent, point: RewindPoint) -> None:
    repl.console.print(plain(f"Summarizing message {point.number} and everything after it…", "magenta"))
    try:
        summary = summary_from(agent, point.message)
    except KeyboardInterrupt:
        repl.console.print(plain("Summary cancelled; nothing was changed.", "yellow"))
        return
    except MiniLettaError as error:
        repl.console.print(plain(f"{error} Nothing was changed.", "yellow"))
        return
    freed = rewind_conversation(agent, point.message, summary)
    repl.console.print(plain(summary.meta.get("summary_body", summary.text)))
    _freed(repl, agent, freed, f"Messages from {point.number} on are now this summary")


def _freed(repl: ReplHost, agent, freed: int, what: str) -> None:
    agent.checkpoints.freed = max(0, freed) if agent.checkpoints is not None else 0
    repl.refresh_status()
    state = agent.context_state()
    repl.console.print(plain(f"{what}; {short_tokens(max(0, freed))} tokens freed, {state.percent_left}% context "
                             "left. The later turns stay in the session file (conversation_search finds them).",
                             "green"))


def restore_files(repl: ReplHost, agent, store, point: RewindPoint, *, what: str = "") -> None:
    """Show the files that would change, ask, restore the ones allowed."""
    try:
        plan = code_plan(store, agent.workspace, point)
    except NoCheckpoint:
        repl.console.print(plain(f"Message {point.number} has no checkpoint (it was sent before checkpoints were "
                                 "kept, or they could not be saved): no files were restored.", "yellow"))
        return
    if plan.unrecorded:
        repl.console.print(plain(f"Not everything can be restored: {failed_snapshots_note(plan.unrecorded)}.",
                                 "yellow"))
    if not plan.items:
        if getattr(agent.checkpoints, "unrecorded_commands", 0):
            repl.console.print(plain("No file that write_file or edit_file changed differs from how it was at that "
                                     "message; what commands changed is not recorded here (not a git work tree), "
                                     "so those files may differ.", "yellow"))
        else:
            repl.console.print("No file differs from how it was at that message.")
        return
    repl.console.print(Text(what or f"Restoring the files to how they were at message {point.number}:",
                            style="bold"))
    for item in plan.items:
        note = f"  (cannot: {item.problem})" if item.problem else (
            "  (changed since by someone else)" if item.changed_by_someone_else else "")
        repl.console.print(plain(f"  {item.action:8} {item.path}{note}", "yellow" if note else ""))
    chosen = []
    if plan.safe and _yes(f"Restore {counted(len(plan.safe), 'file')} changed by mini-letta?"):
        chosen += plan.safe
    for item in plan.contested:
        if _yes(f"{item.path} was changed since by someone else; its current content would be lost. "
                f"Overwrite it too?"):
            chosen.append(item)
        else:
            repl.console.print(plain(f"Left {item.path} as it is.", "yellow"))
    if not chosen:
        repl.console.print("No files were changed.")
        return
    failures = apply(store, agent.workspace, chosen)
    for failure in failures:
        repl.console.print(plain(failure, "red"))
    repl.console.print(plain(f"Restored {counted(len(chosen) - len(failures), 'other file' if failures else 'file')}.", "green"))


def run_undo(repl: ReplHost) -> None:
    """The last turn's changes, code only."""
    agent = repl.agent()
    store, points = _points(agent)
    if not points:
        repl.console.print("Nothing to undo: no message of yours is in the context yet.")
        return
    point = points[-1]
    restore_files(repl, agent, store, point,
                  what=f"Undoing what changed since your last message (“{preview(visible(point.message.text), 40)}”):")
