"""Glob patterns as the model writes them: braces expanded, each alternative split into the
literal folder it starts in and a regex for the rest (``**`` any depth, ``*`` within a name)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


def expand_braces(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` → ``*.ts``, ``*.tsx`` (models write this; fnmatch does not)."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[:match.start()], pattern[match.end():]
    return [p for choice in match.group(1).split(",") for p in expand_braces(head + choice + tail)]


def _is_magic(segment: str) -> bool:
    return any(c in segment for c in "*?[")


def _segment_regex(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := segment.find("]", i + 2)) != -1:
            body = segment[i + 1:end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _glob_regex(segments: list[str]) -> str:
    parts = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    return "".join(parts)


@dataclass
class GlobPlan:
    """One brace alternative of a glob: the literal folder it starts in, and the rest as a regex."""

    prefix: str
    rest: list[str]
    regex: re.Pattern[str] | None

    @classmethod
    def of(cls, pattern: str) -> GlobPlan:
        segments = [s for s in pattern.split("/") if s not in ("", ".")]
        if pattern.startswith("/"):
            segments[0:0] = ["/"]
        literal = 0
        while literal < len(segments) and not _is_magic(segments[literal]):
            literal += 1
        rest = segments[literal:]
        prefix = os.path.join(*segments[:literal]) if literal else "."
        return cls(prefix, rest, re.compile(_glob_regex(rest)) if rest else None)

    def named(self) -> set[str]:
        """The folders and names it spells out: a search enters them even if it skips them otherwise."""
        return {s for s in [*Path(self.prefix).parts, *self.rest] if not _is_magic(s)}

    def basename_glob(self) -> str | None:
        last = self.rest[-1] if self.rest else ""
        return None if last in ("", "**") or "[" in last else last

    def matches(self, rel_to_prefix: str) -> bool:
        return self.regex is not None and self.regex.fullmatch(rel_to_prefix) is not None

    def covers(self, rel: str) -> bool:
        """Whether a workspace-relative path matches."""
        if self.prefix == ".":
            return self.matches(rel)
        return rel.startswith(self.prefix + "/") and self.matches(rel[len(self.prefix) + 1:])
