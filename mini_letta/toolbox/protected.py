"""Files that change what runs: a write or an edit to them is asked about every time.

mini-letta's own configuration (``.mini-letta/`` in the workspace, ``.mcp.json``, the data folder)
and the scripts its hooks run decide which commands run later without a question: a
``PreCompact`` hook in ``.mini-letta/settings.json`` runs at the next compaction, an MCP server in
``.mcp.json`` at the next start. So "always" for ``write_file`` must not cover them: the approver is
asked again, with the reason (:func:`ask`). ``--yolo`` still allows them: it already lets the model
run any command, and this rule adds nothing there.
"""

from __future__ import annotations

import inspect
import shlex
from pathlib import Path

from mini_letta import config
from mini_letta.messages import ToolCall
from mini_letta.toolbox.approval import Approver

WRITING_TOOLS = ("write_file", "edit_file")


def _within(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def _hook_scripts(workspace: Path, home: Path) -> dict[Path, str]:
    """The files the hooks of both settings files name (``./hooks/pre.sh``, ``python x.py``), with
    the event that runs them: trusted or not yet, a script a hook names is code that will run."""
    from mini_letta.hooks import SETTINGS_FILE, WORKSPACE_SETTINGS, _commands
    from mini_letta.workspace_files import read_workspace_json

    scripts: dict[Path, str] = {}
    for settings in (home / SETTINGS_FILE, workspace / WORKSPACE_SETTINGS):
        # Quietly: a broken file was reported at start-up, and is not worth a notice per write.
        data = read_workspace_json(settings)
        if not isinstance(data, dict):
            continue
        for hook in _commands(data.get("hooks"), settings, problems=[]):
            try:
                words = shlex.split(hook.command)
            except ValueError:
                words = hook.command.split()
            for word in words:
                if "/" in word or "." in word:
                    try:
                        scripts.setdefault((workspace / Path(word).expanduser()).resolve(), hook.event)
                    except (ValueError, OSError, RuntimeError):  # a NUL, a loop: not a script path
                        continue
    return scripts


def reason(tool: str, path: Path, workspace: Path, home: Path | None = None) -> str | None:
    """Why a write of ``tool`` to ``path`` (resolved, inside ``workspace``) is asked about every
    time, or None for an ordinary file."""
    if tool not in WRITING_TOOLS:
        return None
    workspace = workspace.resolve()
    home = (home or config.home()).expanduser().resolve()
    if _within(path, workspace / ".mini-letta"):
        return "it is mini-letta's configuration for this folder (.mini-letta/): its hooks run commands"
    if path == workspace / ".mcp.json":
        return "it is .mcp.json: the MCP servers it names are started as commands"
    if _within(path, home):
        return "it is in mini-letta's data folder (settings, hooks, sessions)"
    event = _hook_scripts(workspace, home).get(path)
    if event:
        return f"a {event} hook runs it"
    return None


def ask(approver: Approver, call: ToolCall, summary: str, why: str | None) -> bool:
    """Ask ``approver`` about ``call``. For a protected file (``why`` given), an approver that takes
    a ``protected`` keyword (the REPL's) is told why, and must ask even after "always"; any other
    (``--yolo``'s, print mode's refusal) decides as for any write, with the reason in the summary."""
    if why is None:
        return approver(call, summary)
    try:
        takes_reason = "protected" in inspect.signature(approver).parameters
    except (TypeError, ValueError):
        takes_reason = False
    if takes_reason:
        return approver(call, summary, protected=why)
    return approver(call, f"{summary} ({why})")
