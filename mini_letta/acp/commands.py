"""The slash commands an editor offers (``available_commands_update``) and runs as a prompt:
``/compact [focus]`` and ``/context`` (as ``-p`` runs them, ``headless_commands.py``), ``/rewind``
(the list of your messages) and ``/rewind N`` (files mini-letta changed and the conversation back to
before message N; a file changed since by someone else is left as it is), and each skill (``/name
args``, run by the turn itself as in the REPL)."""

from __future__ import annotations

from typing import Any

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from mini_letta.wording import counted

OWN = {"compact": ("Summarize the conversation to free context (optional: what to keep).", "what to focus on"),
       "context": ("Show what the context holds, by category, and how much is left.", None),
       "rewind": ("List your messages; /rewind N puts files and conversation back to before message N.",
                  "message number")}


def available(agent) -> list[AvailableCommand]:
    commands = [AvailableCommand(name=name, description=text,
                                 input=AvailableCommandInput(UnstructuredCommandInput(hint=hint)) if hint else None)
                for name, (text, hint) in OWN.items()]
    skills = getattr(agent, "skills", None)
    for skill in (skills.catalog.skills if skills is not None else []):
        if skill.name not in OWN:
            commands.append(AvailableCommand(name=skill.name, description=skill.description or f"The {skill.name} skill.",
                                             input=AvailableCommandInput(UnstructuredCommandInput(hint="arguments"))))
    return commands


def parse(text: str) -> tuple[str, str] | None:
    """(name, argument) when ``text`` is one of our own commands; skills and other text go to the turn."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, argument = stripped[1:].partition(" ")
    if name not in OWN or (name == "context" and argument.strip()):
        return None
    return name, argument.strip()


def run(agent, name: str, argument: str, events) -> tuple[str, bool]:
    """(the text to show, whether it failed)."""
    from mini_letta import headless_commands
    from mini_letta.errors import MiniLettaError

    try:
        if name == "rewind":
            return rewind(agent, argument), False
        if name == "compact":
            return compact(agent, argument, events)
        done = headless_commands.run(agent, name, argument, events)
    except MiniLettaError as error:
        return str(error), True
    return done.text, done.is_error


def compact(agent, focus: str, events) -> tuple[str, bool]:
    from mini_letta.acp.events import compaction_words

    if focus.split(" ", 1)[0] == "--preview":
        return "/compact --preview needs the REPL (it asks before applying); here use /compact [focus].", True
    record = agent.compact_now(focus or None, events)
    return compaction_words(record, agent.context_state().percent_left), False


def rewind(agent, argument: str) -> str:
    from mini_letta.checkpoints.restore import NoCheckpoint, apply
    from mini_letta.checkpoints.rewind import code_plan, failed_snapshots_note, rewind_conversation, rewind_points
    from mini_letta.checkpoints.script import point_line
    from mini_letta.errors import SessionError
    from mini_letta.sessions.store import read_history
    from mini_letta.trust.terminal_text import one_line

    store = agent.checkpoints.store() if agent.checkpoints is not None else None
    try:
        history = read_history(agent.session.path) if agent.session is not None else []
    except SessionError:
        history = []
    points = rewind_points(agent.conversation.messages, store, history)
    if not points:
        return "Nothing to rewind to: no message of yours is in the context yet."
    if not argument:
        return "\n".join(["Your messages (`/rewind N` goes back to before message N):"] + [point_line(p) for p in points])
    if not argument.isdigit() or not 1 <= int(argument) <= len(points):
        return f"{argument!r} is not a message number: give 1 to {len(points)} (`/rewind` lists them)."
    point = points[int(argument) - 1]
    said: list[str] = []
    try:
        plan = code_plan(store, agent.workspace, point)
    except NoCheckpoint:
        plan = None
        said.append(f"Message {point.number} has no checkpoint: no files were restored.")
    if plan is not None:
        for item in plan.contested:
            said.append(f"Left {one_line(item.path)} as it is: it was changed since by someone else.")
        for item in plan.blocked:
            said.append(f"Cannot restore {one_line(item.path)}: {item.problem}.")
        if plan.unrecorded:
            said.append(f"Not all could be restored: {failed_snapshots_note(plan.unrecorded)}.")
        failures = apply(store, agent.workspace, plan.safe)
        said += [one_line(failure) for failure in failures]
        said.append(f"Restored {counted(len(plan.safe) - len(failures), 'file')}.")
    if not point.in_context:
        said.append(f"Message {point.number} was compacted into the summary: the conversation stays as it is.")
    else:
        freed = rewind_conversation(agent, point.message)
        said.append(f"The conversation is back to before message {point.number} ({max(0, freed):,} tokens freed, "
                    f"{agent.context_state().percent_left}% context left). It was: {one_line(point.message.text)}")
    return "\n".join(said)


def skill_names(agent: Any) -> set[str]:
    skills = getattr(agent, "skills", None)
    return {skill.name for skill in skills.catalog.skills} if skills is not None else set()
