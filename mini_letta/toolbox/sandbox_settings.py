"""The sandbox's settings: the mode (``--sandbox``, ``$MINI_LETTA_SANDBOX``, or ``"sandbox"`` in the
data folder's ``settings.json``), the network, the user's hide list and the credential variables
commands keep. Only the user's own settings are read: a repository's ``.mini-letta/settings.json``
cannot weaken the sandbox it is confined by (:mod:`sandbox` has the modes' meaning).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

from mini_letta.notices import Say, quiet


MODES = ("workspace-write", "read-only", "off")
DEFAULT_MODE = "workspace-write"
SETTINGS_KEY = "sandbox"
ENV_MODE = "MINI_LETTA_SANDBOX"


@dataclass(frozen=True)
class SandboxSettings:
    mode: str = DEFAULT_MODE
    network: bool = False
    hide: tuple[str, ...] = ()
    # Without the whole network, these hosts are reachable through a filtering proxy (netproxy.py).
    hosts: tuple[str, ...] = ()
    # Environment variables a command keeps although their names say they hold a credential.
    keep_env: tuple[str, ...] = ()


def load_settings(home: Path, mode: str | None = None, default: str = DEFAULT_MODE, *,
                  say: Say = quiet) -> SandboxSettings:
    """The ``"sandbox"`` entry of the data folder's settings.json (a mode name, or an object with
    ``mode``, ``network`` (true, false, or a list of host names, ``*.`` wildcards allowed), ``hide``
    and ``keep_env`` (names of credential variables commands get all the same));
    ``$MINI_LETTA_SANDBOX`` overrides its mode, and ``mode`` (from
    ``--sandbox``) both; ``default`` where none of them names one. Anything malformed is one ``say``
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
            say(f"Ignoring sandbox mode {chosen!r} in {path}: choose one of {', '.join(MODES)}.")
            chosen = default
        hosts: tuple[str, ...] = ()
        if isinstance(network, list) and network and all(isinstance(host, str) and host.strip() for host in network):
            network, hosts = False, tuple(host.strip() for host in network)
        elif not isinstance(network, bool):
            say(f"Ignoring sandbox network {network!r} in {path}: it must be true, false or a list "
                "of host names.")
            network = False
        if not (isinstance(hide, list) and all(isinstance(item, str) for item in hide)):
            say(f"Ignoring the sandbox hide list in {path}: it must be a list of paths.")
            hide = []
        keep_env = entry.get("keep_env", [])
        if not (isinstance(keep_env, list) and all(isinstance(item, str) for item in keep_env)):
            say(f"Ignoring the sandbox keep_env list in {path}: it must be a list of variable names.")
            keep_env = []
        settings = SandboxSettings(chosen, network, tuple(hide), hosts, tuple(keep_env))
    elif entry is not None:
        say(f"Ignoring \"sandbox\" in {path}: give a mode ({', '.join(MODES)}) or an object "
            '{"mode": …, "network": false, "hide": [paths]}.')
    from_env = os.environ.get(ENV_MODE, "").strip()
    if mode is None and from_env:
        if from_env in MODES:
            mode = from_env
        else:
            say(f"Ignoring {ENV_MODE}={from_env!r}: choose one of {', '.join(MODES)}.")
    if mode is not None:
        if mode not in MODES:
            raise ValueError(f"--sandbox must be one of {', '.join(MODES)}, not {mode!r}.")
        settings = dataclasses.replace(settings, mode=mode)
    return settings
