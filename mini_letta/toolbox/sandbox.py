"""Commands in a sandbox: bubblewrap keeps the file system read-only but the workspace, hides secrets,
cuts the network and kills the whole process tree with the command.

Modes (``--sandbox`` or ``"sandbox"`` in the data folder's ``settings.json``):

- ``workspace-write`` (the default where bubblewrap runs): the workspace, the folders added with
  ``--add-dir`` / ``/add-dir`` (protected as the workspace is) and a private ``/tmp`` are writable, the rest of the file system read-only. The private ``/tmp`` is one folder of the host's
  (``/tmp/mini-letta-tmp-*``, mode 0700) that every command of the session sees as ``/tmp``, so a
  file one command writes there is there for the next; it is deleted when mini-letta exits;
- ``read-only``: the workspace is read-only too;
- ``off``: commands run as the user, as before (and each one asks).

In both sandboxed modes the data folder, the credential files of :data:`host_secrets.SECRETS_IN_HOME`
(``~/.ssh``, ``~/.aws``, ``~/.git-credentials``, ``~/.config/gh``...), ``.env*`` files near the
workspace (its parent folders, their sub-folders: sibling projects, and the home folder) and the
user's ``"hide"`` list are empty or unreadable inside; so are the host's sockets (``/run/user``,
``docker.sock``, the ssh and gpg agents, the D-Bus buses: :mod:`host_secrets`), and variables that
name a credential or point at an agent are not in the command's environment (but those of the
``"keep_env"`` list); there is no network unless ``"network": true``; inside the workspace, the files
that decide what runs later outside the sandbox (``.mini-letta/``, ``.mcp.json``, ``.git/hooks``,
``.git/config``, and the git folders of the repositories found under it at the session's first
command: vendored ones, submodules) are read-only, and ``.git`` itself cannot be renamed away (it is
a mount point); such a path the command creates where none was is removed afterwards. Processes run in their own PID
namespace with no capabilities, so root inside is confined too, nothing outside can be signalled,
and when the command ends or is killed, everything it started ends with it.

Only the user's own settings choose the mode: a repository's ``.mini-letta/settings.json`` cannot
weaken the sandbox it is confined by.
"""

from __future__ import annotations

import atexit
import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from mini_letta.settings import SETTINGS
from mini_letta.toolbox import disarm
from mini_letta.toolbox.host_secrets import SECRETS_IN_HOME, command_environment, host_sockets
from mini_letta.toolbox.netproxy import HostFilterProxy
from mini_letta.toolbox.outcome import ToolOutcome
from mini_letta.toolbox.sandbox_paths import (MAX_ENTRIES_SCANNED, PROTECTED_IN_WORKSPACE, env_files, inside,
                                              programs_under_tmp, real_path, repositories_under)
from mini_letta.toolbox.sandbox_settings import (DEFAULT_MODE, ENV_MODE, MODES, SETTINGS_KEY, SandboxSettings,
                                                 load_settings)
from mini_letta.toolbox.shell import run_bash

__all__ = ["DEFAULT_MODE", "ENV_MODE", "MODES", "PROTECTED_IN_WORKSPACE", "SETTINGS_KEY", "Sandbox",
           "SandboxSettings", "load_settings", "unavailable_reason"]

INSTALL_HINT = "install bubblewrap (`apt install bubblewrap`, `dnf install bubblewrap`)"
# The folders around the workspace are scanned for .env files at most this often (seconds): the scan
# costs ~10 ms, a third of the sandbox's cost per command. What vanished meanwhile is left out.
HIDDEN_PATHS_TTL = 30.0

# What a failing command prints when the sandbox stopped it, and what to tell the model about it.
_DENIALS = (
    (re.compile(r"Could not open a connection to your authentication agent|Error connecting to agent|"
                r"can't connect to the agent|no gpg-agent running|Cannot connect to the Docker daemon|"
                r"Failed to connect to (?:the )?bus|autolaunch (?:a )?D-?Bus|Could not connect to D-?Bus",
                re.IGNORECASE),
     "an agent, bus or daemon of the host (ssh-agent, gpg-agent, D-Bus, Docker): the sandbox hides their "
     "sockets and the variables that point at them"),
    (re.compile(r"Read-only file system|EROFS|\[Errno 30\]"),
     "a write outside what the sandbox lets it change (Read-only file system)"),
    (re.compile(r"Network is unreachable|Could not resolve host|Temporary failure in name resolution|"
                r"Name or service not known|getaddrinfo failed|No address associated with hostname|"
                r"Connection refused|Couldn't connect to server|Failed to connect to|\[Errno (101|111|-2|-3)\]",
                re.IGNORECASE),
     "a network connection (the sandbox has no network)"),
    (re.compile(r"is not an allowed host|tunnel failed, response 403|Tunnel connection failed: 403"),
     "a host that is not in the sandbox's allowed list (the \"network\" list in settings.json)"),
    (re.compile(r"Device or resource busy|\[Errno 16\]"),
     "moving or deleting a path the sandbox protects (Device or resource busy)"),
    (re.compile(r"No such process"),
     "a signal to a process outside the sandbox (it cannot see them: No such process)"),
    (re.compile(r"Permission denied|Operation not permitted|\[Errno (1|13)\]"),
     "an operation the sandbox does not allow or a file it hides (Permission denied / Operation not permitted)"),
)


# How the model and the user are told of /tmp inside the sandbox.
PRIVATE_TMP = "a private /tmp"
TMP_KEPT = "/tmp is this session's own: kept between its commands, deleted when mini-letta exits"


@functools.lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """Why no sandbox can run here (None when bubblewrap works); tried once per process."""
    if not sys.platform.startswith("linux"):
        return (f"commands cannot run in a sandbox on {sys.platform} yet (bubblewrap is Linux only; "
                "a macOS sandbox-exec profile is planned)")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return f"bubblewrap is not installed; {INSTALL_HINT}"
    try:
        probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--cap-drop", "ALL",
                                "true"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not start ({error})"
    if probe.returncode != 0:
        said = " ".join(probe.stderr.split())[:200]
        return (f"bubblewrap cannot create a sandbox here ({said}); unprivileged user namespaces may be "
                "disabled (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor rule for bwrap)")
    return None


@dataclass
class Sandbox:
    """How commands of one workspace run. ``wrap(argv)`` gives the confined command line."""

    workspace: Path
    settings: SandboxSettings = field(default_factory=SandboxSettings)
    data_folder: Path | None = None
    user_home: Path | None = None
    unavailable: str | None = None
    _hidden: tuple[float, list[Path]] | None = field(default=None, repr=False, compare=False)
    _proxy: HostFilterProxy | None = field(default=None, repr=False, compare=False)
    # The repositories under each writable folder at the session's first command there.
    _repositories: dict[Path, list[Path]] = field(default_factory=dict, repr=False, compare=False)
    _tmp: Path | None = field(default=None, repr=False, compare=False)

    @classmethod
    def create(cls, workspace: Path, settings: SandboxSettings, data_folder: Path) -> Sandbox:
        reason = unavailable_reason() if settings.mode != "off" else None
        return cls(Path(workspace).resolve(), settings, data_folder, unavailable=reason)

    @property
    def active(self) -> bool:
        return self.settings.mode != "off" and self.unavailable is None

    @property
    def mode(self) -> str:
        return self.settings.mode if self.active else "off"

    def status(self) -> str:
        """One line for ``/sandbox`` and the start-up notice."""
        if self.settings.mode == "off":
            return ("Sandbox: off (chosen): commands run unsandboxed, with your rights; every command asks "
                    "before it runs.")
        if self.unavailable:
            return f"Sandbox: unavailable: {self.unavailable}. Until then every command asks before it runs."
        writable = (f"the workspace and {PRIVATE_TMP}" if self.mode == "workspace-write" else f"only {PRIVATE_TMP}")
        network = self._network_words()
        return (f"Sandbox: {self.mode} ({writable} writable, the rest read-only; secrets hidden; {network}). "
                f"{TMP_KEPT}. Commands run without asking; one the model asks to run outside the sandbox always asks.")

    def _network_words(self) -> str:
        if self.settings.network:
            return "network allowed"
        if self.settings.hosts:
            return f"network only to {', '.join(self.settings.hosts)} (through a proxy)"
        return "no network"

    # -- the command line ----------------------------------------------------------------------
    def hidden_paths(self) -> list[Path]:
        """What is made empty or unreadable inside: existing paths only, never the workspace."""
        now = time.monotonic()
        if self._hidden is None or now - self._hidden[0] > HIDDEN_PATHS_TTL:
            self._hidden = (now, self._find_hidden())
        return [path for path in self._hidden[1] if path.exists()]

    def _find_hidden(self) -> list[Path]:
        home = real_path(self.user_home or Path.home())
        # Hidden even inside the workspace (mini-letta started in the home folder): only a folder
        # that holds the workspace cannot be hidden from it.
        secrets = [Path(found) for name in SECRETS_IN_HOME for found in glob.glob(str(home / name))]
        secrets += host_sockets(os.environ)
        if self.data_folder is not None:
            secrets.append(real_path(self.data_folder))
        for pattern in self.settings.hide:
            secrets += [Path(found) for found in glob.glob(os.path.expanduser(pattern))]
        wanted = []
        # .env files of the folders around the workspace: its parents, their sub-folders, and home.
        folders = {home}
        for parent in self.workspace.parents:
            folders.add(parent)
            try:
                with os.scandir(parent) as entries:
                    folders.update(Path(entry.path) for _, entry in zip(range(MAX_ENTRIES_SCANNED), entries)
                                   if entry.is_dir(follow_symlinks=False))
            except OSError:
                pass
        for folder in folders:
            wanted += env_files(folder)
        hidden: dict[Path, None] = {}
        for path in secrets:
            real = real_path(path)
            if real.exists() and not inside(self.workspace, real):
                hidden.setdefault(real)
        for path in wanted:  # the workspace's own .env files are the user's work
            real = real_path(path)
            if real.exists() and not inside(self.workspace, real) and not inside(real, self.workspace):
                hidden.setdefault(real)
        # A path inside a hidden folder is gone with it (and could not be mounted on inside it).
        folders = [path for path in hidden if path.is_dir()]
        return [path for path in hidden if not any(folder != path and inside(path, folder) for folder in folders)]

    def wrap(self, argv: list[str], added: tuple[Path, ...] = (), read_only: list[Path] | None = None) -> list[str]:
        """``argv`` as it runs inside bubblewrap; ``added``: the folders added with ``--add-dir``,
        bound as the workspace is; ``read_only``: :meth:`read_only_mounts` (found again if None)."""
        line = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", str(self.tmp_folder()), "/tmp"]
        exposed = programs_under_tmp()
        for path in exposed:
            line += ["--ro-bind", str(path), str(path)]
        roots = self._roots(added)
        if self.mode == "workspace-write":
            for root in roots:  # the workspace last: its protections win over a folder added around it
                line += ["--bind", str(root), str(root)]
                git = root / ".git"
                if git.is_dir() and not git.is_symlink():
                    line += ["--bind", str(git), str(git)]  # a mount point cannot be renamed or removed
                elif git.exists():
                    line += ["--ro-bind", str(git), str(git)]  # a worktree's pointer to its git folder
            for path in self.read_only_mounts(added) if read_only is None else read_only:
                line += ["--ro-bind", str(path), str(path)]
        else:
            for root in roots:  # the workspace may be under /tmp, which is private inside
                line += ["--ro-bind", str(root), str(root)]
        for path in self.hidden_paths():
            if (inside(path, Path("/tmp")) and not any(inside(path, root) for root in roots)
                    and not any(inside(path, folder) for folder in exposed)):
                continue  # the private /tmp already hides it
            if path.is_dir():
                line += ["--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                line += ["--ro-bind", "/dev/null", str(path)]
        line += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL",
                 "--chdir", str(self.workspace)]
        if self.settings.network:
            return line + ["--", *argv]
        line.append("--unshare-net")
        if not self.settings.hosts:
            return line + ["--", *argv]
        if self._proxy is None:
            self._proxy = HostFilterProxy(self.settings.hosts).start()
        bridge = str(Path(__file__).with_name("netbridge.py"))
        return line + ["--ro-bind", self._proxy.folder, self._proxy.folder,
                       "--", sys.executable, "-I", bridge, self._proxy.socket_path, "--", *argv]

    def _roots(self, added: tuple[Path, ...]) -> list[Path]:
        """The folders commands may write in workspace-write mode: the added ones (but those inside
        the workspace or another added folder: bound with it), then the workspace."""
        folders = [Path(folder) for folder in added]
        folders = [folder for folder in folders if not inside(folder, self.workspace)
                   and not any(other != folder and inside(folder, other) for other in folders)]
        return [*dict.fromkeys(folders), self.workspace]

    def tmp_folder(self) -> Path:
        """The host folder every command of this session sees as ``/tmp``: made at the first
        command, kept between commands, deleted when the process exits (or by :meth:`remove_tmp`)."""
        if self._tmp is None or not self._tmp.is_dir():
            self._tmp = Path(tempfile.mkdtemp(prefix="mini-letta-tmp-", dir=real_path("/tmp")))
            atexit.register(shutil.rmtree, self._tmp, True)
        return self._tmp

    def remove_tmp(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def read_only_mounts(self, added: tuple[Path, ...] = ()) -> list[Path]:
        """What is mounted read-only inside the writable folders (workspace-write mode): the
        protected paths that exist (:data:`PROTECTED_IN_WORKSPACE`), and the git folders of the
        repositories that were under each folder when the session's first command ran, with the
        ``.git`` files that point to them. Their hooks and config cannot change, nor can they be
        renamed away or pointed elsewhere (one mount each, whatever they hold: the sandbox's cost
        grows with every mount); nor need the clean-up after the command read them
        (:class:`disarm.Fixed`). The repositories the session's commands create are disarmed
        afterwards instead (:mod:`disarm`)."""
        if self.mode != "workspace-write":
            return []
        mounts = []
        for root in self._roots(added):
            found = [root / name for name in PROTECTED_IN_WORKSPACE
                     if (root / name).exists() or (root / name).is_symlink()]
            if root not in self._repositories:
                self._repositories[root] = repositories_under(root)
            # One removed since cannot be mounted on.
            found += [path for path in self._repositories[root]
                      if (path.is_dir() or path.is_file()) and not path.is_symlink()]
            # A folder added around the workspace: what is inside the workspace is its own (bound later).
            mounts += [path for path in found if root == self.workspace or not inside(path, self.workspace)]
        return mounts

    @staticmethod
    def _writable_words(added: tuple[Path, ...]) -> str:
        return f"the workspace, {', '.join(map(str, added))} and " if added else "the workspace and "

    # -- after the command ---------------------------------------------------------------------
    def absent_protected(self, added: tuple[Path, ...] = ()) -> list[Path]:
        """The protected paths that do not exist before a command (it must not create them)."""
        if self.mode != "workspace-write":
            return []
        return [root / name for root in self._roots(added) for name in PROTECTED_IN_WORKSPACE
                if not (root / name).exists() and not (root / name).is_symlink()
                and ((root / name).parent == root or (root / name).parent.is_dir())]

    def remove_created(self, absent: list[Path]) -> list[str]:
        """Remove what the command created among ``absent``; their workspace-relative names."""
        removed = []
        for path in absent:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif os.path.lexists(path):  # a file, a link, a FIFO (`mkfifo .mcp.json`), a socket
                path.unlink()
            else:
                continue
            removed.append(self._name(path))
        return removed

    def _name(self, path: Path) -> str:
        """``path`` as the model is told of it: workspace-relative, else whole (an added folder's)."""
        return str(path.relative_to(self.workspace)) if inside(path, self.workspace) else str(path)

    def explain(self, output: str, removed: list[str], added: tuple[Path, ...] = ()) -> str:
        """The note the model reads when the output shows the sandbox refused something, else ""."""
        reasons = [reason for pattern, reason in _DENIALS
                   if pattern.search(output) and not (self.settings.network and "network" in reason)]
        hidden = [str(path) for path in self.hidden_paths() if str(path) in output]
        if hidden:
            reasons.append(f"reading {', '.join(hidden[:3])}, which the sandbox hides")
        if removed:
            reasons.append(f"creating {', '.join(removed)}, which decide what runs outside the sandbox; "
                           "the sandbox removed them")
        if not reasons:
            return ""
        return (f"[sandbox ({self.mode}): this command ran in a sandbox (writable: "
                f"{self._writable_words(added) if self.mode == 'workspace-write' else 'only '}{PRIVATE_TMP}, which is "
                f"kept between this session's commands; "
                f"{self._network_words()}; secrets hidden) and may have "
                f"been refused {'; '.join(reasons)}. If it needs that, call bash again with \"sandbox\": false "
                "to run it outside the sandbox: the user will be asked to approve it.]")

    def prepare(self, added: tuple[Path, ...] = ()) -> Confinement:
        """What one command needs before it starts and after it ends (``Confinement.finish``): the
        protected paths absent now, the read-only mounts, the repositories watched."""
        absent = self.absent_protected(added)
        read_only = self.read_only_mounts(added)
        # Repositories the command creates or changes are disarmed by toolbox/disarm.py; what is
        # mounted read-only cannot change and is not read.
        watches = ([disarm.RepositoryWatch.before(root, read_only) for root in self._roots(added)]
                   if self.mode == "workspace-write" else [])
        return Confinement(self, added, read_only, absent, watches)

    def run(self, command: str, timeout: float, max_chars: int, added: tuple[Path, ...] = ()) -> ToolOutcome:
        """Run ``command`` inside the sandbox (``added``: the folders added with ``--add-dir``, writable
        as the workspace is); a refusal in its output gets a note saying what to do."""
        confined = self.prepare(added)
        try:
            # No tree walk: the PID namespace ends every process of the command with it.
            outcome = run_bash(command, self.workspace, timeout, max(0, max_chars - SETTINGS.tools.sandbox_note_chars),
                               wrap=confined.wrap, env=confined.env(), follow_tree=False)
        finally:
            removed = confined.finish()
        note = self.explain(outcome.text, removed, added)
        if not note:
            return outcome
        return ToolOutcome(f"{outcome.text}\n{note}", is_error=outcome.is_error or bool(removed))


@dataclass
class Confinement:
    """One command's sandbox: ``wrap`` its command line, ``env()`` its environment, ``finish()``
    once it has ended (a foreground command at its return, a background one when it ends or is
    killed): removes the protected paths it created, disarms the repositories it made or changed,
    and returns their names."""

    sandbox: Sandbox
    added: tuple[Path, ...]
    read_only: list[Path]
    absent: list[Path]
    watches: list

    def wrap(self, argv: list[str]) -> list[str]:
        return self.sandbox.wrap(argv, self.added, self.read_only)

    def env(self) -> dict[str, str]:
        return command_environment(os.environ, self.sandbox.settings.keep_env)

    def finish(self) -> list[str]:
        removed = self.sandbox.remove_created(self.absent)
        for watch in self.watches:
            names = watch.disarm()
            removed += names if watch.workspace == self.sandbox.workspace else [f"{watch.workspace}/{n}" for n in names]
        return removed
