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
from functools import lru_cache

from mini_letta.compaction.carryover import RECALL_TOOL, CarryOver
from mini_letta.wording import counted
from mini_letta.settings import SETTINGS


_PATTERNS = (
    re.compile(r"`([^`\n]{2,80})`"),
    re.compile(r"\"([^\"\n]{2,80})\""),
    re.compile(r"(?<![\w])'([^'\n]{2,80})'(?![\w])"),
    # Paths: something/with/slashes, or a file name with an extension.
    re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+|[\w-]{2,}(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/-])"),
    # Names: snake_case, camelCase, CamelCase, SQLite-like and calls().
    re.compile(r"\b([A-Za-z_]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*|[A-Z]{2,}[a-z]\w*|[A-Za-z_]\w*\(\))"),
    # All-caps codes with a digit, as users type them: PEAR0, E0425, HTTP2, JIRA-142.
    re.compile(r"\b([A-Z]{2,}(?:-\d+)+|[A-Z][A-Z0-9]*\d[A-Z0-9]*(?:-[A-Z0-9]+)*)\b"),
    # Numbers of two digits or more, versions and decimals.
    re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+|\d{2,})(?![\w])"),
)


@dataclass(frozen=True)
class Item:
    text: str
    turn: int  # 0 for carry-over facts
    source: str  # the user's message it came from (the fact itself for carry-over facts)


@dataclass
class AuditResult:
    section: str  # empty when nothing had to be restored
    items: int
    kept_by_model: int
    restored: int


@lru_cache(maxsize=4_096)
def identifiers(text: str) -> tuple[str, ...]:
    """The identifiers of ``text`` in order of appearance, each once (cached: every compaction
    looks at every carried message again)."""
    found: dict[str, int] = {}
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(1).strip().rstrip(".,;:")
            if len(value) >= 2 and value not in found:
                found[value] = match.start(1)
    return tuple(sorted(found, key=found.__getitem__))


def _snippet(text: str, item: str) -> str:
    position = text.find(item)
    start = max(0, position - SETTINGS.audit_snippet_chars)
    end = min(len(text), position + len(item) + SETTINGS.audit_snippet_chars)
    piece = " ".join(text[start:end].split())
    return ("…" if start else "") + piece + ("…" if end < len(text) else "")


def must_keep(carried: CarryOver) -> list[Item]:
    """Identifiers from every typed message carried so far, then the carry-over's facts."""
    items: dict[str, Item] = {}
    for turn, text in carried.users:
        for value in identifiers(text):
            if len(value) <= SETTINGS.audit_max_item_chars:
                items.setdefault(value.lower(), Item(value, turn, text))
    for fact in carried.facts():
        items.setdefault(fact.lower(), Item(fact, 0, fact))
    return list(items.values())


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()


def kept_share(summary: str, items: list[Item]) -> float:
    """The share of ``items`` that ``summary`` holds (1.0 when there are none)."""
    if not items:
        return 1.0
    held = _normal(summary)
    return sum(_normal(item.text) in held for item in items) / len(items)


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
    full = False
    for item in sorted(missing, key=lambda i: -i.turn):
        if _normal(item.text) in shown:
            restored += 1
            continue
        # Once a line does not fit, the rest are only counted as left out: counting is the costly part.
        line = f"- [turn {item.turn}] {_snippet(item.source, item.text)}" if item.turn else f"- {item.text}"
        cost = 0 if full else count(line)
        if full or used + cost > budget:
            full = True
            left.append(item.turn)
            continue
        lines.append(line)
        shown += " " + _normal(line)
        used += cost
        restored += 1
    if not lines:
        return AuditResult("", len(items), len(kept), 0)
    if left:
        lines.append(f"- ({counted(len(left), 'more item')} not listed; find them with {RECALL_TOOL})")
    return AuditResult("\n".join([header, *lines]), len(items), len(kept), restored)
