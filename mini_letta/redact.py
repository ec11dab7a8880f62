"""Masking secrets before anything is written to disk.

Session files outlive the terminal they were written in and get pasted into bug reports, so a key
the user typed, or one a tool printed, must never reach them. Only the on-disk copy is masked:
callers pass a serialised copy and keep their objects untouched.
"""

from __future__ import annotations

import os
import re
from typing import Any

MASK = "[REDACTED]"

# Provider keys whose literal values are masked wherever they appear. Values shorter than this are
# left alone: local servers accept placeholders such as "ollama", and masking every occurrence of a
# common word would garble the transcript without protecting anything.
_KEY_ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
_MIN_LITERAL_LENGTH = 8

_NOT_TOKEN = r"(?<![A-Za-z0-9_-])"
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----", re.S), MASK),
    # Header values keep their name so a reader still sees what was sent.
    (re.compile(r"(?i)(\bauthorization\s*[:=]\s*[\"']?bearer\s+)[^\s\"'\\,;]+"), r"\1" + MASK),
    (re.compile(r"(?i)(\bx-api-key\s*[:=]\s*[\"']?)[^\s\"'\\,;]+"), r"\1" + MASK),
    # OpenAI (sk-..., sk-proj-...) and Anthropic (sk-ant-...) keys. Requiring a digit and 20 characters
    # keeps ordinary hyphenated words that happen to start with "sk-" readable.
    (re.compile(_NOT_TOKEN + r"sk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"), MASK),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), MASK),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), MASK),
    (re.compile(r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}"), MASK),
]


def _literal_secrets() -> list[str]:
    values = (os.environ.get(name, "").strip() for name in _KEY_ENV_VARS)
    return sorted({v for v in values if len(v) >= _MIN_LITERAL_LENGTH}, key=len, reverse=True)


def redact_text(text: str, literals: list[str] | None = None) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED]``."""
    for literal in _literal_secrets() if literals is None else literals:
        text = text.replace(literal, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact(value: Any, keep: frozenset[str] = frozenset()) -> Any:
    """A copy of a JSON-like value (str, list, dict, scalars) with secrets masked in every string.

    Values under a dict key in ``keep`` are copied as they are (base64 image data, where a chance
    match would corrupt the image and no secret is readable anyway).
    """
    literals = _literal_secrets()

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return redact_text(item, literals)
        if isinstance(item, dict):
            return {key: inner if key in keep else walk(inner) for key, inner in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(inner) for inner in item]
        return item

    return walk(value)
