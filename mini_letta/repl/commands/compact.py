"""``/compact [focus]`` and ``/compact --preview [focus]``: every call the REPL makes to compact.

A preview computes the plan on the current history without changing it; nothing reaches the
conversation or the session file unless the user answers ``y`` or ``e``.
"""

from __future__ import annotations

import os

from typing import TYPE_CHECKING

from rich.console import Group
from rich.padding import Padding
from rich.text import Text

from mini_letta.context.budget import short_tokens
from mini_letta.errors import MiniLettaError
from mini_letta.repl.commands.registry import command
from mini_letta.repl.views import plain
from mini_letta.wording import counted

if TYPE_CHECKING:
    from mini_letta.compaction.plan import CompactionResult as CompactionPlan
    from mini_letta.repl.host import ReplHost

ANSWERS = {"y": "apply", "e": "edit", "n": "cancel"}
CANCELLED = "Compaction cancelled; nothing was changed."


@command("compact", "/compact [focus]")
def compact_command(repl: "ReplHost", argument: str) -> None:
    """Summarise older conversation now, optional focus; /compact --preview [focus] shows it first.

    The focus says what the summary must keep, e.g. /compact keep the failing test names."""
    first, _, rest = argument.partition(" ")
    if first == "--preview":
        run_preview(repl, rest.strip() or None)
        return
    compact(repl, argument or None)


def compact(repl: "ReplHost", focus: str | None) -> None:
    """Compact now, the compaction's progress shown as a turn's is."""
    from mini_letta.repl.events import ReplEvents

    agent = repl.agent()
    events = repl.events = ReplEvents(repl)
    try:
        agent.compact_now(focus, events)
        drop_prepared_summary(agent)
    except MiniLettaError as error:
        repl.console.print(plain(str(error), "yellow"))
    except KeyboardInterrupt:
        repl.console.print(plain(CANCELLED, "yellow"))
    finally:
        events.close()
        repl.events = None
    repl.refresh_status()


def drop_prepared_summary(agent) -> None:
    """The history or the model changed under a summary prepared ahead of time: it no longer
    applies, and the status bar must stop saying "summary ready"."""
    agent.ahead.cancel()


def preview_view(plan: CompactionPlan, agent) -> Group:
    """What would be summarised and kept, the draft summary, and the size after."""
    count = agent.budget.calibration.count_message
    summarised, kept = plan.summarised(), plan.kept()
    turns = {m.meta.get("turn") for m in summarised if m.role == "user" and m.kind == "normal"}
    turns.discard(None)
    percent = agent.budget.state(plan.tokens_after).percent_left
    lines = [
        Text("Compaction preview (nothing has changed yet)", style="bold magenta"),
        Text(f"Would summarize: {counted(len(turns), 'turn')}, {counted(len(summarised), 'message')}, "
             f"{short_tokens(sum(count(m) for m in summarised))} tokens"),
        Text(f"Kept verbatim: {counted(len(kept), 'message')}, {short_tokens(sum(count(m) for m in kept))} tokens"),
        Text("Draft summary:", style="bold"),
        Padding(plain(plan.summary or "(no summary: only tool results would be cleared)"), (0, 0, 0, 2)),
        Text(f"Estimate after: {short_tokens(plan.tokens_before)} → {short_tokens(plan.tokens_after)} tokens, "
             f"{percent}% left", style="magenta"),
    ]
    return Group(*lines)


def _ask() -> str:
    """One key, no Enter: apply, edit or cancel (Esc, Ctrl-C and Ctrl-D cancel)."""
    from mini_letta.repl.one_key import ask_one_key

    try:
        return ANSWERS[ask_one_key("[y]es apply / [e]dit summary / [n]o cancel (Esc): ", ANSWERS, on_escape="n")]
    except (KeyboardInterrupt, EOFError):
        return "cancel"


def run_preview(repl: ReplHost, focus: str | None) -> None:
    from mini_letta.compaction import CompactionRecord
    from mini_letta.repl.editing import edit_text
    from mini_letta.repl.events import ReplEvents

    agent = repl.agent()
    events = repl.events = ReplEvents(repl)
    try:
        plan = agent.preview_compaction(focus, events)
    except MiniLettaError as error:
        repl.console.print(plain(str(error), "yellow"))
        return
    except KeyboardInterrupt:
        repl.console.print(plain(CANCELLED, "yellow"))
        return
    finally:
        events.close()
        repl.events = None
    if isinstance(plan, CompactionRecord):
        repl.console.print(plain(plan.note or "Nothing to compact yet."))
        return
    repl.console.print(preview_view(plan, agent))
    answer = _ask()
    summary = None
    if answer == "edit":
        inline = not (os.environ.get("VISUAL") or os.environ.get("EDITOR"))
        if inline:
            repl.console.print(plain("Editing the summary here (no $EDITOR): Alt-Enter adds a line, Enter "
                                     "ends; you are asked once more before it is applied.", "dim"))
        summary = edit_text(plan.summary)
        if summary is None or not summary.strip():
            answer = "cancel"
        elif inline and not _applies_after_a_last_look(repl, summary):
            answer = "cancel"
    if answer == "cancel":
        repl.console.print(plain(CANCELLED, "yellow"))
        return
    events = repl.events = ReplEvents(repl)
    try:
        agent.apply_compaction(plan, summary, events)
        drop_prepared_summary(agent)
    except ValueError as error:
        repl.console.print(plain(str(error), "yellow"))
    finally:
        events.close()
        repl.events = None
        repl.refresh_status()


def _applies_after_a_last_look(repl: ReplHost, summary: str) -> bool:
    """An inline edit ends with Enter, which must not also apply it: show it, then ask."""
    from mini_letta.repl.one_key import ask_one_key

    repl.console.print(plain("The summary as edited:", "bold"))
    repl.console.print(plain(summary))
    return ask_one_key("Apply this summary? [y]es · [n]o (Esc): ", {"y": "yes", "n": "no"}, on_escape="n") == "y"
