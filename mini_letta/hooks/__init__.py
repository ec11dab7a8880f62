"""The user's own commands on Claude Code's hook events: PreToolUse, PostToolUse, UserPromptSubmit,
Stop, SubagentStop, SessionStart, Notification, PreCompact and PostCompact.

The toolbox runs the tool events (through ``Permissions.hooks``), the turn the prompt and Stop
events, ``app`` SessionStart, the REPL's questions Notification, ``loop/compacting.py`` the
compaction events; what a hook answers is read by ``replies.py``. The rest of this docstring is
the compaction events', which came first.

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
import math
import os
import re
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mini_letta.hooks import replies
from mini_letta.messages import ToolCall
from mini_letta.notices import Say, quiet
from mini_letta import config
from mini_letta.settings import SETTINGS
from mini_letta.wording import counted
from mini_letta.workspace_files import UTF8_MAX_BYTES, read_workspace_json

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop", "SessionStart",
          "Notification", "PreCompact", "PostCompact")
BLOCK_EXIT_CODE = replies.BLOCK_EXIT_CODE
SETTINGS_FILE = "settings.json"
WORKSPACE_SETTINGS = Path(".mini-letta") / SETTINGS_FILE
TRUST_FILE = "trusted-folders.json"
# A timeout is a number of seconds in (0, a day]; anything else (Infinity, NaN, a string) is a notice.
MAX_TIMEOUT_SECONDS = SETTINGS.hooks.max_timeout_seconds
# How long output still open after the hook exited is read (a background child may hold it for ever).
AFTER_EXIT_SECONDS = 0.5
KILL_WAIT_SECONDS = 1.0
POLL_SECONDS = 0.05
PIPE_CHUNK = 65_536
SETTINGS_CAP_BYTES = 1024 * 1024


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
    """The hook commands of a session, and the events that run them (``hooks/replies.py`` reads what
    they answer). ``context()``: the session's ``session_id`` and ``transcript_path`` for the input;
    ``mode``: the ``PermissionMode`` (its name is ``permission_mode``); ``say``: where failures and
    ``systemMessage`` go; ``subagent``: a subagent's view (SubagentStop for Stop, no prompt hooks)."""

    commands: list[HookCommand] = field(default_factory=list)
    workspace: Path | None = None
    say: Say = quiet
    context: Callable[[], dict] = dict
    mode: Any = None
    subagent: bool = False
    pending: list[str] = field(default_factory=list)  # SessionStart's context, sent with the next message

    def for_event(self, event: str, trigger: str) -> list[HookCommand]:
        return [c for c in self.commands if c.event == event and c.matches(trigger)]

    def run(self, event: str, trigger: str, payload: dict) -> list[HookResult]:
        """Run every matching command of ``event`` in order, each with ``payload`` on stdin."""
        data = json.dumps({"hook_event_name": event, "trigger": trigger, **payload}, ensure_ascii=False)
        return [run_command(c.command, data, c.timeout, self.workspace) for c in self.for_event(event, trigger)]

    def for_subagent(self) -> Hooks:
        return replace(self, subagent=True, pending=[])

    def reload(self, home: Path, workspace: Path, say: Say = quiet) -> None:
        """Read the hook commands of ``home`` and ``workspace`` again (``/trust``), into this same
        object: the toolbox's permissions and the compaction hold it, and a subagent started from
        now on copies it (``for_subagent``). Problems are said through ``say``, as at the start."""
        self.commands = load_hooks(home, workspace, say).commands

    # -- the events ----------------------------------------------------------------------------
    def _replies(self, event: str, names: tuple[str, ...] | None, fields: dict,
                 plain_is_context: bool = False) -> list[replies.Reply]:
        """Run ``event``'s commands whose matcher matches one of ``names`` (None: every command)."""
        chosen = [c for c in self.commands if c.event == event and (names is None or any(map(c.matches, names)))]
        if not chosen:
            return []
        mode = getattr(self.mode, "name", "default")
        data = json.dumps({"session_id": "", "transcript_path": "", **self.context(),
                           "cwd": str(self.workspace or Path.cwd()), "permission_mode": mode,
                           "hook_event_name": event, **fields}, ensure_ascii=False, default=str)
        found = []
        for command in chosen:
            reply = replies.read(run_command(command.command, data, command.timeout, self.workspace), plain_is_context)
            if reply.failure:
                self.say(f"{event} hook: {reply.failure}")
            if reply.message:
                self.say(f"{event} hook: {reply.message}")
            found.append(reply)
        return found

    def before_tool(self, call: ToolCall, arguments: dict) -> replies.Reply:
        """PreToolUse: the strongest decision of its hooks (deny, then ask, then allow), their context."""
        found = self._replies("PreToolUse", replies.tool_names(call.name), self._tool_fields(call, arguments))
        return _combined(found)

    def after_tool(self, call: ToolCall, arguments: dict, output: str) -> replies.Reply:
        """PostToolUse, after a call that succeeded: what its hooks tell the model (a block's
        reason, context), whether one ends the turn."""
        fields = {**self._tool_fields(call, arguments), "tool_response": {"output": output, "is_error": False}}
        return _combined(self._replies("PostToolUse", replies.tool_names(call.name), fields))

    def prompt_submitted(self, prompt: str) -> tuple[str | None, list[str]]:
        """UserPromptSubmit: (why the prompt is blocked, or None; what the model gets before it),
        SessionStart's context first. A subagent's prompt comes from its parent: no hooks."""
        if self.subagent:
            return None, []
        found = _combined(self._replies("UserPromptSubmit", None, {"prompt": prompt}, plain_is_context=True))
        added, self.pending = [*self.pending, *([found.context] if found.context else [])], []
        if found.blocked is not None or found.stop is not None:
            return found.blocked or found.stop, []
        return None, [f"[Context from your hooks]\n{text}" for text in added]

    def stopping(self, reply_text: str, active: bool) -> str | None:
        """Stop (SubagentStop for a subagent): why the model must go on, or None."""
        event = "SubagentStop" if self.subagent else "Stop"
        found = _combined(self._replies(event, None, {"stop_hook_active": active,
                                                      "last_assistant_message": reply_text}))
        return found.blocked

    def session_started(self, source: str) -> None:
        """SessionStart (matcher: startup, resume, clear): its context goes with the next message."""
        found = self._replies("SessionStart", (source,), {"source": source}, plain_is_context=True)
        self.pending += [_capped(reply.context) for reply in found if reply.context]

    def notify(self, kind: str, message: str) -> None:
        """Notification (matcher: its kind, e.g. permission_prompt), in the background: a question
        is never held up by a notifier."""
        if any(c.event == "Notification" and c.matches(kind) for c in self.commands):
            threading.Thread(target=self._replies, daemon=True, name="notification-hook",
                             args=("Notification", (kind,), {"message": message, "notification_type": kind})).start()

    def _tool_fields(self, call: ToolCall, arguments: dict) -> dict:
        name = replies.tool_names(call.name)[-1]
        return {"tool_name": name, "mini_letta_tool_name": call.name, "tool_use_id": call.id,
                "tool_input": replies.tool_input(call.name, arguments, self.workspace)}


def _capped(text: str) -> str:
    limit = SETTINGS.hooks.model_chars
    return text if len(text) <= limit else text[:limit] + f"\n[cut: a hook's text is kept to {limit:,} characters]"


def _combined(found: list[replies.Reply]) -> replies.Reply:
    """The replies of one event's hooks as one: the first block and stop, the strongest permission."""
    reply = replies.Reply()
    for order in ("deny", "ask", "allow"):
        chosen = next((r for r in found if r.permission == order), None)
        if chosen is not None:
            reply.permission, reply.reason = order, chosen.reason
            break
    blocked = next((r.blocked for r in found if r.blocked is not None), None)
    reply.blocked = None if blocked is None else _capped(blocked)
    reply.stop = next((r.stop for r in found if r.stop is not None), None)
    reply.context = _capped("\n".join(r.context for r in found if r.context))
    return reply


def run_command(command: str, stdin: str, timeout: float, cwd: Path | None) -> HookResult:
    try:
        # Scripts written for Claude Code find the project as $CLAUDE_PROJECT_DIR.
        env = None if cwd is None else {**os.environ, "CLAUDE_PROJECT_DIR": str(cwd), "MINI_LETTA_PROJECT_DIR": str(cwd)}
        process = subprocess.Popen(command, shell=True, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as error:
        return HookResult(command, None, error=f"could not start ({error.strerror or error})")
    stdout, stderr = _exchange(process, stdin.encode("utf-8"), time.monotonic() + timeout)
    if process.poll() is None:
        # Its own process group: the shell and every child it started (a `sleep`, a server) go.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            process.wait(timeout=KILL_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            pass  # stuck in the kernel: it cannot run any more, and we do not wait for it
        return HookResult(command, None, _text(stdout), _text(stderr), timed_out=True,
                          error=f"did not finish within {timeout:g} s and was stopped")
    return HookResult(command, process.returncode, _text(stdout), _text(stderr))


def _exchange(process: subprocess.Popen, data: bytes, deadline: float) -> tuple[bytes, bytes]:
    """Feed ``data`` to the hook and read what it prints, until it has exited and closed its output,
    or it has exited and ``AFTER_EXIT_SECONDS`` passed, or the deadline. Waiting for the pipes'
    end alone is not enough: a child that escaped the group (``setsid``) or was left in the
    background can hold them open long after the hook itself is gone."""
    outputs = {process.stdout: bytearray(), process.stderr: bytearray()}
    pending = memoryview(data)
    with selectors.DefaultSelector() as selector:
        for pipe in (process.stdin, process.stdout, process.stderr):
            os.set_blocking(pipe.fileno(), False)
        if pending:
            selector.register(process.stdin, selectors.EVENT_WRITE)
        else:
            process.stdin.close()
        selector.register(process.stdout, selectors.EVENT_READ)
        selector.register(process.stderr, selectors.EVENT_READ)
        exited_at = None
        while selector.get_map():
            now = time.monotonic()
            if exited_at is None and process.poll() is not None:
                exited_at = now
            limit = deadline if exited_at is None else min(deadline, exited_at + AFTER_EXIT_SECONDS)
            if now >= limit:
                break
            # A short step: the hook's exit is noticed by polling, not by any pipe event.
            for key, _ in selector.select(min(limit - now, POLL_SECONDS)):
                pipe = key.fileobj
                if pipe is process.stdin:
                    try:
                        pending = pending[os.write(pipe.fileno(), pending[:PIPE_CHUNK]):]
                    except BlockingIOError:
                        continue
                    except OSError:  # it exited without reading its stdin: that is its right
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(pipe)
                        pipe.close()
                    continue
                try:
                    chunk = os.read(pipe.fileno(), PIPE_CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(pipe)
                    continue
                kept = outputs[pipe]
                # Read on past the cap (or the hook would block on a full pipe), keep only the start.
                kept += chunk[:max(0, UTF8_MAX_BYTES * SETTINGS.hooks.output_chars - len(kept))]
        if process.poll() is None:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    for pipe in (process.stdin, process.stdout, process.stderr):
        pipe.close()
    return bytes(outputs[process.stdout]), bytes(outputs[process.stderr])


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")[:SETTINGS.hooks.output_chars]


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


def load_hooks(home: Path, workspace: Path, say: Say = quiet) -> Hooks:
    """The hooks of the data folder's settings, then (if trusted) the workspace's. Problems with a
    settings file (not a regular file, too big, not JSON, wrong shape) are one ``say`` each and that
    part is ignored; the rest still loads. Nothing in a settings file can stop mini-letta starting."""
    hooks = Hooks(workspace=Path(workspace), say=say)
    hooks.commands += _read(home / SETTINGS_FILE, say)
    local = Path(workspace) / WORKSPACE_SETTINGS
    if is_trusted(home, workspace):
        hooks.commands += _read(local, say, within=workspace)
    elif _read(local, say, within=workspace, shape_quiet=True):
        say(f"{local} defines hooks that were not run: this folder is not trusted. "
            "Type /trust in the REPL if you want its hooks to run.")
    return hooks


def _read(path: Path, say: Say, within: Path | None = None, shape_quiet: bool = False) -> list[HookCommand]:
    """The hook commands in the settings file ``path``. ``shape_quiet``: only to see whether an untrusted
    file has any, so its shape problems are not worth a notice (a file that is not JSON still is)."""
    data = read_workspace_json(path, SETTINGS_CAP_BYTES, within=within, say=say)
    if not isinstance(data, dict) or "hooks" not in data:
        return []
    problems: list[str] = []
    commands = _commands(data["hooks"], path, problems)
    if problems and not shape_quiet:
        say(f"Ignoring part of {path}: {problems[0]}"
            + (f" (and {counted(len(problems) - 1, 'more problem')})" if len(problems) > 1 else "") + ".")
    return commands


def _commands(events: object, path: Path, problems: list[str]) -> list[HookCommand]:
    """Every well-formed hook in the ``hooks`` value; each malformed part is skipped and described."""
    if not isinstance(events, dict):
        problems.append('"hooks" must be an object of events')
        return []
    commands: list[HookCommand] = []
    for event in EVENTS:
        groups = events.get(event, [])
        if not isinstance(groups, list):
            problems.append(f"{event} must be a list")
            continue
        for group in groups:
            group = group if isinstance(group, dict) else {}
            entries, matcher = group.get("hooks"), group.get("matcher") or ""
            if not isinstance(entries, list) or not isinstance(matcher, str):
                problems.append(f'each {event} entry needs a "hooks" list and a text "matcher"')
                continue
            for entry in entries:
                if not (isinstance(entry, dict) and entry.get("type", "command") == "command"
                        and isinstance(entry.get("command"), str) and entry["command"].strip()):
                    problems.append(f'a {event} hook needs {{"type": "command", "command": "…"}}')
                    continue
                commands.append(HookCommand(event, matcher, entry["command"], _timeout(entry, event, problems), path))
    return commands


def _timeout(entry: dict, event: str, problems: list[str]) -> float:
    timeout = entry.get("timeout", SETTINGS.hooks.timeout_seconds)
    if (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout)
            or not 0 < timeout <= MAX_TIMEOUT_SECONDS):
        problems.append(f"a {event} hook's timeout {json.dumps(timeout)[:40]} is not a number of seconds "
                        f"between 0 and {MAX_TIMEOUT_SECONDS:,.0f}, so {SETTINGS.hooks.timeout_seconds:g} s is used")
        return SETTINGS.hooks.timeout_seconds
    return float(timeout)


def describe_failure(event: str, result: HookResult) -> str:
    """One line for the user about a hook that did not succeed."""
    detail = result.error or f"exited with status {result.exit_code}"
    said = " ".join(result.stderr.split())[:300]
    return (f"The {event} hook `{result.command}` {detail}" + (f": {said}" if said else "")
            + "; compaction went on without it.")
