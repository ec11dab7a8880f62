"""What of the host a sandboxed command must not reach: credential files, the sockets of agents,
buses and daemons, and credentials in the environment.

``--unshare-net`` cuts the network, but a unix socket is a file: inside the sandbox,
``SSH_AUTH_SOCK=… ssh-add -l`` would list the user's keys and use them, a D-Bus session bus or
``docker.sock`` would run programs outside. So the sockets are covered (:func:`host_sockets`), the
variables that point at them and those whose names say they hold a credential are left out of the
command's environment (:func:`command_environment`), and the files tools keep logins in are
hidden with the rest (:data:`SECRETS_IN_HOME`).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import unquote

# In the home folder: keys, logins and tokens of ssh, gpg, cloud CLIs, git, GitHub's gh, PyPI, npm,
# cargo and kubectl (globs allowed).
SECRETS_IN_HOME = (
    ".ssh", ".aws", ".gnupg", ".config/gcloud", ".netrc", ".docker/config.json", ".git-credentials",
    ".config/git/credentials", ".config/gh", ".pypirc", ".npmrc", ".cargo/credentials*", ".kube",
)
# Sockets and folders of sockets in fixed places: every user's runtime folder (the session bus, the
# gpg and ssh agents, systemd --user, pulseaudio...), Docker's socket.
HOST_SOCKETS = ("/run/user", "/run/docker.sock", "/var/run/docker.sock")
# Folders whose sockets are covered wherever in them they are (the system bus, systemd's private
# socket, containerd, podman...), walked to this depth, at most MAX_SCANNED entries.
SOCKET_FOLDERS = ("/run", "/var/run")
SOCKET_DEPTH = 4
MAX_SCANNED = 2000
# Variables that point at an agent, a bus or a daemon; left out of a command's environment.
POINTERS = ("SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST")
# A name that says it holds a credential: OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY,
# PGPASSWORD, GOOGLE_APPLICATION_CREDENTIALS...
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def secret_variables(environ: Mapping[str, str], keep: Iterable[str] = ()) -> list[str]:
    """The names in ``environ`` a sandboxed command does not get, but those in ``keep``."""
    kept = set(keep)
    return sorted(name for name in environ
                  if name not in kept and (name in POINTERS or _SECRET_NAME.search(name)))


def command_environment(environ: Mapping[str, str], keep: Iterable[str] = ()) -> dict[str, str]:
    """``environ`` without :func:`secret_variables`. It is bubblewrap's own environment too:
    inside, ``/proc/1/environ`` is bubblewrap's, so ``--unsetenv`` would not hide anything."""
    left_out = set(secret_variables(environ, keep))
    return {name: value for name, value in environ.items() if name not in left_out}


def host_sockets(environ: Mapping[str, str]) -> list[Path]:
    """Sockets (and folders of them) a sandboxed command must not reach; existing ones only."""
    found = [Path(path) for path in HOST_SOCKETS]
    found += _named_sockets(environ)
    found += _gpg_sockets()
    for folder in dict.fromkeys(os.path.realpath(folder) for folder in SOCKET_FOLDERS):
        found += _sockets_under(Path(folder))
    return [path for path in dict.fromkeys(found) if path.exists() or path.is_symlink()]


def _named_sockets(environ: Mapping[str, str]) -> list[Path]:
    """Where the environment says the ssh and gpg agents, the session bus, Docker and the runtime
    folder are."""
    paths = []
    for name in ("SSH_AUTH_SOCK", "XDG_RUNTIME_DIR"):
        if environ.get(name, "").startswith("/"):
            paths.append(environ[name])
    gpg = environ.get("GPG_AGENT_INFO", "")
    if gpg.startswith("/"):
        paths.append(gpg.split(":")[0])
    for address in environ.get("DBUS_SESSION_BUS_ADDRESS", "").split(";"):
        if address.startswith("unix:"):
            for pair in address[len("unix:"):].split(","):
                key, _, value = pair.partition("=")
                if key in ("path", "dir", "tmpdir", "runtime") and value.startswith("/"):
                    paths.append(unquote(value))
    docker = environ.get("DOCKER_HOST", "")
    if docker.startswith("unix://"):
        paths.append(docker[len("unix://"):])
    return [Path(path) for path in paths]


@functools.lru_cache(maxsize=1)
def _gpg_sockets() -> tuple[Path, ...]:
    """The sockets ``gpgconf --list-dirs`` names (agent, ssh, extra, browser, dirmngr, keyboxd);
    asked once per process, as it costs a few milliseconds."""
    gpgconf = shutil.which("gpgconf")
    if gpgconf is None:
        return ()
    try:
        listed = subprocess.run([gpgconf, "--list-dirs"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    sockets = []
    for line in listed.splitlines():
        name, _, value = line.partition(":")
        if name.endswith("-socket") and value.startswith("/"):
            sockets.append(Path(unquote(value)))
    return tuple(sockets)


def _sockets_under(folder: Path) -> list[Path]:
    found: list[Path] = []
    budget = [MAX_SCANNED]

    def walk(current: Path, depth: int) -> None:
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    budget[0] -= 1
                    if budget[0] < 0:
                        return
                    if entry.is_dir(follow_symlinks=False):
                        if depth < SOCKET_DEPTH:
                            walk(Path(entry.path), depth + 1)
                    elif not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
                        if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                            found.append(Path(entry.path))
        except OSError:
            return

    walk(folder, 1)
    return found
