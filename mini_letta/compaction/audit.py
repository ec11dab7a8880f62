"""The audit: after the model writes its summary, check it against what must be kept.

The must-keep set is every identifier the user typed (paths, names, numbers, quoted strings) and
every fact of the carry-over. An item counts as kept when the summary or the carry-over contains
it; the rest are restored, each with the words around it from the user's message, in a short
"Also keep" section, newest turn first, within a token budget. Nothing here asks a model, so the
same history always gives the same section.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mini_letta.compaction.carryover import RECALL_TOOL, CarryOver

SNIPPET_CHARS = 60
MAX_ITEM_CHARS = 80

_PATTERNS = (
    re.compile(r"`([^`\n]{2,80})`"),
    re.compile(r"\"([^\"\n]{2,80})\""),
    re.compile(r"(?<![\w])'([^'\n]{2,80})'(?![\w])"),
    # Paths: something/with/slashes, or a file name with an extension.
    re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+|[\w-]{2,}(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/-])"),
    # Names: snake_case, camelCase, CamelCase, SQLite-like and calls().
    re.compile(r"\b([A-Za-z_]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*|[A-Z]{2,}[a-z]\w*|[A-Za-z_]\w*\(\))"),
    # Numbers of two digits or more, versions and decimals.
    re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+|\d{2,})(?![\w])"),
)


@dataclass(frozen=True)
class Item:
    text: str
    turn: int  # 0 for carry-over facts
    context: str  # the words around it in the user's message


@dataclass
class AuditResult:
    section: str  # empty when nothing had to be restored
    items: int
    kept_by_model: int
    restored: int


def identifiers(text: str) -> list[str]:
    """The identifiers of ``text`` in order of appearance, each once."""
    found: dict[str, int] = {}
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(1).strip().rstrip(".,;:")
            if len(value) >= 2 and value not in found:
                found[value] = match.start(1)
    return sorted(found, key=found.__getitem__)


def _snippet(text: str, item: str) -> str:
    position = text.find(item)
    start = max(0, position - SNIPPET_CHARS)
    end = min(len(text), position + len(item) + SNIPPET_CHARS)
    piece = " ".join(text[start:end].split())
    return ("…" if start else "") + piece + ("…" if end < len(text) else "")


def must_keep(carried: CarryOver) -> list[Item]:
    """Identifiers from every typed message carried so far, then the carry-over's facts."""
    items: dict[str, Item] = {}
    for turn, text in carried.users:
        for value in identifiers(text):
            if len(value) <= MAX_ITEM_CHARS:
                items.setdefault(value.lower(), Item(value, turn, _snippet(text, value)))
    for fact in carried.facts():
        items.setdefault(fact.lower(), Item(fact, 0, fact))
    return list(items.values())


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()


def audit(summary: str, carried_text: str, items: list[Item], *, budget: int,
          count: Callable[[str], int]) -> AuditResult:
    """Which ``items`` the model's ``summary`` kept, and an "Also keep" section restoring those that
    neither it nor ``carried_text`` holds, within ``budget`` tokens."""
    in_summary = _normal(summary)
    elsewhere = _normal(carried_text)
    kept = [item for item in items if _normal(item.text) in in_summary]
    missing = [item for item in items if _normal(item.text) not in in_summary and _normal(item.text) not in elsewhere]
    if not missing:
        return AuditResult("", len(items), len(kept), 0)
    header = "## Also keep (from the user's messages; the summary left these out)"
    lines: list[str] = []
    shown = ""
    used = count(header)
    restored = 0
    left: list[int] = []
    for item in sorted(missing, key=lambda i: -i.turn):
        if _normal(item.text) in shown:
            restored += 1
            continue
        line = f"- [turn {item.turn}] {item.context}" if item.turn else f"- {item.context}"
        cost = count(line)
        if used + cost > budget:
            left.append(item.turn)
            continue
        lines.append(line)
        shown += " " + _normal(line)
        used += cost
        restored += 1
    if not lines:
        return AuditResult("", len(items), len(kept), 0)
    if left:
        lines.append(f"- ({len(left)} more item(s) not listed; find them with {RECALL_TOOL})")
    return AuditResult("\n".join([header, *lines]), len(items), len(kept), restored)
