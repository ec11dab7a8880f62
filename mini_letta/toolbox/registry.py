"""The Toolbox: the tools the model may call, argument checks, approval, output caps, file tracking."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mini_letta.messages import ToolCall, ToolSpec
from mini_letta.settings import SETTINGS
from mini_letta.resources import tool_spec
from mini_letta.toolbox import background
from mini_letta.toolbox.builtins import Builtins, describe_call
from mini_letta.toolbox.editor import Editor
from mini_letta.toolbox import protected
from mini_letta.toolbox.approval import Approver, denial_text
from mini_letta.toolbox.arguments import check_arguments
from mini_letta.toolbox.outcome import ToolError, ToolOutcome, cap_text
from mini_letta.toolbox.permissions import Permissions
from mini_letta.toolbox.sandbox import Sandbox
from mini_letta.toolbox.workspace import Workspace

Handler = Callable[[dict[str, Any]], "ToolOutcome | str"]


@dataclass(frozen=True)
class Halt:
    """A tool or a hook asked the turn to end after this reply's calls: ``stopped`` is the turn's
    ending (``TurnResult.stopped``), ``notice`` what the user is told (may be empty)."""

    stopped: str
    notice: str = ""


@dataclass
class _Tool:
    spec: ToolSpec
    handler: Handler
    # A tool may need approval for some arguments only: bash inside the sandbox does not.
    needs_approval: bool | Callable[[dict[str, Any]], bool]
    # Built-in tools say what they will do in words, and check paths before anyone is asked.
    summary: Callable[[dict[str, Any]], str] | None = None
    precheck: Callable[[dict[str, Any]], None] | None = None
    # Built-in handlers also get the output cap, read once per call: handler(arguments, max_chars).
    takes_limit: bool = False
    # An approved call may change any file (a command, an MCP tool not marked read-only), so
    # checkpoints snapshot the tree around it; write_file and edit_file say which file instead.
    changes_tree: bool = False
    # Runs in plan mode (permission_mode.py). None: it does unless it may change any file.
    read_only: bool | None = None

    @property
    def runs_in_plan_mode(self) -> bool:
        return not self.changes_tree if self.read_only is None else self.read_only


class Toolbox:
    """``Toolbox(workspace, approver)``: ``specs()`` for the request, ``run(call)`` for each tool call.

    ``approver=None`` asks no one, so write_file, edit_file and bash are refused; pass
    ``approve_all`` to allow everything. ``max_output_chars`` is an int or a zero-argument callable
    read at every call; the agent loop passes its own cap to ``run`` instead (sized to the room
    left, never under ``SETTINGS.tool_output_min_chars``: the budget's floor, not applied again here).
    ``editor`` (``editor.py``) holds the files and runs the approved commands when it offers to.
    ``watch_changes`` wraps every approved call (checkpoints record it). With an active
    ``sandbox``, bash runs inside it without asking, unless the model asks to run a command outside.
    """

    def __init__(self, workspace: str | Path, approver: Approver | None = None, *,
                 max_output_chars: int | Callable[[], int] = SETTINGS.tools.output_chars,
                 sandbox: Sandbox | None = None,
                 watch_changes: Callable[[str, dict[str, Any], bool], AbstractContextManager] | None = None,
                 permissions: Permissions | None = None, select: Callable[[str], bool] | None = None,
                 editor: Editor | None = None):
        self.ws = Workspace(workspace)
        # What runs without asking: rules from settings and from "always" answers, and plug-ins.
        # A subagent's toolbox is given its parent's, so an "always" answer holds for both.
        self.permissions = permissions or Permissions(self.ws.root)
        # The tools this toolbox may hold (a subagent's type selects them): another is not registered.
        self._select = select or (lambda name: True)
        self.sandbox = sandbox
        self.approver = approver
        # An editor holding the files and terminals (an ACP client), or None: the disk and our shell.
        self.editor = editor
        self.builtins = Builtins(self.ws, self)
        if permissions is None:
            self.permissions.always_ask += [self.builtins.protected_reason, self.builtins.outside_sandbox_reason]
        self.max_output_chars = max_output_chars
        self._tools: dict[str, _Tool] = {}
        # Around every approved call, so what it changes can be recorded first (checkpoints/):
        # watch_changes(name, arguments, changes_tree).
        self.watch_changes: Callable[[str, dict[str, Any], bool], AbstractContextManager] = \
            watch_changes or (lambda name, args, changes_tree: nullcontext())
        # Registered but not sent to the model until listed (MCP tools deferred behind tool_search).
        self._unlisted: set[str] = set()
        # Called before the tool list is read, on the caller's thread (MCP servers' tool changes).
        self.refreshers: list[Callable[[], None]] = []
        # Told of a reply's calls before the first one runs (task calls that may run side by side).
        self.reply_listeners: list[Callable[[list[ToolCall]], None]] = []
        for name, entry in self.builtins.tools(self._select):
            self._tools[name] = _Tool(*entry)
        # bash's background commands: their two tools are sent from the first one on.
        self.background = background.BackgroundJobs()
        if "bash" in self._tools:
            for name, handler in background.tools(self.background):
                data = tool_spec(name)
                self._tools[name] = _Tool(ToolSpec(data["name"], data["description"], data["parameters"]), handler,
                                          False, takes_limit=True, read_only=True)
                self._unlisted.add(name)
            self.background.on_start = lambda: [self.list_tool(name) for name in background.TOOL_NAMES]
        self._halt: Halt | None = None

    # -- public API --------------------------------------------------------------------------
    @property
    def workspace(self) -> Path:
        return self.ws.root

    def add_dir(self, folder: str | Path) -> Path:
        """Let the file tools read and write ``folder`` as they do the workspace (``--add-dir``)."""
        return self.ws.add(folder)

    @property
    def max_output_chars(self) -> int:
        """The output cap in force right now."""
        value = self._max_output_chars() if callable(self._max_output_chars) else self._max_output_chars
        return int(value)

    @max_output_chars.setter
    def max_output_chars(self, value: int | Callable[[], int]) -> None:
        self._max_output_chars = value

    @property
    def files_read(self) -> list[str]:
        """Workspace-relative paths read with read_file, first read first."""
        return list(self.builtins.files_read)

    @property
    def files_modified(self) -> list[str]:
        """Workspace-relative paths changed with write_file or edit_file, first change first."""
        return list(self.builtins.files_modified)

    def register(self, spec: ToolSpec, handler: Handler, *, needs_approval: bool = False,
                 takes_limit: bool = False, listed: bool = True,
                 summary: Callable[[dict[str, Any]], str] | None = None, changes_tree: bool = False,
                 read_only: bool | None = None) -> None:
        """Add a tool; ``handler(arguments)`` gets checked arguments and returns text or a ToolOutcome.

        With ``takes_limit`` it is called ``handler(arguments, max_chars)`` and can fit its output
        to the cap itself (whole excerpts instead of a cut). An unlisted tool can be called but is
        left out of ``specs()`` until ``list_tool(name)``. ``summary(arguments)`` is what the
        approval question shows (else ``describe``). ``changes_tree``: the call may change any file
        (see ``_Tool``). ``read_only``: whether plan mode lets it run (by default, when it is not
        ``changes_tree``); a tool that changes anything else (core memory) says False.
        """
        if not self._select(spec.name):
            return
        if spec.name in self._tools:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        self._tools[spec.name] = _Tool(spec, handler, needs_approval, summary, takes_limit=takes_limit,
                                       changes_tree=changes_tree, read_only=read_only)
        if not listed:
            self._unlisted.add(spec.name)

    def list_tool(self, name: str) -> None:
        """Send an unlisted tool from now on, after every tool sent so far (so a provider's cached
        prefix of the tool list stays valid)."""
        if name in self._unlisted:
            self._unlisted.discard(name)
            self._tools[name] = self._tools.pop(name)

    def unlist_tool(self, name: str) -> None:
        """Stop sending a registered tool (it can still be called, and listed again)."""
        if name in self._tools:
            self._unlisted.add(name)

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def spec(self, name: str) -> ToolSpec | None:
        tool = self._tools.get(name)
        return tool.spec if tool else None

    def is_listed(self, name: str) -> bool:
        return name in self._tools and name not in self._unlisted

    def begin_reply(self, calls: list[ToolCall]) -> None:
        """The calls of one reply, about to be run one by one."""
        for listener in self.reply_listeners:
            listener(calls)

    def replace_spec(self, spec: ToolSpec) -> None:
        """A registered tool's new description or schema, in its place in the list."""
        self._tools[spec.name] = dataclasses.replace(self._tools[spec.name], spec=spec)

    def share(self, name: str, other: Toolbox, *, handler: Handler | None = None, listed: bool = True) -> None:
        """Offer this toolbox's tool ``name`` in ``other`` too, with the same approval and ``handler``
        (by default the same one): a subagent gets its parent's MCP tools without starting their
        servers again. ``listed``: sent to ``other``'s model from the start, else when listed there."""
        if other._select(name):
            tool = self._tools[name]
            other._tools[name] = dataclasses.replace(tool, handler=handler or tool.handler)
            (other._unlisted.discard if listed else other._unlisted.add)(name)

    def names(self) -> list[str]:
        """Every registered tool, listed or not."""
        return list(self._tools)

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)
        self._unlisted.discard(name)

    def specs(self) -> list[ToolSpec]:
        """Built-in tools in a fixed order, then registered tools in registration (or listing) order."""
        for refresh in self.refreshers:
            refresh()
        return [tool.spec for name, tool in self._tools.items() if name not in self._unlisted]

    def halt(self, stopped: str, notice: str = "") -> None:
        """End the turn after this reply's calls (the first asking wins); later calls are not run."""
        self._halt = self._halt or Halt(stopped, notice)

    def take_halt(self) -> Halt | None:
        """The loop, after a reply's calls: whether one asked to end the turn (and forget it)."""
        halt, self._halt = self._halt, None
        return halt

    def describe(self, call: ToolCall) -> str:
        """A compact one-line display of a call, e.g. ``read_file src/app.py``."""
        return describe_call(call)

    def run(self, call: ToolCall, max_chars: int | None = None) -> ToolOutcome:
        """Run one call, its output capped at ``max_chars`` (default: ``max_output_chars``); every
        problem becomes an error outcome (Ctrl-C still propagates)."""
        if not call.id:
            return ToolOutcome("This tool call has no id, so it was not run; call the tool again.", is_error=True)
        if self._halt is not None:
            return ToolOutcome("Not run: the turn was ended" + (f" ({self._halt.notice})." if self._halt.notice else "."),
                               is_error=True)
        tool = self._tools.get(call.name)
        if tool is None:
            names = ", ".join(name for name in self._tools if name not in self._unlisted)
            return ToolOutcome(f"There is no tool named {call.name!r}; the tools are: {names}.", is_error=True)
        try:
            raw = call.parse_arguments()
        except ValueError as exc:
            return ToolOutcome(f"{call.name}: {exc}; send a JSON object with the tool's arguments.", is_error=True)
        args, problem = check_arguments(call.name, tool.spec.parameters, raw)
        if problem:
            return ToolOutcome(problem, is_error=True)
        refusal = self.permissions.mode.refusal(call.name, tool.runs_in_plan_mode)
        if refusal:
            return ToolOutcome(refusal, is_error=True)
        hooks = self.permissions.hooks
        verdict = hooks.before_tool(call, args) if hooks is not None else None
        if verdict is not None and (verdict.blocked is not None or verdict.stop is not None):
            if verdict.stop is not None:
                self.halt("hook", f"A PreToolUse hook ended the turn: {verdict.stop}")
            return ToolOutcome(f"Blocked by a PreToolUse hook: {verdict.blocked or verdict.stop}", is_error=True)
        decided = verdict.permission if verdict is not None else None
        limit = self.max_output_chars if max_chars is None else int(max_chars)
        try:
            if tool.precheck:
                tool.precheck(args)
            needs_approval = tool.needs_approval(args) if callable(tool.needs_approval) else tool.needs_approval
            # A hook's "ask" asks even where a rule allows; its "allow" is a rule of its own (it does
            # not cover what is asked every time: protected files, commands outside the sandbox).
            needs_approval = needs_approval or decided == "ask"
            allowed_by = self.permissions.allowed_by(call, args) if needs_approval and decided != "ask" else None
            if needs_approval and not allowed_by and decided == "allow" and not self.permissions.always_asks(call, args):
                allowed_by = "a PreToolUse hook" + (f": {verdict.reason}" if verdict.reason else "")
            if allowed_by:
                self.permissions.announce(call, allowed_by)
            elif needs_approval:
                summary = tool.summary(args) if tool.summary else self.describe(call)
                if self.approver is None:
                    return ToolOutcome(f"Not run: {call.name} needs the user's approval and none can be asked "
                                       "in this session.", is_error=True)
                why = self.permissions.always_asks(call, args)
                if not protected.ask(self.approver, call, summary, why):
                    return ToolOutcome(denial_text(self.approver, call, summary), is_error=True)
            with self.watch_changes(call.name, args, tool.changes_tree):
                result = tool.handler(args, limit) if tool.takes_limit else tool.handler(args)
        except (ToolError, ValueError) as exc:
            # ValueError is how registered tools (core memory) say "refused, and here is why".
            return ToolOutcome(str(exc), is_error=True)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            return ToolOutcome(f"{call.name} failed: {reason}.", is_error=True)
        except Exception as exc:  # a broken extra tool must not end the session
            return ToolOutcome(f"{call.name} failed: {type(exc).__name__}: {exc}", is_error=True)
        outcome = result if isinstance(result, ToolOutcome) else ToolOutcome(str(result))
        if hooks is not None and not outcome.is_error:
            outcome = self._after_hooks(hooks, call, args, outcome)
        if len(outcome.text) > limit:
            outcome = ToolOutcome(cap_text(outcome.text, limit, "ask for less (a narrower pattern or range)"),
                                  outcome.is_error)
        return outcome

    def _after_hooks(self, hooks: Any, call: ToolCall, args: dict[str, Any], outcome: ToolOutcome) -> ToolOutcome:
        """PostToolUse: what its hooks say to the model comes after the output (the call already ran)."""
        after = hooks.after_tool(call, args, outcome.text)
        if after.stop is not None:
            self.halt("hook", f"A PostToolUse hook ended the turn: {after.stop}")
        said = [f"[PostToolUse hook: {after.blocked}]" if after.blocked else "", after.context]
        said = [text for text in said if text]
        return ToolOutcome("\n\n".join([outcome.text, *said]), outcome.is_error) if said else outcome
