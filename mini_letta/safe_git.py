"""git as mini-letta runs it: reading the workspace's repositories without running their programs.

A repository's config and hooks are files in the workspace, which a command (or a cloned project)
may have written: run plainly, ``git add`` or ``git ls-files`` runs the program its
``core.fsmonitor`` names, ``git add`` its ``post-index-change`` hook and the clean filters its
config defines, and inside each nested repository or submodule a ``git status`` with that
repository's settings. Every git command mini-letta runs goes through ``run``, which turns off:

- hooks (``core.hooksPath=/dev/null``) and the file-system monitor (``core.fsmonitor=false``);
- the clean/smudge filters the repository's config (or a file it includes) defines
  (``filter.<name>.clean``/``smudge``/``process`` set empty, ``required`` false), so that no
  ``.gitattributes`` line can start one; ``core.attributesFile=/dev/null``;
- external diff programs and textconv (``diff.external`` empty, ``--no-ext-diff --no-textconv``
  where a command takes them);
- recursion into submodules (``submodule.recurse=false``), the pager (``core.pager=cat``), the editor
  (``core.editor=false``), every transport (``protocol.allow=never``: no ``core.sshCommand``,
  ``remote.*.uploadpack``, remote helpers, and no credential helper or password prompt; a partial
  clone's missing object is an error, not a fetch) and index writes that only speed git up
  (``GIT_OPTIONAL_LOCKS=0``, as ``--no-optional-locks``);
- the system config (``GIT_CONFIG_NOSYSTEM``) and, unless ``user_config``, the user's global one
  (``GIT_CONFIG_GLOBAL=/dev/null``), prompts (``GIT_TERMINAL_PROMPT=0``, no askpass) and the locale
  (``LC_ALL=C``: the callers read git's messages).

Aliases need nothing: git never lets an alias replace one of its own commands, and ours call no other.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# Given as GIT_CONFIG_COUNT/KEY_n/VALUE_n (any key, even a filter name with "=" in it), which git
# applies to every git it starts too (the status it runs inside a nested repository or submodule).
SAFE_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.attributesFile", os.devnull),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("diff.external", ""),
    ("submodule.recurse", "false"),
    ("protocol.allow", "never"),
    ("credential.helper", ""),
)
_FILTER_KEYS = ("clean", "smudge", "process")
SAFE_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",  # --no-optional-locks
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_EDITOR": "false",
    "GIT_PAGER": "cat",
    "GIT_NO_LAZY_FETCH": "1",  # git 2.44 and later; older ones are stopped by protocol.allow
    "LC_ALL": "C",
}
# What would make our git read another repository, config or program than the ones named here.
_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
            "GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF",
            "GIT_PROXY_COMMAND", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_ATTR_SOURCE")


def environment(user_config: bool = False, filters: tuple[str, ...] = (),
                extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a git that runs none of the workspace's programs; ``filters``: the names
    of the filters its config defines (``defined_filters``), turned off too."""
    env = {name: value for name, value in os.environ.items()
           if name not in _DROPPED and not name.startswith("GIT_CONFIG_KEY_") and not name.startswith("GIT_CONFIG_VALUE_")}
    env.update(SAFE_ENV)
    if not user_config:
        env["GIT_CONFIG_GLOBAL"] = os.devnull
    pairs = list(SAFE_CONFIG)
    for name in filters:
        pairs += [(f"filter.{name}.{key}", "") for key in _FILTER_KEYS] + [(f"filter.{name}.required", "false")]
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for number, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{number}"], env[f"GIT_CONFIG_VALUE_{number}"] = key, value
    env.update(extra or {})
    return env


def run(cwd: Path, *args: str, env: dict[str, str] | None = None, data: bytes | None = None,
        user_config: bool = False, filters: tuple[str, ...] = (),
        timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
    """``git ARGS`` in ``cwd`` with every program the workspace names turned off (see above).
    Raises OSError when git cannot start and TimeoutExpired past ``timeout``."""
    return subprocess.run(["git", *args], cwd=cwd, env=environment(user_config, filters, env),
                          input=data, capture_output=True, timeout=timeout, check=False)


def defined_filters(cwd: Path) -> tuple[tuple[str, ...], list[Path]]:
    """The filter names the config of the repository at ``cwd`` defines (its includes too), and the
    files that config was read from (to know when to look again)."""
    done = run(cwd, "config", "--show-origin", "--null", "--list")
    if done.returncode != 0:
        return (), []
    names: dict[str, None] = {}
    origins: dict[Path, None] = {}
    fields = done.stdout.split(b"\0")
    for origin, entry in zip(fields[0::2], fields[1::2]):
        key = entry.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        if origin.startswith(b"file:"):
            origins.setdefault(Path(cwd) / os.fsdecode(origin[5:]))  # relative to cwd, as git prints it
        section, _, rest = key.partition(".")
        name, _, variable = rest.rpartition(".")
        if section.lower() == "filter" and name and variable.lower() in (*_FILTER_KEYS, "required"):
            names.setdefault(name)
    return tuple(names), list(origins)
