"""Going back to an earlier user message: the points to pick from, and the conversation put back.

The session record stays append-only: a rewind is one ``rewind`` entry naming the message and the
context that remains (``session.SessionWriter.append_rewind``); the turns after it stay in the file,
where ``conversation_search`` still finds them, and a resumed session starts from the rewound state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_letta.checkpoints.restore import (NoCheckpoint, Plan, checkpoint_index, paths_changed_since, plan,
                                           snapshots_failed_since)
from mini_letta.checkpoints.store import Store
from mini_letta.compaction.layers import extractive_summary, summary_message
from mini_letta.compaction.summarizer import SummaryUnavailable, summarise, summary_input
from mini_letta.compaction.turns import Cut
from mini_letta.errors import SessionError
from mini_letta.messages import Message
from mini_letta.settings import SETTINGS
from mini_letta.wording import counted

SUMMARY_NOTE = ("(The turns from here on were summarized at the user's request with /rewind; the messages "
                "above are verbatim. conversation_search finds the full text.)")


@dataclass
class RewindPoint:
    """A user message still in the context, as the /rewind list shows it."""

    number: int
    message: Message
    # When it was sent (seconds since the epoch); None without a checkpoint.
    time: float | None
    # Files changed since it, by the agent or a command (empty without a checkpoint).
    files: list[str] = field(default_factory=list)
    has_checkpoint: bool = False
    # False for a message compacted into the summary: its files can be restored, not its context.
    in_context: bool = True
    # Commands since it that git could not snapshot: what they changed cannot be restored.
    snapshots_failed: int = 0


def rewind_points(messages: list[Message], store: Store | None,
                  history: list[tuple[int, Message]] | None = None) -> list[RewindPoint]:
    """Your messages in the context, oldest first; with the session's ``history``
    (``session.read_history``), also those the context's summary stands for, before them."""
    entries = store.entries() if store is not None else []
    users = [(m, False) for m in _summarised_users(messages, history or [])]
    users += [(m, True) for m in messages if m.role == "user" and m.kind == "normal"]
    points = []
    for number, (message, in_context) in enumerate(users, start=1):
        try:
            start = checkpoint_index(entries, message.id)
        except NoCheckpoint:
            points.append(RewindPoint(number, message, message.created, in_context=in_context))
            continue
        points.append(RewindPoint(number, message, entries[start].get("time") or message.created,
                                  paths_changed_since(entries, start), True, in_context,
                                  snapshots_failed_since(entries, start)))
    return points


def _summarised_users(messages: list[Message], history: list[tuple[int, Message]]) -> list[Message]:
    """The user messages a leading summary stands for, by the turn numbers its carry-over lists
    (turns a rewind abandoned are not among them)."""
    if not messages or messages[0].kind != "summary":
        return []
    carried = (messages[0].meta.get("carryover") or {}).get("users") or []
    turns = {u[0] for u in carried if isinstance(u, (list, tuple)) and u and isinstance(u[0], int)}
    return [m for turn, m in history if m.role == "user" and m.kind == "normal" and turn in turns]


def failed_snapshots_note(count: int) -> str:
    """For the /rewind list and a rewind past them: commands whose changes were not recorded."""
    return (f"{counted(count, 'command')} since could not be snapshotted (git failed): what "
            f"{'it' if count == 1 else 'they'} changed cannot be restored")


def code_plan(store: Store | None, workspace: Path, point: RewindPoint) -> Plan:
    """What restoring the files to ``point`` would change; raises NoCheckpoint without one."""
    if store is None or not point.has_checkpoint:
        raise NoCheckpoint(point.message.id)
    return plan(store, workspace, point.message.id)


def context_before(messages: list[Message], message: Message) -> list[Message]:
    for index, candidate in enumerate(messages):
        if candidate.id == message.id:
            return list(messages[:index])
    raise ValueError("that message is no longer in the context")


def rewind_conversation(agent: Any, message: Message, summary: Message | None = None) -> int:
    """Make the context the history before ``message`` (and ``summary`` after it, for "summarize
    from here"); logs a rewind entry. Returns the tokens freed."""
    before = agent.context_tokens()
    kept = context_before(agent.conversation.messages, message) + ([summary] if summary is not None else [])
    agent.ahead.cancel()
    agent.conversation.replace(kept)
    if agent.session is not None:
        try:
            agent.session.append_rewind(message.id, agent.conversation.boundary_seq, kept)
        except SessionError as error:
            agent.say(f"{error} The rewind holds in memory only.")
    return before - agent.context_tokens()


def summary_from(agent: Any, message: Message, focus: str | None = None) -> Message:
    """A summary of ``message`` and everything after it (the earlier part is not shown to the
    summarizer: it stays verbatim), made by the compaction code's summarizer; the extractive
    summary when the model gives none."""
    later = agent.conversation.messages[len(context_before(agent.conversation.messages, message)):]
    cut = Cut(0, len(later), None)
    summarizer = agent.compacting.summarizer
    window = summarizer.window
    max_output = max(1, min(SETTINGS.summary_output_cap, int(window * SETTINGS.summary_output_ratio)))
    try:
        body, _ = summarise(summary_input(later, cut, focus), summarizer.quoted, summarizer.count,
                            input_budget=window - max_output, max_output_tokens=max_output)
    except SummaryUnavailable:
        body = extractive_summary(later, cut, ([], []))
    return summary_message(body, [], [], note=SUMMARY_NOTE, summary_body=body, rewound_from=message.id)
