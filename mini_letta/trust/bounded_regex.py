"""Regular expressions chosen by a model, matched in linear time.

Python's ``re`` backtracks: ``(x+x+)+y`` against a line of x's runs for ever, and a thread cannot
be interrupted. RE2 (``google-re2``) guarantees time linear in the text, at the price of
back-references and look-arounds, which a search rarely needs; the error says so when one is used.
ripgrep uses the same kind of engine, so ``grep`` and ``conversation_search`` accept the same
patterns.
"""

from __future__ import annotations

from typing import Any, Protocol

HINT = "escape ( ) [ ] . * + ? with \\"


class BadPattern(ValueError):
    """The pattern cannot be compiled; the message is meant for the model."""


class Matcher(Protocol):
    def search(self, text: str) -> Any: ...

    def finditer(self, text: str) -> Any: ...


def compile_bounded(pattern: str, *, ignore_case: bool = False, within_lines: bool = False) -> Matcher:
    """``pattern`` compiled by RE2; ``within_lines``: no match crosses a newline (as in grep), so a
    whole file can be searched in one call. Raises :class:`BadPattern` with a sentence for the
    model, or ``ImportError`` where google-re2 has no wheel (the caller then says regex search is
    off)."""
    import re2  # imported on first use: a search is not made at every start

    options = re2.Options()
    options.log_errors = False  # RE2 would print parse errors on the terminal
    options.case_sensitive = not ignore_case
    options.never_nl = within_lines
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        unsupported = "perl operator" in detail or any(f"\\{d}" in detail for d in "123456789")
        extra = (" (back-references and look-arounds are not supported: the engine runs in linear time)"
                 if unsupported else "")
        raise BadPattern(f"invalid regular expression {pattern!r}: {detail}{extra}; {HINT}.") from None
