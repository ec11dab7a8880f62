"""Skills the user names in what they type: ``/skill-name args`` or ``$skill-name`` in a message."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from mini_letta.messages import Message
from mini_letta.skills.activation import TYPED, activate
from mini_letta.skills.discovery import Skill
from mini_letta.skills.invocations import Invocation, exchange

_MENTION = re.compile(r"(?<![\w$])\$([A-Za-z0-9][A-Za-z0-9_-]{0,63})")


def typed_invocations(text: str, names: Collection[str], commands: Collection[str] = ()) -> list[Invocation]:
    """The skills ``text`` invokes: a message ``/name args`` (unless ``name`` is one of the
    ``commands``, which win), or each ``$name`` it mentions, once, in order."""
    stripped = text.strip()
    if stripped.startswith("/"):
        parts = stripped[1:].split(maxsplit=1)
        if not parts or parts[0] not in names or parts[0] in commands:
            return []
        return [Invocation(parts[0], parts[1].strip() if len(parts) > 1 else "")]
    found: dict[str, Invocation] = {}
    for match in _MENTION.finditer(text):
        if match.group(1) in names:
            found.setdefault(match.group(1), Invocation(match.group(1)))
    return list(found.values())


def typed_messages(invoked: Sequence[Invocation], find: Callable[[str], Skill | None],
                   fits: Callable[[str], bool], *, workspace: Path | None = None) -> list[Message]:
    """The messages that bring the ``invoked`` skills in after the typed message: for each, a
    ``skill`` call and its result, as if the model had asked."""
    messages: list[Message] = []
    for invocation in invoked:
        skill = find(invocation.name)
        if skill is not None:
            activation = activate(skill, invocation.args, fits, workspace=workspace, heading=TYPED)
            messages += exchange(invocation, activation.text, typed=True)
    return messages
