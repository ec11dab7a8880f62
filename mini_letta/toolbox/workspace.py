"""Path confinement: every path a tool touches must resolve inside the workspace."""

from __future__ import annotations

from pathlib import Path

from mini_letta.errors import ConfigError
from mini_letta.toolbox.outcome import ToolError


class Workspace:
    """The folder the agent works in; tools may not read or write outside it."""

    def __init__(self, root: str | Path):
        resolved = Path(root).expanduser().resolve()
        if not resolved.is_dir():
            raise ConfigError(f"The workspace {root} is not a directory; start mini-letta in an existing folder.")
        self.root = resolved

    def resolve(self, path: str) -> Path:
        """``path`` (relative to the root, or absolute) with symlinks followed; refused if outside."""
        try:
            candidate = Path(path).expanduser()
            if not candidate.is_absolute():
                candidate = self.root / candidate
            resolved = candidate.resolve()
        except ValueError as exc:  # e.g. an embedded NUL character
            raise ToolError(f"{path!r} is not a valid path ({exc}).") from None
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
            raise ToolError(f"{path} could not be resolved ({exc}).") from None
        if not self.contains(resolved):
            raise ToolError(f"{path} is outside the workspace {self.root}; use a path inside it.")
        return resolved

    def contains(self, resolved: Path) -> bool:
        return resolved.is_relative_to(self.root)

    def relative(self, resolved: Path) -> str:
        """The workspace-relative form of a resolved path, as shown to the model."""
        return resolved.relative_to(self.root).as_posix() or "."
