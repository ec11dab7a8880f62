"""What a write_file or edit_file call would change, shown before the user allows it.

``difflib.unified_diff`` makes the diff (a well-kept library rather than our own); the lines are
coloured like ``git diff``: additions green, removals red, hunk headers cyan. The full path heads
it. A new file shows its first lines; a long diff is cut with a line saying how much was left out.
Everything shown came from the model or a file, so it goes through ``visible`` (no markup, no
control sequences).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.text import Text

from mini_letta.trust.terminal_text import visible
from mini_letta.toolbox.files import matched_edit, open_regular
from mini_letta.toolbox.outcome import ToolError
from mini_letta.wording import counted

MAX_DIFF_LINES = 60
NEW_FILE_LINES = 20
MAX_FILE_BYTES = 2 * 1024 * 1024  # larger files are not read to show a diff

_STYLES = {"+": "green", "-": "red", "@": "cyan"}


def change_preview(call: Any, resolve: Any) -> Group | None:
    """The coloured change ``call`` would make, or None when it is not a file change.

    ``resolve(path)`` gives the file's full path inside the workspace (raising if it is outside).
    """
    if call.name not in ("write_file", "edit_file"):
        return None
    try:
        args = call.parse_arguments()
        target = Path(resolve(args["path"]))
    except (ValueError, KeyError, TypeError, OSError):
        return None
    current, why = _current_text(target)
    if why:
        return Group(Text(f"{visible(str(target))}: {why}; no diff shown.", style="yellow"))
    if call.name == "write_file":
        new = args.get("content")
        if not isinstance(new, str):
            return None
        if current is None:
            return _new_file(target, new)
        return _diff(target, current, new)
    old_string, new_string = args.get("old_string"), args.get("new_string")
    if not isinstance(old_string, str) or not isinstance(new_string, str):
        return None
    if current is None or old_string == "":
        return _new_file(target, new_string) if old_string == "" else None
    old_string, new_string, count = matched_edit(current, old_string, new_string)
    if count == 1:
        return _diff(target, current, current.replace(old_string, new_string, 1))
    # The edit will fail (its text is missing or not unique); show what it asked to replace.
    return _diff(target, old_string, new_string,
                 note=f"old_string occurs {count} times in the file; the edit will fail.")


def _current_text(target: Path) -> tuple[str | None, str]:
    """(the file's text or None when it does not exist, why it cannot be shown)."""
    try:
        if not target.exists():
            return None, ""
        size = target.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, f"the file is too large to compare ({size:,} bytes)"
        with open_regular(target, target.name) as stream:  # a FIFO would block the prompt
            raw = stream.read()
    except ToolError as exc:
        return None, str(exc).split(";")[0]
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if b"\0" in raw[:8192]:
        return None, "the file looks binary"
    return raw.decode("utf-8", errors="replace"), ""


def _header(target: Path, what: str) -> Text:
    return Text.assemble((what + " ", "bold"), (visible(str(target)), "bold underline"))


def _new_file(target: Path, content: str) -> Group:
    lines = content.splitlines()
    shown = [Text("+" + visible(line), style="green") for line in lines[:NEW_FILE_LINES]]
    parts = [_header(target, f"New file ({counted(len(lines), 'line')}):"), *shown]
    if len(lines) > NEW_FILE_LINES:
        parts.append(Text(f"… and {counted(len(lines) - NEW_FILE_LINES, 'more line')}", style="dim"))
    return Group(*parts)


def _diff(target: Path, old: str, new: str, note: str = "") -> Group:
    name = visible(str(target))
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{name}", f"b/{name}", lineterm=""))
    if not lines:
        return Group(_header(target, "No change to"))
    body = [Text(visible(line), style=_STYLES.get(line[:1], "dim")) for line in lines[2:MAX_DIFF_LINES + 2]]
    parts = [_header(target, "Changes to"), *body]
    if len(lines) - 2 > MAX_DIFF_LINES:
        parts.append(Text(f"… and {len(lines) - 2 - MAX_DIFF_LINES} more lines of diff", style="dim"))
    if note:
        parts.append(Text(note, style="yellow"))
    return Group(*parts)
