"""Repositories a sandboxed command leaves behind, made unable to run programs outside the sandbox.

A command inside the sandbox may create or change a git repository under the workspace; the user's
next ``git`` (and ours) runs outside the sandbox, with the user's rights. ``RepositoryWatch.before``
looks at the workspace before a command, ``RepositoryWatch.disarm`` afterwards removes what the
command left that would make git run a program, and names it for the model.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

# Settings in a git config that make git run a program (git-config(1)), and includes, which could
# bring them in from elsewhere: a repository a sandboxed command creates must not carry them out.
_RUNS_A_PROGRAM = re.compile(
    r"^\s*(hookspath|fsmonitor|sshcommand|editor|pager|askpass|helper|external|clean|smudge|process|textconv|"
    r"driver|program|path|cmd|tool)\s*=.*$|^\s*[\w.-]+\s*=\s*!.*$", re.IGNORECASE | re.MULTILINE)


def disarm_repository(git: Path) -> list[str]:
    """Hooks (other than git's ``*.sample`` files) and program-running config settings of a
    repository a sandboxed command just created, removed; what was removed, for the model."""
    removed = []
    hooks = git / "hooks"
    if hooks.is_dir() and not hooks.is_symlink():
        for hook in sorted(hooks.iterdir()):
            if not hook.name.endswith(".sample"):
                shutil.rmtree(hook) if hook.is_dir() and not hook.is_symlink() else hook.unlink()
                removed.append(f".git/hooks/{hook.name}")
    elif hooks.is_symlink():
        hooks.unlink()
        removed.append(".git/hooks")
    config_file = git / "config"
    if config_file.is_symlink():
        config_file.unlink()
        removed.append(".git/config")
    elif config_file.is_file():
        text = config_file.read_text(encoding="utf-8", errors="replace")
        kept = _RUNS_A_PROGRAM.sub("", text)
        if kept != text:
            config_file.write_text(kept, encoding="utf-8")
            removed += [f".git/config: {match.group(0).strip()}" for match in _RUNS_A_PROGRAM.finditer(text)]
    return removed


@dataclass
class RepositoryWatch:
    """What the workspace held before a command, to find the repositories it created or changed."""

    workspace: Path
    had_git: bool

    @classmethod
    def before(cls, workspace: Path) -> RepositoryWatch:
        git = Path(workspace) / ".git"
        return cls(Path(workspace), git.exists() or git.is_symlink())

    def disarm(self) -> list[str]:
        """Disarm what the command created; what was removed, workspace-relative, for the model."""
        git = self.workspace / ".git"
        if self.had_git:
            return []
        if git.is_symlink() or git.is_file():
            git.unlink()  # a pointer to a git folder elsewhere, where hooks could wait
            return [".git"]
        return disarm_repository(git) if git.is_dir() else []
