"""Commands in a sandbox: bubblewrap keeps the file system read-only but the workspace, hides secrets,
cuts the network and kills the whole process tree with the command.

Modes (``--sandbox`` or ``"sandbox"`` in the data folder's ``settings.json``):

- ``workspace-write`` (the default where bubblewrap runs): the workspace and a private ``/tmp`` are
  writable, the rest of the file system read-only. The private ``/tmp`` is one folder of the host's
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

import dataclasses
import functools
import glob
import json
import os
import re
import atexit
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from mini_letta import config
from mini_letta.toolbox import disarm
from mini_letta.toolbox.host_secrets import SECRETS_IN_HOME, command_environment, host_sockets
from mini_letta.toolbox.shell import run_bash
from mini_letta.toolbox.netproxy import HostFilterProxy
from mini_letta.toolbox.outcome import ToolOutcome

MODES = ("workspace-write", "read-only", "off")
DEFAULT_MODE = "workspace-write"
SETTINGS_KEY = "sandbox"
ENV_MODE = "MINI_LETTA_SANDBOX"
INSTALL_HINT = "install bubblewrap (`apt install bubblewrap`, `dnf install bubblewrap`)"

# Inside the workspace: what changes what runs later, outside the sandbox (git hooks, git's config,
# mini-letta's own settings and hooks, MCP servers).
PROTECTED_IN_WORKSPACE = (".mini-letta", ".mcp.json", ".git/hooks", ".git/config", ".git/commondir")
# The workspace is walked for repositories once per session, over at most this many entries
# (~0.5 s on a loaded 2-core machine); repositories past them are not found.
MAX_ENTRIES_WALKED = 100_000
# Room kept in the output for the note that explains a refusal.
NOTE_CHARS = 700
# Folders scanned for .env files are listed, not walked: a huge folder costs at most this many entries.
MAX_ENTRIES_SCANNED = 2000
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


@dataclass(frozen=True)
class SandboxSettings:
    mode: str = DEFAULT_MODE
    network: bool = False
    hide: tuple[str, ...] = ()
    # Without the whole network, these hosts are reachable through a filtering proxy (netproxy.py).
    hosts: tuple[str, ...] = ()
    # Environment variables a command keeps although their names say they hold a credential.
    keep_env: tuple[str, ...] = ()


def load_settings(home: Path, mode: str | None = None, default: str = DEFAULT_MODE) -> SandboxSettings:
    """The ``"sandbox"`` entry of the data folder's settings.json (a mode name, or an object with
    ``mode``, ``network`` (true, false, or a list of host names, ``*.`` wildcards allowed), ``hide``
    and ``keep_env`` (names of credential variables commands get all the same));
    ``$MINI_LETTA_SANDBOX`` overrides its mode, and ``mode`` (from
    ``--sandbox``) both; ``default`` where none of them names one. Anything malformed is one notice
    and the default."""
    settings = SandboxSettings(default)
    path = Path(home) / "settings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None  # a missing file is normal; a broken one is reported by whoever owns the hooks in it
    entry = data.get(SETTINGS_KEY) if isinstance(data, dict) else None
    if isinstance(entry, str):
        entry = {"mode": entry}
    if isinstance(entry, dict):
        chosen, network, hide = entry.get("mode", default), entry.get("network", False), entry.get("hide", [])
        if chosen not in MODES:
            config.notice(f"Ignoring sandbox mode {chosen!r} in {path}: choose one of {', '.join(MODES)}.")
            chosen = default
        hosts: tuple[str, ...] = ()
        if isinstance(network, list) and network and all(isinstance(host, str) and host.strip() for host in network):
            network, hosts = False, tuple(host.strip() for host in network)
        elif not isinstance(network, bool):
            config.notice(f"Ignoring sandbox network {network!r} in {path}: it must be true, false or a list "
                          "of host names.")
            network = False
        if not (isinstance(hide, list) and all(isinstance(item, str) for item in hide)):
            config.notice(f"Ignoring the sandbox hide list in {path}: it must be a list of paths.")
            hide = []
        keep_env = entry.get("keep_env", [])
        if not (isinstance(keep_env, list) and all(isinstance(item, str) for item in keep_env)):
            config.notice(f"Ignoring the sandbox keep_env list in {path}: it must be a list of variable names.")
            keep_env = []
        settings = SandboxSettings(chosen, network, tuple(hide), hosts, tuple(keep_env))
    elif entry is not None:
        config.notice(f"Ignoring \"sandbox\" in {path}: give a mode ({', '.join(MODES)}) or an object "
                      '{"mode": …, "network": false, "hide": [paths]}.')
    from_env = os.environ.get(ENV_MODE, "").strip()
    if mode is None and from_env:
        if from_env in MODES:
            mode = from_env
        else:
            config.notice(f"Ignoring {ENV_MODE}={from_env!r}: choose one of {', '.join(MODES)}.")
    if mode is not None:
        if mode not in MODES:
            raise ValueError(f"--sandbox must be one of {', '.join(MODES)}, not {mode!r}.")
        settings = dataclasses.replace(settings, mode=mode)
    return settings


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


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _programs_under_tmp() -> list[Path]:
    """What commands run with that lives under /tmp, which is private inside: this interpreter's
    environment (a checkout with its venv in /tmp, as CI makes), the network bridge's folder and
    the PATH's folders. Shown
    read-only, or ``python``, ``pytest`` and the network bridge would not be found."""
    return _programs_under_tmp_for(os.environ.get("PATH", ""))


@functools.lru_cache(maxsize=8)
def _programs_under_tmp_for(path_variable: str) -> list[Path]:
    """:func:`_programs_under_tmp` for one value of PATH: resolving its folders cost 2-3 ms a
    command, a sixth of the sandbox's cost."""
    tmp = _real("/tmp")
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.abspath(__file__)),
                  *path_variable.split(os.pathsep)]
    found: dict[Path, None] = {}
    for candidate in candidates:
        if not candidate:
            continue
        real = _real(candidate)
        if real != tmp and _inside(real, tmp) and real.is_dir():
            found.setdefault(real)
    return [path for path in found if not any(other != path and _inside(path, other) for other in found)]


def _repositories_under(workspace: Path) -> list[Path]:
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
                            target = _pointed_to(path)
                            if target is not None and _inside(target, workspace) and target.is_dir():
                                found.setdefault(target)
                    elif entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                        stack.append(path)
        except OSError:
            continue
    outermost = [path for path in found if not any(other != path and _inside(path, other) for other in found)]
    return outermost + pointers


def _pointed_to(pointer: Path) -> Path | None:
    try:
        first = pointer.read_text(encoding="utf-8", errors="replace").partition("\n")[0].strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    return _real(pointer.parent / first[len("gitdir:"):].strip())


def _env_files(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for _, entry in zip(range(MAX_ENTRIES_SCANNED), entries)]
    except OSError:
        return []
    return [folder / name for name in names if name.startswith(".env")]


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
    _repositories: list[Path] | None = field(default=None, repr=False, compare=False)
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
            return "Sandbox: off (chosen); every command asks before it runs."
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
        home = _real(self.user_home or Path.home())
        # Hidden even inside the workspace (mini-letta started in the home folder): only a folder
        # that holds the workspace cannot be hidden from it.
        secrets = [Path(found) for name in SECRETS_IN_HOME for found in glob.glob(str(home / name))]
        secrets += host_sockets(os.environ)
        if self.data_folder is not None:
            secrets.append(_real(self.data_folder))
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
            wanted += _env_files(folder)
        hidden: dict[Path, None] = {}
        for path in secrets:
            real = _real(path)
            if real.exists() and not _inside(self.workspace, real):
                hidden.setdefault(real)
        for path in wanted:  # the workspace's own .env files are the user's work
            real = _real(path)
            if real.exists() and not _inside(self.workspace, real) and not _inside(real, self.workspace):
                hidden.setdefault(real)
        # A path inside a hidden folder is gone with it (and could not be mounted on inside it).
        folders = [path for path in hidden if path.is_dir()]
        return [path for path in hidden if not any(folder != path and _inside(path, folder) for folder in folders)]

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` as it runs inside bubblewrap."""
        ws = str(self.workspace)
        line = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", str(self.tmp_folder()), "/tmp"]
        exposed = _programs_under_tmp()
        for path in exposed:
            line += ["--ro-bind", str(path), str(path)]
        if self.mode == "workspace-write":
            line += ["--bind", ws, ws]
            git = self.workspace / ".git"
            if git.is_dir() and not git.is_symlink():
                line += ["--bind", str(git), str(git)]  # a mount point cannot be renamed or removed
            elif git.exists():
                line += ["--ro-bind", str(git), str(git)]  # a worktree's pointer to its git folder
            for name in PROTECTED_IN_WORKSPACE:
                path = self.workspace / name
                if path.exists() or path.is_symlink():
                    line += ["--ro-bind", str(path), str(path)]
            line += self._repository_mounts()
        else:
            line += ["--ro-bind", ws, ws]  # the workspace may be under /tmp, which is private inside
        for path in self.hidden_paths():
            if (_inside(path, Path("/tmp")) and not _inside(path, self.workspace)
                    and not any(_inside(path, folder) for folder in exposed)):
                continue  # the private /tmp already hides it
            if path.is_dir():
                line += ["--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                line += ["--ro-bind", "/dev/null", str(path)]
        line += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL", "--chdir", ws]
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

    def tmp_folder(self) -> Path:
        """The host folder every command of this session sees as ``/tmp``: made at the first
        command, kept between commands, deleted when the process exits (or by :meth:`remove_tmp`)."""
        if self._tmp is None or not self._tmp.is_dir():
            self._tmp = Path(tempfile.mkdtemp(prefix="mini-letta-tmp-", dir=_real("/tmp")))
            atexit.register(shutil.rmtree, self._tmp, True)
        return self._tmp

    def remove_tmp(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _repository_mounts(self) -> list[str]:
        """The git folders of the repositories that were under the workspace when the session's
        first command ran, read-only, and the ``.git`` files that point to them: their hooks and
        config cannot change, nor can they be renamed away or pointed elsewhere (one mount each,
        whatever they hold: the sandbox's cost grows with every mount). Those the session's
        commands create are disarmed afterwards instead (:mod:`disarm`)."""
        if self._repositories is None:
            self._repositories = _repositories_under(self.workspace)
        mounts = []
        for path in self._repositories:
            if (path.is_dir() or path.is_file()) and not path.is_symlink():  # one removed since cannot be mounted on
                mounts += ["--ro-bind", str(path), str(path)]
        return mounts

    # -- after the command ---------------------------------------------------------------------
    def absent_protected(self) -> list[Path]:
        """The protected paths that do not exist before a command (it must not create them)."""
        if self.mode != "workspace-write":
            return []
        return [self.workspace / name for name in PROTECTED_IN_WORKSPACE
                if not (self.workspace / name).exists() and not (self.workspace / name).is_symlink()
                and ((self.workspace / name).parent == self.workspace
                     or (self.workspace / name).parent.is_dir())]

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
            removed.append(str(path.relative_to(self.workspace)))
        return removed

    def explain(self, output: str, removed: list[str]) -> str:
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
                f"{'the workspace and ' if self.mode == 'workspace-write' else 'only '}{PRIVATE_TMP}, which is "
                f"kept between this session's commands; "
                f"{self._network_words()}; secrets hidden) and may have "
                f"been refused {'; '.join(reasons)}. If it needs that, call bash again with \"sandbox\": false "
                "to run it outside the sandbox: the user will be asked to approve it.]")

    def run(self, command: str, timeout: float, max_chars: int) -> ToolOutcome:
        """Run ``command`` inside the sandbox; a refusal in its output gets a note saying what to do."""
        absent = self.absent_protected()
        # Repositories the command creates or changes are disarmed by toolbox/disarm.py.
        repositories = disarm.RepositoryWatch.before(self.workspace) if self.mode == "workspace-write" else None
        try:
            # No tree walk: the PID namespace ends every process of the command with it.
            outcome = run_bash(command, self.workspace, timeout, max(0, max_chars - NOTE_CHARS), wrap=self.wrap,
                               env=command_environment(os.environ, self.settings.keep_env),
                               follow_tree=False)
        finally:
            removed = self.remove_created(absent)
            if repositories is not None:
                removed += repositories.disarm()
        note = self.explain(outcome.text, removed)
        if not note:
            return outcome
        return ToolOutcome(f"{outcome.text}\n{note}", is_error=outcome.is_error or bool(removed))
