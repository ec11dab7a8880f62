"""Typed errors. Each carries a message a person can act on; the CLI prints it without a traceback."""

from __future__ import annotations

from mini_letta.trust.urls import mask_userinfo


class MiniLettaError(Exception):
    """Base for every error the user can cause or meet; ``str(err)`` is the one-line message, with
    the userinfo of any URL in it masked (a base URL may carry ``user:password@``), wherever it is shown."""

    def __str__(self) -> str:
        return mask_userinfo(super().__str__())


class ConfigError(MiniLettaError):
    """Bad command-line options or configuration."""


class ProviderError(MiniLettaError):
    """A provider call failed in a way the agent cannot repair by itself."""

    def __init__(self, message: str, *, provider: str = "", status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.retryable = retryable


class StreamBrokenError(ProviderError):
    """The reply's stream broke off after it began (the connection dropped, an event was not
    readable): what arrived is kept, marked as a ``cut`` reply (mini_letta/endings.py)."""


class AuthenticationError(ProviderError):
    """The key was missing, wrong or lacks permission."""


class ContextOverflowError(ProviderError):
    """The provider rejected the request as longer than the model's context window.

    ``limit`` is the window the provider named in its message, when it named one; ``actual`` is the
    size it said the request had.
    """

    def __init__(self, message: str, *, provider: str = "", status: int | None = None,
                 limit: int | None = None, actual: int | None = None):
        super().__init__(message, provider=provider, status=status)
        self.limit = limit
        self.actual = actual


class FloorTooHighError(MiniLettaError):
    """System prompt, core memory and tool schemas alone do not fit the context window."""


class ContextFullError(MiniLettaError):
    """The context is full and compaction cannot (or may not) make room; the turn ends here.

    ``reason`` says why, in one word (``-p --output-format json`` reports it as ``stopped``):
    ``context_full`` (no room even after compacting, or compaction is off), ``no_progress`` (the
    progress guard: nothing new since the last compaction, so none ran), ``overflow_retries`` (the
    provider kept rejecting after this turn's overflow compactions), ``breaker`` (automatic
    compaction ran and failed too often in a row), ``nothing_to_compact``, ``not_smaller``.
    """

    def __init__(self, message: str, *, reason: str = "context_full"):
        super().__init__(message)
        self.reason = reason


class SessionError(MiniLettaError):
    """A session could not be found, read or written."""


class PromptBlocked(MiniLettaError):
    """A UserPromptSubmit hook blocked the message: it was not sent nor kept; ``str()`` says why."""
