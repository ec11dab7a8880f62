"""The user's own commands around a compaction: ``PreCompact`` and ``PostCompact`` hooks.

They come from ``settings.json`` in the data folder and, once the user has trusted the workspace
(``/trust`` in the REPL, recorded in ``trusted-folders.json`` in the data folder), from the
workspace's ``.mini-letta/settings.json``; a workspace file is code from whoever wrote the
repository, so it never runs before that. The shape is Claude Code's::

    {"hooks": {"PreCompact": [{"matcher": "auto|manual",
                               "hooks": [{"type": "command", "command": "…", "timeout": 30}]}]}}

``matcher`` is a regular expression matched against the trigger (``auto`` or ``manual``); empty,
missing or ``*`` matches both. A command runs through the shell in the workspace with the event as
JSON on stdin. For ``PreCompact`` its stdout is added to the summarizer's instructions, and exit
code 2 blocks a manual compaction (stderr says why). A hook that fails, cannot start or runs past its
timeout (then its whole process group is killed) is reported and otherwise ignored: a compaction
never waits on or breaks because of a user's script.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mini_letta import config

EVENTS = ("PreCompact", "PostCompact")
DEFAULT_TIMEOUT_SECONDS = 60.0
BLOCK_EXIT_CODE = 2
SETTINGS_FILE = "settings.json"
WORKSPACE_SETTINGS = Path(".mini-letta") / SETTINGS_FILE
TRUST_FILE = "trusted-folders.json"
# What a hook may print that reaches the summarizer or the user; a runaway hook cannot flood either.
MAX_OUTPUT_CHARS = 8_000


@dataclass(frozen=True)
class HookCommand:
    event: str
    matcher: str
    command: str
    timeout: float
    source: Path

    def matches(self, trigger: str) -> bool:
        if self.matcher in ("", "*"):
            return True
        try:
            return re.fullmatch(self.matcher, trigger) is not None
        except re.error:
            return self.matcher == trigger


@dataclass
class HookResult:
    command: str
    exit_code: int | None  # None: it could not start or was cut off
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def blocks(self) -> bool:
        return self.exit_code == BLOCK_EXIT_CODE


@dataclass
class Hooks:
    commands: list[HookCommand] = field(default_factory=list)
    workspace: Path | None = None

    def for_event(self, event: str, trigger: str) -> list[HookCommand]:
        return [c for c in self.commands if c.event == event and c.matches(trigger)]

    def run(self, event: str, trigger: str, payload: dict) -> list[HookResult]:
        """Run every matching command of ``event`` in order, each with ``payload`` on stdin."""
        data = json.dumps({"hook_event_name": event, "trigger": trigger, **payload}, ensure_ascii=False)
        return [run_command(c.command, data, c.timeout, self.workspace) for c in self.for_event(event, trigger)]


def run_command(command: str, stdin: str, timeout: float, cwd: Path | None) -> HookResult:
    try:
        process = subprocess.Popen(command, shell=True, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace",
                                   start_new_session=True)
    except OSError as error:
        return HookResult(command, None, error=f"could not start ({error.strerror or error})")
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        # The shell's children (a `sleep`, a server) hold the pipes open: kill the whole group.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.communicate()
        return HookResult(command, None, timed_out=True, error=f"did not finish within {timeout:g} s and was stopped")
    # A hook that exits without reading its stdin is fine: communicate() ignores the broken pipe.
    return HookResult(command, process.returncode, stdout[:MAX_OUTPUT_CHARS], stderr[:MAX_OUTPUT_CHARS])


# --- settings and trust ---------------------------------------------------------------------------
def trusted_folders(home: Path) -> set[str]:
    try:
        data = json.loads((home / TRUST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    folders = data.get("folders") if isinstance(data, dict) else None
    return {f for f in folders if isinstance(f, str)} if isinstance(folders, list) else set()


def is_trusted(home: Path, workspace: Path) -> bool:
    return str(Path(workspace).resolve()) in trusted_folders(home)


def trust(home: Path, workspace: Path) -> None:
    """Record ``workspace`` as trusted: its ``.mini-letta/settings.json`` hooks run from now on."""
    folders = trusted_folders(home) | {str(Path(workspace).resolve())}
    config.private_folder(home)
    config.write_private(home / TRUST_FILE, json.dumps({"folders": sorted(folders)}, indent=2) + "\n")


def load_hooks(home: Path, workspace: Path) -> Hooks:
    """The hooks of the data folder's settings, then (if trusted) the workspace's. Problems with a
    settings file (unreadable, not JSON, wrong shape) are one notice each; the rest still loads."""
    hooks = Hooks(workspace=Path(workspace))
    hooks.commands += _read(home / SETTINGS_FILE)
    local = Path(workspace) / WORKSPACE_SETTINGS
    if local.is_file():
        if is_trusted(home, workspace):
            hooks.commands += _read(local)
        elif _read(local, quiet=True):
            config.notice(f"{local} defines hooks that were not run: this folder is not trusted. "
                          "Type /trust in the REPL if you want its hooks to run.")
    return hooks


def _read(path: Path, quiet: bool = False) -> list[HookCommand]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as error:
        if not quiet:
            config.notice(f"Ignoring {path}: it could not be read as JSON ({error}).")
        return []
    commands: list[HookCommand] = []
    events = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(events, dict):
        return []
    for event in EVENTS:
        groups = events.get(event, [])
        for group in groups if isinstance(groups, list) else []:
            if not isinstance(group, dict):
                continue
            matcher = group.get("matcher") or ""
            for entry in group.get("hooks") or []:
                if not (isinstance(entry, dict) and entry.get("type", "command") == "command"
                        and isinstance(entry.get("command"), str) and entry["command"].strip()):
                    if not quiet:
                        config.notice(f"Ignoring a {event} hook in {path}: it needs "
                                      '{"type": "command", "command": "…"}.')
                    continue
                timeout = entry.get("timeout", DEFAULT_TIMEOUT_SECONDS)
                if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
                    timeout = DEFAULT_TIMEOUT_SECONDS
                commands.append(HookCommand(event, str(matcher), entry["command"], float(timeout), path))
    return commands


def describe_failure(event: str, result: HookResult) -> str:
    """One line for the user about a hook that did not succeed."""
    detail = result.error or f"exited with status {result.exit_code}"
    said = " ".join(result.stderr.split())[:300]
    return (f"The {event} hook `{result.command}` {detail}" + (f": {said}" if said else "")
            + "; compaction went on without it.")
