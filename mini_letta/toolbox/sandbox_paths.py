"""What the sandbox's command line is made of, found on the host: the programs that live under
``/tmp`` (private inside), the repositories under the workspace whose git folders are mounted
read-only, and the ``.env`` files around it. :mod:`sandbox` builds the bubblewrap line from them.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

# Inside the workspace: what changes what runs later, outside the sandbox (git hooks, git's config,
# mini-letta's own settings and hooks, MCP servers).
PROTECTED_IN_WORKSPACE = (".mini-letta", ".mcp.json", ".git/hooks", ".git/config", ".git/commondir")
# The workspace is walked for repositories once per session, over at most this many entries
# (~0.5 s on a loaded 2-core machine); repositories past them are not found.
MAX_ENTRIES_WALKED = 100_000
# Folders scanned for .env files are listed, not walked: a huge folder costs at most this many entries.
MAX_ENTRIES_SCANNED = 2000


def real_path(path: Path | str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def programs_under_tmp() -> list[Path]:
    """What commands run with that lives under /tmp, which is private inside: this interpreter's
    environment (a checkout with its venv in /tmp, as CI makes), the network bridge's folder and
    the PATH's folders. Shown
    read-only, or ``python``, ``pytest`` and the network bridge would not be found."""
    return programs_under_tmp_for(os.environ.get("PATH", ""))


@functools.lru_cache(maxsize=8)
def programs_under_tmp_for(path_variable: str) -> list[Path]:
    """:func:`programs_under_tmp` for one value of PATH: resolving its folders cost 2-3 ms a
    command, a sixth of the sandbox's cost."""
    tmp = real_path("/tmp")
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.abspath(__file__)),
                  *path_variable.split(os.pathsep)]
    found: dict[Path, None] = {}
    for candidate in candidates:
        if not candidate:
            continue
        real = real_path(candidate)
        if real != tmp and inside(real, tmp) and real.is_dir():
            found.setdefault(real)
    return [path for path in found if not any(other != path and inside(path, other) for other in found)]


def repositories_under(workspace: Path) -> list[Path]:
    """The git folders of the repositories under ``workspace``, outermost only: the workspace's
    own ``.git/modules`` (every submodule's), nested ``.git`` folders (vendored repositories) and
    the folders ``.git`` files point to inside the workspace; then those ``.git`` files (a
    submodule's ``gitdir:`` line, which the superproject's ``git status`` follows)."""
    own = workspace / ".git"
    found: dict[Path, None] = {}
    pointers: list[Path] = []
    if (own / "modules").is_dir() and not (own / "modules").is_symlink():
        found.setdefault(own / "modules")
    stack, left = [workspace], MAX_ENTRIES_WALKED
    while stack and left > 0:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    left -= 1
                    path = Path(entry.path)
                    if entry.name == ".git" and path != own:
                        if entry.is_dir(follow_symlinks=False):
                            found.setdefault(path)
                        elif entry.is_file(follow_symlinks=False):
                            pointers.append(path)
                            target = pointed_to(path)
                            if target is not None and inside(target, workspace) and target.is_dir():
                                found.setdefault(target)
                    elif entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                        stack.append(path)
        except OSError:
            continue
    outermost = [path for path in found if not any(other != path and inside(path, other) for other in found)]
    return outermost + pointers


def pointed_to(pointer: Path) -> Path | None:
    try:
        first = pointer.read_text(encoding="utf-8", errors="replace").partition("\n")[0].strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    return real_path(pointer.parent / first[len("gitdir:"):].strip())


def env_files(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for _, entry in zip(range(MAX_ENTRIES_SCANNED), entries)]
    except OSError:
        return []
    return [folder / name for name in names if name.startswith(".env")]
