"""The built-in tools: read, write and edit files, run bash (in the sandbox when there is one),
grep and glob; each tool's handler, its approval rule, the words its question shows and the path
checks made before anyone is asked. The files read and changed are tracked here."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from mini_letta.messages import ToolCall, ToolSpec
from mini_letta.resources import tool_spec
from mini_letta.settings import SETTINGS
from mini_letta.toolbox import files, protected, search, shell
from mini_letta.toolbox.approval import Approver, approve_all
from mini_letta.toolbox.background import BackgroundJobs
from mini_letta.toolbox.editor import Editor
from mini_letta.toolbox.outcome import ToolError, ToolInterrupted, ToolOutcome
from mini_letta.toolbox.sandbox import Sandbox
from mini_letta.toolbox.workspace import Workspace
from mini_letta.trust.terminal_text import one_line
from mini_letta.wording import counted

BUILTIN_TOOLS = ("read_file", "write_file", "edit_file", "bash", "grep", "glob")
READ_ONLY_TOOLS = ("read_file", "grep", "glob")  # the built-in tools plan mode runs
# Why a command the model wants to run outside the sandbox is asked about every time.
OUTSIDE_SANDBOX = "the model asks to run this command outside the sandbox, with your full rights"


def _one_line(text: str, limit: int = SETTINGS.tools.describe_chars) -> str:
    flat = one_line(text) or '""'
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def describe_call(call: ToolCall) -> str:
    """A compact one-line display of a call, e.g. ``read_file src/app.py``."""
    try:
        args = call.parse_arguments()
    except ValueError:
        return f"{call.name} (invalid arguments)"
    text = lambda key: args.get(key) if isinstance(args.get(key), str) else ""  # noqa: E731
    if call.name == "read_file":
        offset, limit = args.get("offset"), args.get("limit")
        span = ""
        if isinstance(offset, int) or isinstance(limit, int):
            first = offset if isinstance(offset, int) else 1
            span = f":{first}-{first + limit - 1}" if isinstance(limit, int) else f":{first}-"
        return f"read_file {_one_line(text('path'))}{span}"
    if call.name == "write_file":
        return f"write_file {_one_line(text('path'))} ({counted(files.count_lines(text('content')), 'line')})"
    if call.name == "edit_file":
        return f"edit_file {_one_line(text('path'))}"
    if call.name == "bash":
        return f"bash{' (background)' if args.get('run_in_background') is True else ''}: {_one_line(text('command'))}"
    if call.name == "grep":
        return f"grep {_one_line(repr(text('pattern')))} in {_one_line(text('path') or '.')}"
    if call.name == "glob":
        return f"glob {_one_line(text('pattern'))}"
    if call.name == "todo_write" and isinstance(args.get("todos"), list):
        return f"todo_write ({counted(len(args['todos']), 'step')})"
    if call.name == "task":
        return f"task {_one_line(text('subagent_type'))}: {_one_line(text('description'))}"
    shown = " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return _one_line(f"{call.name} {shown}")


class Gate(Protocol):
    """Who approves, where commands run and who holds the files, read at each call (the Toolbox)."""

    approver: Approver | None
    sandbox: Sandbox | None
    editor: Editor | None
    background: BackgroundJobs


class Builtins:
    def __init__(self, ws: Workspace, gate: Gate):
        self.ws = ws
        self.gate = gate  # the toolbox: its approver and sandbox as they are now
        self.files_read: dict[str, None] = {}
        self.files_modified: dict[str, None] = {}
        self.engine: search.Engine | None = None

    def tools(self, select: Callable[[str], bool]) -> Iterator[tuple[str, tuple]]:
        """(name, the toolbox's entry fields) of each built-in tool ``select`` admits."""
        handlers = {
            # Inside the workspace and added folders, reading needs no approval; anywhere else it asks.
            "read_file": (self._read_file, self._reads_outside,
                          lambda a: f"read {a['path']}, outside the workspace"),
            "write_file": (self._write_file, True,
                           lambda a: f"write {counted(files.count_lines(a['content']), 'line')} to {a['path']}"),
            "edit_file": (self._edit_file, True,
                          lambda a: f"edit {a['path']}: replace {counted(files.count_lines(a['old_string']), 'line')} "
                                    f"with {files.count_lines(a['new_string'])}"),
            "bash": (self._bash, lambda a: not self._sandboxed(a),
                     lambda a: f"run{' in the background' if a.get('run_in_background') is True else ''}"
                               f"{'' if self.gate.sandbox is None or not self.gate.sandbox.active else ' outside the sandbox'}: "
                               f"{a['command']}"),
            "grep": (self._grep, False, None),
            "glob": (self._glob, False, None),
        }
        for name in filter(select, BUILTIN_TOOLS):
            data = tool_spec(name)
            handler, needs_approval, summary = handlers[name]
            precheck = (self._check_writable_path if name in ("write_file", "edit_file")
                        else self._check_readable_path if name == "read_file" else None)
            spec = ToolSpec(data["name"], data["description"], data["parameters"])
            yield name, (spec, handler, needs_approval, summary, precheck, True, name == "bash", name in READ_ONLY_TOOLS)

    def protected_reason(self, call: ToolCall, args: dict[str, Any]) -> str | None:
        """A file that changes what runs is asked about every time, whatever "always" allowed."""
        if call.name not in protected.WRITING_TOOLS or not isinstance(args.get("path"), str):
            return None
        try:
            resolved = self.ws.resolve(args["path"])
            return protected.reason(call.name, resolved, self.ws.root_of(resolved))
        except ToolError:
            return None  # outside the workspace: refused before anyone is asked

    def outside_sandbox_reason(self, call: ToolCall, args: dict[str, Any]) -> str | None:
        if call.name == "bash" and self.gate.sandbox is not None and self.gate.sandbox.active and not self._sandboxed(args):
            return OUTSIDE_SANDBOX
        return None

    def _check_writable_path(self, args: dict[str, Any]) -> None:
        """Before anyone is asked: the path is inside the workspace and not a FIFO, socket or device
        (the approval's diff would block reading it, and the change could never be made)."""
        files.refuse_special(self.ws.resolve(args["path"]), args["path"])
        if "old_string" in args:
            files.check_edit_target(self.ws, args["path"], args["old_string"])

    def _check_readable_path(self, args: dict[str, Any]) -> None:
        """--yolo approves every call, but not reads outside the workspace: they would reach the
        user's keys and credentials with no one asked. Those folders are added with --add-dir."""
        if self.gate.approver is approve_all and self._reads_outside(args):
            raise ToolError(f"{args['path']} is outside the workspace {self.ws.root}; with --yolo nothing outside "
                            "it is read (add its folder with --add-dir).")

    def _reads_outside(self, args: dict[str, Any]) -> bool:
        return isinstance(args.get("path"), str) and not self.ws.contains(self.ws.resolve_anywhere(args["path"]))

    def _read_file(self, args: dict[str, Any], limit: int) -> str:
        reader, path = self.ws, args["path"]
        if self._reads_outside(args):  # the user approved this one read: that file, not its folder
            target = self.ws.resolve_anywhere(path)
            reader = Workspace(self.ws.root)
            reader.added = [target.parent]
        text = files.read_file(reader, path, args.get("offset", 1),
                               args.get("limit", SETTINGS.tools.read_lines), max_chars=limit, editor=self.gate.editor)
        self.files_read.setdefault(reader.relative(reader.resolve(path)))
        return text

    def _write_file(self, args: dict[str, Any], limit: int) -> str:
        message, rel = files.write_file(self.ws, args["path"], args["content"], self.gate.editor)
        self.files_modified.setdefault(rel)
        return message

    def _edit_file(self, args: dict[str, Any], limit: int) -> str:
        message, rel = files.edit_file(self.ws, args["path"], args["old_string"], args["new_string"],
                                       self.gate.editor)
        self.files_modified.setdefault(rel)
        return message

    def _sandboxed(self, args: dict[str, Any]) -> bool:
        return self.gate.sandbox is not None and self.gate.sandbox.active and args.get("sandbox") is not False

    def _bash(self, args: dict[str, Any], limit: int) -> ToolOutcome:
        if args.get("run_in_background") is True:
            return self._bash_in_background(args["command"], self._sandboxed(args))
        timeout = args.get("timeout", SETTINGS.tools.shell_timeout_seconds)
        try:
            if self._sandboxed(args):
                outcome = self.gate.sandbox.run(args["command"], timeout, limit, tuple(self.ws.added))
            else:
                editor = self.gate.editor
                outcome = editor.run_command(args["command"], self.ws.root, timeout, limit) if editor else None
                if outcome is None:
                    outcome = shell.run_bash(args["command"], self.ws.root, timeout, limit)
        except ToolInterrupted as stopped:
            raise ToolInterrupted(masked(stopped.outcome)) from None
        return masked(outcome)

    def _bash_in_background(self, command: str, sandboxed: bool) -> ToolOutcome:
        """Started at once, in the sandbox as a foreground command is (its clean-up when it ends);
        an editor's terminal is not used: the command must outlive this call."""
        jobs = self.gate.background
        if sandboxed:
            sandbox, added = self.gate.sandbox, tuple(self.ws.added)
            confined = sandbox.prepare(added)
            try:
                job = jobs.start(command, self.ws.root, wrap=confined.wrap, env=confined.env(), follow_tree=False,
                                 finish=lambda: sandbox.explain("", confined.finish(), added))
            except BaseException:
                confined.finish()
                raise
        else:
            job = jobs.start(command, self.ws.root)
        # Each sandboxed command has a network namespace of its own (unless "network": true).
        alone = sandboxed and not self.gate.sandbox.settings.network
        return ToolOutcome(f"Started in the background as {job.shell_id}: read its output with bash_output "
                           f"(bash_id {job.shell_id!r}), stop it with kill_bash; it is stopped when the session ends."
                           + (" In the sandbox it has a network of its own: other commands cannot reach the ports "
                              "it listens on." if alone else ""))

    def _search_engine(self) -> search.Engine:
        """One per toolbox, so a missing ripgrep is said once, not at every search."""
        if self.engine is None:
            self.engine = search.Engine.for_workspace(self.ws)
        return self.engine

    def _grep(self, args: dict[str, Any], limit: int) -> str:
        return search.grep(self.ws, args["pattern"], args.get("path", "."), max_chars=limit,
                           engine=self._search_engine(), **search.grep_options(args))

    def _glob(self, args: dict[str, Any], limit: int) -> str:
        return search.glob(self.ws, args["pattern"], max_chars=limit, engine=self._search_engine())


def masked(outcome: ToolOutcome) -> ToolOutcome:
    """A command's output as the model may read it: what the session file would mask (a key that
    ``env`` or ``cat ~/.netrc`` printed, this process's credentials) is masked here already."""
    from mini_letta.trust.redact import redact_text

    text = redact_text(outcome.text)
    return outcome if text == outcome.text else ToolOutcome(text, outcome.is_error)
