"""The approval policy: which calls run without asking, and what "always" allows.

Rules have the shape of Claude Code's ``permissions.allow`` and come from ``settings.json`` in the
data folder, from a trusted workspace's ``.mini-letta/settings.json`` (``{"permissions": {"allow":
[...]}}``), or from answering "always" in the REPL (for the rest of the session):

- ``Bash``: every command. ``Bash(git status)``: exactly that command. ``Bash(npm test:*)`` (or
  ``Bash(npm test *)``): every command whose first words are ``npm test``.
- ``Edit`` (or ``Write``): every file change in the workspace, ``write_file`` and ``edit_file`` alike.
  ``Edit(src/app.py)``, ``Edit(src/*)``: the workspace-relative paths the pattern matches (``*``
  crosses folders).
- Any other tool by its name (an MCP tool: ``mcp__server__tool``; all of a server's tools:
  ``mcp__server`` or ``mcp__server__*``).

A command is matched after it is parsed with tree-sitter's bash grammar (:mod:`shell_syntax`), part
by part: ``npm test && rm -rf build`` runs unasked only if ``rm -rf build`` is allowed too. A prefix
rule covers a command only when the parse is complete and every part is a simple command: never one
with a comment, ``>|``, a here-doc, ``$(…)``, backticks, a process substitution, a function, a
subshell, ``&``, a redirection into a file or variables set in front (``PATH=… npm test``), nor one
that runs another program for it (``sudo``, ``env``, ``xargs``, ``eval``, ``exec``, ``source``...) or
uses an option that writes files or runs programs (``git log --output``, ``find -exec``, ``sort -o``:
:mod:`writing_options`): those are asked every time, unless an exact rule or ``Bash`` names them.
"Always" on a command that no prefix can safely cover, or on a program that runs code by design
(:data:`CODE_RUNNERS`, an interpreter with a script), remembers that exact line only (:func:`exact_rule`).

Other parts of mini-letta plug in here:

- ``always_ask``: checks ``(call, arguments) -> reason | None``. A call with a reason is asked every
  time, whatever the rules say, and "always" is not offered for it; the prompt shows the reason.
- ``run_unasked``: checks ``(call, arguments) -> reason | None``. A call with a reason runs without
  asking (after the ``always_ask`` checks), e.g. a command that runs inside a sandbox.
- ``on_allowed(call, reason)``: told about every call that ran without asking, so the REPL can still
  show the diff of an edit it did not ask about.
- ``mode``: the session's permission mode (``permission_mode.py``): in ``acceptEdits`` a file change
  in the workspace runs unasked (after the ``always_ask`` checks); the toolbox asks it which tools
  plan mode refuses. A subagent's toolbox shares these permissions, so its parent's mode holds there.
- ``hooks``: the PreToolUse and PostToolUse hooks the toolbox runs around each call (``hooks/``), shared
  with subagents for the same reason.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_letta.notices import Say, quiet
from mini_letta.permission_mode import ModeGate, PermissionMode
from mini_letta.messages import ToolCall
from mini_letta.toolbox import shell_syntax
from mini_letta.toolbox.writing_options import writes_or_runs
from mini_letta.workspace_files import read_workspace_json

EDIT_TOOLS = ("write_file", "edit_file")
ACCEPT_EDITS_REASON = "auto-accept edits mode"
SETTINGS_CAP_BYTES = 1024 * 1024
# Programs whose second word names what they do: "git status" is a narrower scope than "git".
SUBCOMMAND_PROGRAMS = frozenset({
    "git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "podman", "kubectl", "pip", "pip3", "uv",
    "poetry", "pdm", "hatch", "make", "npx", "gh", "dotnet", "mvn", "gradle", "brew", "apt", "apt-get",
    "conda", "rustup", "terraform", "helm", "deno", "just", "tox", "nox", "bundle", "rake", "composer",
})
# Of those, the ones whose first words may be options or targets (`make -j4`): the scope is the program.
TARGET_PROGRAMS = frozenset({"make", "just", "rake", "tox", "nox"})
# Interpreters: the scope is the module they run as a tool (`python -m pytest`); a script or `-c` runs any
# code, so "always" remembers only that exact line.
INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "perl", "php", "bash", "sh", "zsh"})
# Programs that run code by design, whatever their first words (``awk 'BEGIN{system(…)}'``, ``tar
# --checkpoint-action=exec=…``, ``perl -e``): "always" remembers only the exact command line, never
# the program. Interpreters and WRAPPERS are among them.
CODE_RUNNERS = frozenset({
    "awk", "gawk", "mawk", "nawk", "busybox", "tar", "bsdtar", "perl", "ruby", "node", "nodejs", "deno", "bun",
    "php", "lua", "luajit", "Rscript", "R", "tclsh", "wish", "osascript", "pwsh", "dash", "ksh", "fish", "csh",
    "tcsh", "ssh", "scp", "rsync", "vim", "vi", "nvim", "emacs", "ed", "ex", "gdb", "lldb", "expect", "script",
    "flock", "firejail", "unshare", "nsenter", "systemd-run", "runuser",
})
_PYTHON = re.compile(r"python[\d.]*|pypy[\d.]*")
# Second words that run whatever follows them: "npm run build", "uv run pytest".
RUNNERS = frozenset({"run", "exec", "x", "dlx", "run-script"})
# Programs that run another program: their prefix would allow anything at all.
# Shell builtins that run code they are given (``source``, ``trap``, ``mapfile -C``), change what a name
# runs (``hash -p``, ``alias``, ``enable -f``) or evaluate a variable name's subscript, which runs
# ``$(…)`` inside it (``printf -v 'a[$(cmd)]'``, ``read``, ``let``, ``test -v``).
WRAPPERS = frozenset({
    "sudo", "doas", "su", "env", "xargs", "eval", "exec", "command", "builtin", "nohup", "time", "timeout",
    "nice", "ionice", "watch", "strace", "chroot", "setsid", "stdbuf", "unbuffer", "parallel", "coproc",
    "source", ".", "trap", "enable", "hash", "alias", "shopt", "fc", "mapfile", "readarray", "let", "bind",
    "complete", "compgen", "printf", "read", "test", "[", "getopts", "wait", "unset", "export", "declare",
    "typeset", "local", "readonly",
})
_SUBCOMMAND = re.compile(r"[A-Za-z][\w:.+-]*")
_RULE = re.compile(r"\s*([\w.-]+(?:__\*)?)\s*(?:\((.*)\))?\s*", re.DOTALL)

Check = Callable[[ToolCall, dict[str, Any]], "str | None"]


@dataclass(frozen=True)
class Rule:
    """One allow rule, e.g. ``Bash(npm test:*)``; ``text`` is how it was written."""

    tool: str
    pattern: str | None
    text: str

    @classmethod
    def parse(cls, text: str) -> Rule:
        match = _RULE.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise ValueError(f"{text!r} is not a rule like \"Bash(npm test:*)\" or \"Edit\"")
        tool, pattern = match.group(1), match.group(2)
        pattern = pattern.strip() if pattern is not None else None
        if pattern in ("", "*"):
            pattern = None
        if tool.endswith("__*"):
            # ``mcp__docs__*``, Claude Code's other spelling of a whole server's rule ``mcp__docs``.
            if not tool.startswith("mcp__") or tool.count("__") != 2:
                raise ValueError(f"{text!r}: only an MCP server's tools can be named with * (\"mcp__server__*\")")
            tool = tool[:-3]
        rule = cls(_TOOL_ALIASES.get(tool.lower(), tool), pattern, text.strip())
        if rule.tool == "Bash" and pattern is not None and pattern.endswith((":*", " *")) and not rule.prefix:
            raise ValueError(f"{text!r} names no command before its *")
        return rule

    @property
    def prefix(self) -> list[str] | None:
        """The words of a command-prefix rule (``npm test:*`` or ``npm test *``), else None."""
        if self.tool != "Bash" or self.pattern is None:
            return None
        for ending in (":*", " *"):
            if self.pattern.endswith(ending):
                try:
                    return shlex.split(self.pattern[:-len(ending)])
                except ValueError:
                    return None
        return None

    def names_command(self, command: str) -> bool:
        """``Bash`` or an exact ``Bash(command)`` rule: the same text, or the same simple commands
        with the same words as bash reads them (``git  status`` is ``git status``; a newline between
        two commands is not a space)."""
        if self.tool != "Bash" or self.prefix is not None:
            return False
        if self.pattern is None or command.strip() == self.pattern:
            return True
        rule, given = shell_syntax.read(self.pattern), shell_syntax.read(command)
        return (rule.hidden is None and given.hidden is None and rule.parts == given.parts
                and all(None not in part for part in rule.parts))

    def covers_words(self, words: tuple[str | None, ...]) -> bool:
        prefix = self.prefix
        return bool(prefix) and list(words[:len(prefix)]) == prefix

    def covers_path(self, relative: str) -> bool:
        return self.tool == "Edit" and (self.pattern is None or fnmatch.fnmatchcase(relative, self.pattern.lstrip("/")))


_TOOL_ALIASES = {"bash": "Bash", "edit": "Edit", "write": "Edit", "multiedit": "Edit"}


@dataclass(frozen=True)
class Scope:
    """What answering "always" allows: ``rules`` (in settings' syntax), said as ``label``."""

    key: str
    rules: tuple[str, ...]
    label: str


@dataclass
class Permissions:
    workspace: Path
    rules: list[Rule] = field(default_factory=list)
    always_ask: list[Check] = field(default_factory=list)
    run_unasked: list[Check] = field(default_factory=list)
    on_allowed: Callable[[ToolCall, str], None] | None = None
    mode: ModeGate = field(default_factory=PermissionMode)
    hooks: Any = None  # hooks.Hooks (its before_tool / after_tool), or None

    def add(self, texts: Iterable[str]) -> None:
        self.rules += [Rule.parse(text) for text in texts]

    def always_asks(self, call: ToolCall, arguments: dict[str, Any] | None = None) -> str | None:
        """Why ``call`` must be asked every time (a plug-in's reason), or None."""
        arguments = _arguments(call) if arguments is None else arguments
        for check in self.always_ask:
            reason = check(call, arguments)
            if reason:
                return reason
        return None

    def allowed_by(self, call: ToolCall, arguments: dict[str, Any] | None = None) -> str | None:
        """Why ``call`` may run without asking (the rule or plug-in that allows it), or None."""
        arguments = _arguments(call) if arguments is None else arguments
        if self.always_asks(call, arguments):
            return None
        for check in self.run_unasked:
            reason = check(call, arguments)
            if reason:
                return reason
        if call.name == "bash":
            command = arguments.get("command")
            if not isinstance(command, str):
                return None
            named = next((r.text for r in self.rules if r.names_command(command)), None)
            if named:
                return named
            # Every part of the command must be covered: `npm test && rm -rf x` is two commands.
            used = []
            for words in simple_parts(command) or [None]:
                rule = next((r for r in self.rules if words and r.covers_words(words)), None)
                if rule is None or writes_or_runs(words):
                    return None
                used.append(rule.text)
            return ", ".join(dict.fromkeys(used))
        if call.name in EDIT_TOOLS:
            relative = self._relative(arguments.get("path"))
            if relative is None:
                return None
            if self.mode.accepts_edits():
                return ACCEPT_EDITS_REASON
            return next((r.text for r in self.rules if r.covers_path(relative)), None)
        return next((r.text for r in self.rules if r.tool == call.name and r.pattern is None), None)

    def scopes(self, call: ToolCall) -> list[Scope]:
        """What "always" could allow for ``call``, narrowest first; none when it always asks or
        when no safe scope exists (a command the parser cannot see through)."""
        arguments = _arguments(call)
        if self.always_asks(call, arguments):
            return []
        if call.name == "bash":
            command = arguments.get("command")
            prefixes = command_prefixes(command)
            if prefixes:
                shown = " and ".join(f"`{p}`" for p in prefixes)
                return [Scope("a", tuple(f"Bash({p}:*)" for p in prefixes), f"{shown} commands")]
            exact = exact_rule(command)
            return [Scope("a", (exact,), "this exact command")] if exact else []
        if call.name in EDIT_TOOLS:
            relative = self._relative(arguments.get("path"))
            if relative is None:
                return []
            return [Scope("a", (f"Edit({relative})",), f"changes to {relative}"),
                    Scope("w", ("Edit",), "changes to any file in this workspace")]
        if call.name == "read_file":
            return []  # it asks only outside the workspace: "always" would open every file (/add-dir opens a folder)
        return [Scope("a", (call.name,), f"{call.name} calls")]

    def no_scope_reason(self, call: ToolCall) -> str:
        """Why :meth:`scopes` offers nothing for a command, said for the user."""
        return unscoped_reason(_arguments(call).get("command"))

    def remember(self, scope: Scope) -> None:
        """Answered "always": the scope's rules hold for the rest of the session."""
        self.add(scope.rules)

    def announce(self, call: ToolCall, reason: str) -> None:
        if self.on_allowed is not None:
            self.on_allowed(call, reason)

    def _relative(self, path: object) -> str | None:
        if not isinstance(path, str) or not path:
            return None
        root = self.workspace.resolve()
        target = (root / path).resolve() if not Path(path).is_absolute() else Path(path).resolve()
        try:
            return target.relative_to(root).as_posix()
        except ValueError:
            return None


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        arguments = call.parse_arguments()
    except ValueError:
        return {}
    return arguments if isinstance(arguments, dict) else {}


# --- commands -------------------------------------------------------------------------------------
def simple_parts(command: object) -> list[tuple[str | None, ...]] | None:
    """The words of each simple command in ``command`` as bash reads it (None for a word known only
    when it runs), or None when a prefix cannot be trusted to say what runs."""
    if not isinstance(command, str) or not command.strip():
        return None
    reading = shell_syntax.read(command)
    if reading.hidden is not None:
        return None
    if any(part[0] in WRAPPERS for part in reading.parts):
        return None
    return list(reading.parts)


def command_prefix(words: tuple[str | None, ...]) -> str | None:
    """The program and what it is asked to do (``npm test``, ``git status``, ``python -m pytest``,
    ``uv run pytest``), or None when no narrower scope than "anything" exists, or when the command
    writes files or runs programs through an option that scope would not cover."""
    program, rest = words[0], words[1:]
    if program in WRAPPERS or program is None or writes_or_runs(words):
        return None
    interpreter = program in INTERPRETERS or _PYTHON.fullmatch(program)
    if program in CODE_RUNNERS and not interpreter:
        return None  # awk, tar, ssh...: the program runs whatever its arguments say
    if interpreter:
        if rest[:1] == ("-m",) and len(rest) > 1 and _SUBCOMMAND.fullmatch(rest[1] or ""):
            scope = [program, "-m", rest[1]]  # a named tool (`python -m pytest`), as `npm test` is
        else:
            return None  # `python script.py`, `python -c …`, `perl -e`: any code at all
    elif program in SUBCOMMAND_PROGRAMS and rest and _SUBCOMMAND.fullmatch(rest[0] or ""):
        runs = rest[0] in RUNNERS and len(rest) > 1 and _SUBCOMMAND.fullmatch(rest[1] or "")
        scope = [program, *rest[:2 if runs else 1]]
    elif program in SUBCOMMAND_PROGRAMS and program not in TARGET_PROGRAMS:
        # No subcommand, or an option before it (`git -c core.pager=… log`, `docker -H …`): "always"
        # would allow the whole program, and no narrower scope exists.
        return None
    else:
        scope = [program]
    return None if None in scope else shlex.join(scope)


def exact_rule(command: object) -> str | None:
    """The rule that allows exactly ``command`` and nothing else (for a program that runs code by
    design), or None when its parse leaves what runs to run time or the text would read as a prefix
    rule."""
    if not isinstance(command, str) or not command.strip():
        return None
    text = command.strip()
    reading = shell_syntax.read(text)
    if reading.hidden is not None or any(None in part for part in reading.parts) or text.endswith(("*", ")")):
        return None
    rule = Rule.parse(f"Bash({text})")
    return rule.text if rule.prefix is None and rule.pattern == text else None


def command_prefixes(command: object) -> list[str]:
    """The prefix of each part of ``command``, in order, once each; empty when one has none."""
    parts = simple_parts(command)
    if not parts:
        return []
    prefixes = [command_prefix(part) for part in parts]
    if any(prefix is None for prefix in prefixes):
        return []
    return list(dict.fromkeys(prefixes))


def unscoped_reason(command: object) -> str:
    """Why no prefix can be remembered for ``command``: what the parse found, the program that runs
    another, or the option that writes files."""
    if not isinstance(command, str) or not command.strip():
        return "it is empty"
    reading = shell_syntax.read(command)
    if reading.hidden is not None:
        return f"it holds {reading.hidden}"
    for part in reading.parts:
        if part[0] in WRAPPERS:
            return f"{part[0]} runs what it is given"
        writes = writes_or_runs(part)
        if writes:
            return writes
        if command_prefix(part) is None:
            return f"{part[0]} runs any code it is given"
    return "no part of it names a program and what it does"


# --- settings -------------------------------------------------------------------------------------
def settings_rules(home: Path, workspace: Path, say: Say = quiet) -> list[str]:
    """``permissions.allow`` of the data folder's settings, then of a trusted workspace's (an
    untrusted repository must not allow itself anything). A malformed part is one ``say``."""
    from mini_letta.hooks import SETTINGS_FILE, WORKSPACE_SETTINGS, is_trusted

    found = _allow_list(Path(home) / SETTINGS_FILE, say)
    if is_trusted(home, workspace):
        found += _allow_list(Path(workspace) / WORKSPACE_SETTINGS, say, within=Path(workspace))
    return found


def _allow_list(path: Path, say: Say, within: Path | None = None) -> list[str]:
    data = read_workspace_json(path, SETTINGS_CAP_BYTES, within=within, say=say)
    if not isinstance(data, dict) or "permissions" not in data:
        return []
    permissions = data["permissions"]
    allow = permissions.get("allow", []) if isinstance(permissions, dict) else None
    if not isinstance(allow, list):
        say(f'Ignoring the permissions in {path}: "permissions" must be {{"allow": [rules]}}.')
        return []
    rules = []
    for entry in allow:
        try:
            rules.append(Rule.parse(entry).text)
        except ValueError as error:
            say(f"Ignoring a permission rule in {path}: {error}.")
    return rules
