"""A provider's own compaction as one candidate of our summary stage, never a replacement for it.

OpenAI's ``POST /responses/compact`` turns the part of the conversation being summarised into one
sealed ``compaction`` item that only that model can read; Anthropic's ``compact_20260112`` into a
``compaction`` block whose summary is readable (``content``) beside what only the API reads. Our plan still decides when and what: the
preflight, the floor and the threshold trigger it, the cut is ours, and the result goes through the
same checks as a model's summary (``summary_stage``): the carry-over (the user's messages, files
changed, commands, errors, the current task) and the audit are added to the summary message in
plain text, because nobody can check what a sealed item kept (a readable one is the summary's body,
checked as a model's summary is, and the audit reads it); a result not smaller than what it
replaces is discarded; the Pre/PostCompact hooks run around it as around any compaction.

The summary message stays ``kind="summary"`` (every part that knows a summary, the session file
and ``-c`` among them, keeps working) and carries the provider's items in ``meta["native"]``:
``{"provider", "model", "items", "tokens"}``. The provider that made them sends the items ahead of
the message's text (Anthropic's without the summary its block holds); any other provider or model
sends the text alone. ``tokens`` is the provider's
size of the items, which our count adds to the message's (``context/tokens.py``).

The summarizer offers it as ``native(messages, focus) -> NativeSummary | None`` (``loop/sizing.py``);
None means refused or unsupported, said once there, and our own summary runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mini_letta.messages import Message

MODES = ("auto", "on", "off")
LAYER = "native"
# What the summary says where a model's summary would be: the summary itself is sealed.
BODY = ("The earlier conversation was compacted by the provider; its summary is the compaction item "
        "sent with this message, which only the model can read.")


@dataclass(frozen=True)
class NativeSummary:
    provider: str
    model: str
    items: list[dict[str, Any]]  # as the provider sends them back
    tokens: int  # the items' size as the provider counts them, beyond the summary message's text
    # The summary in words where the provider gives one (Anthropic's block holds it; OpenAI's is sealed).
    text: str | None = None

    def to_meta(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "items": self.items, "tokens": self.tokens}


def mode(value: str | None) -> str | None:
    """``compaction.native`` as given (any case, spaces around), or None when it is not one of MODES."""
    chosen = (value or "").strip().lower()
    return chosen if chosen in MODES else None


def candidate(summarizer: Any, summarised: list[Message], focus: str | None) -> tuple[str, str, dict[str, Any]] | None:
    """The native candidate for the summary stage: (layer, body, summary meta), or None when the
    summarizer has no native form or it was refused."""
    native = getattr(summarizer, "native", None)
    result = native(summarised, focus) if native is not None and summarised else None
    if result is None:
        return None
    return LAYER, result.text or BODY, {"native": result.to_meta()}
