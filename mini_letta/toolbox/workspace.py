"""Path confinement: every path a tool touches must resolve inside the workspace."""

from __future__ import annotations

from pathlib import Path

from mini_letta.errors import ConfigError
from mini_letta.toolbox.outcome import ToolError


class Workspace:
    """The folder the agent works in, and the folders the user added (``--add-dir``, ``/add-dir``);
    tools may not read or write outside them."""

    def __init__(self, root: str | Path):
        resolved = Path(root).expanduser().resolve()
        if not resolved.is_dir():
            raise ConfigError(f"The workspace {root} is not a directory; start mini-letta in an existing folder.")
        self.root = resolved
        self.added: list[Path] = []

    def add(self, folder: str | Path) -> Path:
        """Let the tools read and write ``folder`` too; ConfigError if it is not a directory."""
        resolved = Path(folder).expanduser().resolve()
        if not resolved.is_dir():
            raise ConfigError(f"{folder} is not a directory; give an existing folder to add.")
        if not self.contains(resolved):
            self.added.append(resolved)
        return resolved

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
            added = f" or the folders added with /add-dir" if self.added else ""
            raise ToolError(f"{path} is outside the workspace {self.root}{added}; use a path inside it.")
        return resolved

    def resolve_anywhere(self, path: str) -> Path:
        """``path`` resolved as :meth:`resolve` does, but never refused for where it is (a read the
        user approved)."""
        try:
            candidate = Path(path).expanduser()
            return (candidate if candidate.is_absolute() else self.root / candidate).resolve()
        except (ValueError, OSError, RuntimeError) as exc:
            raise ToolError(f"{path!r} could not be resolved ({exc}).") from None

    def contains(self, resolved: Path) -> bool:
        return resolved.is_relative_to(self.root) or any(resolved.is_relative_to(f) for f in self.added)

    def root_of(self, resolved: Path) -> Path:
        """The workspace or added folder ``resolved`` is in (the workspace for one outside all)."""
        return next((f for f in self.added if resolved.is_relative_to(f) and not resolved.is_relative_to(self.root)),
                    self.root)

    def relative(self, resolved: Path) -> str:
        """The form of a resolved path shown to the model: relative to the workspace, absolute in an
        added folder (or anywhere else)."""
        if resolved.is_relative_to(self.root):
            return resolved.relative_to(self.root).as_posix() or "."
        return resolved.as_posix()
