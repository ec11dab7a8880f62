"""read_file, write_file and edit_file (through an editor's buffers when one holds the files: ``editor.py``).

Reading streams line by line, so a 10 MB file costs only the lines shown; a line is read at most
the bytes of ``SETTINGS.tools.read_line_chars`` characters at a time and the rest of it skipped, so
even a file without newlines is cheap.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from mini_letta.settings import SETTINGS
from mini_letta.toolbox.editor import Editor
from mini_letta.toolbox.outcome import ToolError, human_size
from mini_letta.toolbox.workspace import Workspace
from mini_letta.wording import counted
from mini_letta.workspace_files import UTF8_MAX_BYTES

SNIFF_BYTES = 8192


def binary_reason(head: bytes) -> str | None:
    """Why the first bytes of a file look binary, or None for text."""
    if b"\0" in head:
        return "it contains NUL bytes"
    try:
        head.decode("utf-8")
        return None
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 3:  # a character cut off by the sniff window
            return None
    controls = sum(1 for b in head if b < 32 and b not in b"\t\n\r\f\b\x1b")
    return "it is mostly non-text bytes" if controls > len(head) * 0.1 else None


def iter_lines(stream: BinaryIO, max_bytes: int) -> Iterator[tuple[bytes, int]]:
    """(the first ``max_bytes`` of each line, the line's full length in bytes), in bounded memory."""
    while True:
        piece = stream.readline(max_bytes)
        if not piece:
            return
        length = len(piece)
        if len(piece) == max_bytes and not piece.endswith(b"\n"):
            while True:
                more = stream.readline(65536)
                length += len(more)
                if not more or more.endswith(b"\n"):
                    break
        yield piece, length


def _line_text(piece: bytes) -> str:
    return piece.decode("utf-8", errors="replace").rstrip("\n").rstrip("\r")


def special_kind(mode: int) -> str | None:
    """What a file that is neither a regular file nor a folder is ("a FIFO"), or None."""
    for test, kind in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return kind
    return None


def _not_regular(shown: str, kind: str, verb: str) -> ToolError:
    return ToolError(f"{shown} is {kind}, not a regular file; it was not {verb}. Tools work on regular files only.")


def refuse_special(target: Path, shown: str, verb: str = "changed") -> None:
    try:
        kind = special_kind(target.stat().st_mode)
    except OSError:
        return
    if kind:
        raise _not_regular(shown, kind, verb)


def open_regular(target: Path, shown: str) -> BinaryIO:
    """Open a regular file for reading; anything else is refused at once.

    Opening a FIFO for reading waits for a writer, and reading a device may never end. The path is
    checked, then opened without blocking and checked again through the open descriptor, so a file
    swapped in between is refused too.
    """
    refuse_special(target, shown, "read")  # a socket cannot even be opened
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    try:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind:  # swapped for a special file after the check above
            raise _not_regular(shown, kind, "read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _existing_file(ws: Workspace, path: str) -> Path:
    target = ws.resolve(path)
    if target.is_dir():
        raise ToolError(f"{path} is a directory; list it with glob (e.g. '{path.rstrip('/')}/*') or bash ls.")
    if not target.exists():
        raise ToolError(f"{path} does not exist; find files with glob or grep.")
    return target


def read_file(ws: Workspace, path: str, offset: int = 1, limit: int = SETTINGS.tools.read_lines, *,
              max_chars: int, editor: Editor | None = None) -> str:
    """``path``'s numbered lines; with an ``editor``, its text as the editor has it (an unsaved buffer)."""
    target = _existing_file(ws, path)
    with open_regular(target, path) as disk:
        size = os.fstat(disk.fileno()).st_size
        why = binary_reason(disk.read(SNIFF_BYTES))
        if why:
            raise ToolError(f"{path} looks binary ({why}, {human_size(size)}); not shown.")
        disk.seek(0)
        held = editor.read_text(target) if editor is not None else None
        stream = disk if held is None else io.BytesIO(held.encode("utf-8"))
        if held is not None:
            size = len(held.encode("utf-8"))
        budget = max(0, max_chars - SETTINGS.tools.read_note_chars)
        shown: list[str] = []
        used = 0
        last = 0  # the last line number read, shown or not
        more = capped = long_lines = False
        line_bytes = UTF8_MAX_BYTES * SETTINGS.tools.read_line_chars
        for number, (piece, length) in enumerate(iter_lines(stream, line_bytes), start=1):
            if number < offset:
                last = number
                continue
            if len(shown) == limit:
                more = True
                break
            text = _line_text(piece)
            if len(text) > SETTINGS.tools.read_line_chars or length > len(piece):
                text = text[:SETTINGS.tools.read_line_chars] + f"… [line cut: {length:,} bytes]"
                long_lines = True
            entry = f"{number:>6}\t{text}"
            if used + len(entry) + 1 > budget:
                if not shown:  # one line alone is over the cap: show what fits of it
                    shown.append(entry[:budget])
                    last = number
                more = capped = True
                break
            shown.append(entry)
            used += len(entry) + 1
            last = number
    if not shown:
        if last == 0:
            return f"{path} is empty."
        return f"{path} has {counted(last, 'line')}; offset {offset:,} is past the end."
    notes = []
    if capped:
        notes.append(f"[output limit reached after line {last:,}; call read_file with offset={last + 1} "
                     "and a smaller limit to continue]")
    elif more:
        notes.append(f"[showing lines {offset:,}-{last:,} of a {human_size(size)} file; more follows: "
                     f"call read_file with offset={last + 1} to continue]")
    if long_lines:
        notes.append(f"[lines longer than {SETTINGS.tools.read_line_chars} characters were cut; "
                     "see them with bash, e.g. cut -c2001-4000]")
    return "\n".join(shown + notes)


def count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def write_file(ws: Workspace, path: str, content: str, editor: Editor | None = None) -> tuple[str, str]:
    """Returns (message, workspace-relative path written); through ``editor`` when it takes the write."""
    target = ws.resolve(path)
    if target.is_dir():
        raise ToolError(f"{path} is a directory; give a file path.")
    refuse_special(target, path)
    existed = target.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8")
    _write(target, content, editor)
    rel = ws.relative(target)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {rel}: {counted(count_lines(content), 'line')}, {counted(len(data), 'byte')}.", rel


def matched_edit(text: str, old_string: str, new_string: str) -> tuple[str, str, int]:
    """(old, new, occurrences of old in ``text``) as the edit applies them; the approval preview
    uses the same rule, so it never says an edit will fail that then succeeds."""
    count = text.count(old_string)
    if count == 0 and "\r\n" in text and "\n" in old_string:
        # The model sees and writes "\n"; a file with Windows line endings keeps them.
        old_string = old_string.replace("\r\n", "\n").replace("\n", "\r\n")
        new_string = new_string.replace("\r\n", "\n").replace("\n", "\r\n")
        count = text.count(old_string)
    return old_string, new_string, count


def check_edit_target(ws: Workspace, path: str, old_string: str) -> Path:
    """The file an edit changes; an edit that can only fail (a folder, a missing file) fails here,
    before anyone is asked to allow it."""
    target = ws.resolve(path)
    if target.is_dir():
        raise ToolError(f"{path} is a directory; give a file path.")
    if old_string != "" and not target.exists():
        raise ToolError(f"{path} does not exist; create it with write_file (or edit_file with an empty old_string).")
    return target


def edit_file(ws: Workspace, path: str, old_string: str, new_string: str,
              editor: Editor | None = None) -> tuple[str, str]:
    """Returns (message, workspace-relative path edited); the text read and written through ``editor``
    when it holds the file."""
    target = check_edit_target(ws, path, old_string)
    refuse_special(target, path)
    rel = ws.relative(target)
    if old_string == "":
        if target.exists() and target.stat().st_size > 0:
            raise ToolError(f"old_string is empty but {path} already exists and is not empty; give the exact "
                            "text to replace, or use write_file to replace the whole file.")
        target.parent.mkdir(parents=True, exist_ok=True)
        _write(target, new_string, editor)
        return f"Created {rel}: {counted(count_lines(new_string), 'line')}.", rel
    size = target.stat().st_size
    if size > SETTINGS.tools.edit_max_bytes:
        raise ToolError(f"{path} is too large to edit ({human_size(size)}); change it with bash instead.")
    with open_regular(target, path) as stream:
        raw = stream.read()
    why = binary_reason(raw[:SNIFF_BYTES])
    if why:
        raise ToolError(f"{path} looks binary ({why}); edit_file only changes text files.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{path} is not valid UTF-8; edit_file would corrupt it, so change it with bash.") from None
    held = editor.read_text(target) if editor is not None else None
    text = text if held is None else held
    if old_string == new_string:
        raise ToolError("old_string and new_string are identical; there is nothing to change.")
    old_string, new_string, count = matched_edit(text, old_string, new_string)
    if count == 0:
        raise ToolError(f"old_string was not found in {path} (0 occurrences); copy it exactly from read_file "
                        "output, without the line-number prefix, with the same whitespace and indentation.")
    if count > 1:
        lines, start = [], 0
        while len(lines) < 10 and (found := text.find(old_string, start)) != -1:
            lines.append(text.count("\n", 0, found) + 1)
            start = found + 1
        where = ", ".join(map(str, lines)) + (", …" if count > len(lines) else "")
        raise ToolError(f"old_string occurs {count} times in {path} (at lines {where}); include more "
                        "surrounding lines so that it matches exactly once.")
    index = text.index(old_string)
    _write(target, text.replace(old_string, new_string, 1), editor)
    line = text.count("\n", 0, index) + 1
    return (f"Edited {rel}: replaced {counted(count_lines(old_string), 'line')} at line {line} "
            f"with {counted(count_lines(new_string), 'line')}."), rel


def _write(target: Path, text: str, editor: Editor | None) -> None:
    if editor is None or not editor.write_text(target, text):
        target.write_bytes(text.encode("utf-8"))
