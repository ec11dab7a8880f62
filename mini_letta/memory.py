"""Core memory: a few small text blocks, always in the system prompt, that the agent edits itself.

This is Letta's idea. Blocks are stored per workspace in ``home()/memory/<name>-<hash>.json``.
Every edit is checked against the block's character limit (the model is told exactly how far over
it would go) and saved at once with an atomic replace, so a crash never leaves half a file.

Several processes may share one workspace's memory (two terminals, a ``-p`` script beside the REPL).
So an edit is applied to what the file holds at that moment, not to the copy loaded at start-up:
under an exclusive lock on the memory folder it re-reads the file, applies the append or replace and
writes it back. Two processes that remember different facts at once both keep theirs.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import html
import json
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from mini_letta.notices import Say, quiet
from mini_letta import config
from mini_letta.messages import ToolSpec
from mini_letta.settings import SETTINGS
from mini_letta.trust.redact import redact
from mini_letta.resources import prompt, tool_spec

FORMAT = 1
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


@dataclass
class Block:
    label: str
    description: str
    value: str = ""
    limit: int = SETTINGS.memory_block_chars


def default_blocks() -> list[Block]:
    return [
        Block("persona", "Who you are: your role, tone and working habits.",
              "I am mini-letta, a careful terminal coding agent. I read before I edit, keep changes small, "
              "and say plainly what I did and what I could not do.", SETTINGS.memory_block_chars),
        Block("human", "What you know about the user: name, preferences, how they like to work.", "",
              SETTINGS.memory_block_chars),
        Block("project", "Facts about this workspace: layout, build and test commands, conventions, pitfalls.",
              "", SETTINGS.memory_project_block_chars),
    ]


def workspace_key(workspace: Path | str) -> str:
    """A readable, collision-safe file name for a workspace: ``<folder name>-<10 hex of its path>``."""
    resolved = Path(workspace).resolve()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", resolved.name).strip("-.")[:40] or "root"
    return f"{name}-{hashlib.sha256(str(resolved).encode('utf-8')).hexdigest()[:10]}"


def memory_path(workspace: Path | str, home: Path | None = None) -> Path:
    return (home if home is not None else config.home()) / "memory" / f"{workspace_key(workspace)}.json"


def _parse(data: Any) -> list[Block]:
    """Blocks from the stored JSON; ValueError naming the first problem."""
    if not isinstance(data, dict) or not isinstance(data.get("blocks"), list):
        raise ValueError("expected an object with a 'blocks' list")
    blocks: list[Block] = []
    for item in data["blocks"]:
        if not isinstance(item, dict):
            raise ValueError("a block is not an object")
        label, value, limit = item.get("label"), item.get("value", ""), item.get("limit")
        description = item.get("description", "")
        if not isinstance(label, str) or not _LABEL.match(label):
            raise ValueError(f"bad block label {label!r}")
        if not isinstance(value, str) or not isinstance(description, str):
            raise ValueError(f"block {label!r}: value and description must be text")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"block {label!r}: limit must be a positive whole number")
        if any(b.label == label for b in blocks):
            raise ValueError(f"block {label!r} appears twice")
        blocks.append(Block(label, description, value, limit))
    return blocks


class CoreMemory:
    """The blocks and their file; what goes wrong reading or saving it is said through ``say``."""

    def __init__(self, blocks: list[Block], path: Path | None = None, say: Say = quiet):
        self.blocks = {b.label: b for b in blocks}
        self.path = path
        self.say = say
        self.warnings: list[str] = []

    # --- storage --------------------------------------------------------------------------------
    @classmethod
    def for_workspace(cls, workspace: Path | str, home: Path | None = None, say: Say = quiet) -> CoreMemory:
        return cls.load(memory_path(workspace, home), say)

    @classmethod
    def load(cls, path: Path, say: Say = quiet) -> CoreMemory:
        """Blocks from ``path``; defaults when it is missing. Never raises for a bad file."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(default_blocks(), path, say)
        except (OSError, UnicodeDecodeError) as exc:
            memory = cls(default_blocks(), None, say)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            # Without a path, edits stay in memory: saving could overwrite a file we merely failed to read.
            memory._warn(f"Cannot read core memory {path}: {reason}; using defaults, and edits will not be saved.")
            return memory
        try:
            stored = _parse(json.loads(text))
        except ValueError as exc:
            aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
            memory = cls(default_blocks(), path, say)
            try:
                os.replace(path, aside)
            except OSError as move_error:
                memory.path = None
                memory._warn(f"Core memory {path} is damaged ({exc}) and could not be moved aside "
                             f"({move_error.strerror}); using defaults, and edits will not be saved.")
                return memory
            memory._warn(f"Core memory {path} is damaged ({exc}); it was kept as {aside.name} and defaults are in use.")
            return memory
        labels = {b.label for b in stored}
        blocks = stored + [b for b in default_blocks() if b.label not in labels]
        return cls(blocks, path, say)

    def save(self) -> None:
        """Write atomically (temp file, fsync, replace). Raises OSError."""
        if self.path is None:
            raise OSError("core memory has no file to save to")
        config.private_folder(self.path.parent)
        # The file outlives the session and may be shared; a key the model was told to remember is
        # masked on disk (this session keeps the value it was given).
        data = {"format": FORMAT, "blocks": redact([asdict(b) for b in self.blocks.values()])}
        fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(data, file, ensure_ascii=False, indent=2)
                file.write("\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, self.path)
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise

    def _warn(self, text: str) -> None:
        self.warnings.append(text)
        self.say(text)

    # --- reading --------------------------------------------------------------------------------
    def labels(self) -> list[str]:
        return list(self.blocks)

    def get(self, label: str) -> Block:
        block = self.blocks.get(label)
        if block is None:
            raise ValueError(f"no core memory block {label!r}; blocks are: {', '.join(self.blocks)}")
        return block

    def render(self, compact: bool = False) -> str:
        """The block for the system prompt: stable order, each block with its size and limit.
        ``compact`` (the compact floor of a small window, which offers no memory tools): only the
        blocks that hold something, without the guide to editing them."""
        if compact and not any(block.value for block in self.blocks.values()):
            return ""
        parts = ["<core_memory>"] + ([] if compact else [prompt("memory_tools").strip()])
        for block in self.blocks.values():
            if compact:
                if block.value:
                    parts += [f"<{block.label}>", block.value, f"</{block.label}>"]
                continue
            description = html.escape(block.description, quote=True)
            parts.append(f'<{block.label} chars="{len(block.value)}/{block.limit}" description="{description}">')
            if block.value:
                parts.append(block.value)
            parts.append(f"</{block.label}>")
        parts.append("</core_memory>")
        return "\n".join(parts)

    # --- editing --------------------------------------------------------------------------------
    def append(self, label: str, content: str) -> str:
        self.get(label)
        if not content.strip():
            raise ValueError("content is empty; give the text to add")

        def appended(block: Block) -> tuple[str, str]:
            separator = "\n" if block.value and not block.value.endswith("\n") else ""
            return block.value + separator + content, ""

        return self._edit(label, appended)

    def replace(self, label: str, old_content: str, new_content: str) -> str:
        self.get(label)
        if not old_content:
            raise ValueError("old_content is empty; copy the exact text to replace from the block")

        def replaced(block: Block) -> tuple[str, str]:
            count = block.value.count(old_content)
            if count == 0:
                # Another process may have changed the block since the model last saw it: show what it
                # holds now, so the next attempt can copy from the real text.
                current = f"its current text is:\n{block.value}" if block.value else "it is empty now"
                raise ValueError(f"old_content does not occur in core memory block {label!r}; copy it exactly "
                                 f"from the block ({current})")
            note = f" ({count} occurrences replaced)" if count > 1 else ""
            return block.value.replace(old_content, new_content), note

        return self._edit(label, replaced)

    def set_value(self, label: str, value: str) -> str:
        """Replace a block's whole value (``/memory edit``), with the same limit check."""
        return self._edit(label, lambda block: (value, ""))

    def _edit(self, label: str, change: Callable[[Block], tuple[str, str]]) -> str:
        """Apply ``change`` (block -> new value, note) to the block as the file holds it now, and save."""
        with self._locked():
            self._merge_from_file()
            block = self.get(label)
            value, note = change(block)
            return self._commit(block, value, note)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Exclusive access to the memory folder between re-reading the file and replacing it.

        The folder itself is locked (flock works on a directory), so no lock file is left beside the
        memory files. Held for milliseconds, so waiting is right; the OS releases it if this process
        dies. Without a folder or a usable lock the edit goes on alone, and save() reports why."""
        descriptor = None
        if self.path is not None:
            try:
                config.private_folder(self.path.parent)
                descriptor = os.open(self.path.parent, os.O_RDONLY)
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            except OSError:
                pass
        try:
            yield
        finally:
            if descriptor is not None:
                os.close(descriptor)

    def _merge_from_file(self) -> None:
        """Take each block as the file holds it now (another process may have edited it).

        A block whose stored value is just this session's value with secrets masked keeps this
        session's unmasked copy; a file that cannot be read or parsed leaves the blocks as they are."""
        if self.path is None:
            return
        try:
            stored = _parse(json.loads(self.path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValueError):
            return
        for block in stored:
            mine = self.blocks.get(block.label)
            if mine is not None and mine.value != block.value and redact(mine.value) == block.value:
                block.value = mine.value
            self.blocks[block.label] = block

    def _commit(self, block: Block, value: str, note: str = "") -> str:
        size = len(value)
        # A block already over its limit (edited by hand) may still shrink.
        if size > block.limit and size > len(block.value):
            raise ValueError(
                f"core memory block {block.label!r} would be {size:,} chars, {size - block.limit:,} over its "
                f"{block.limit:,} limit; shorten or replace older content"
            )
        block.value = value
        confirmation = f"core memory block {block.label!r} updated{note}: now {size:,}/{block.limit:,} chars"
        try:
            self.save()
        except OSError as exc:
            reason = exc.strerror or str(exc)
            self.say(f"Core memory was changed but not saved: {reason}.")
            confirmation += f" (for this session only: saving failed, {reason})"
        return confirmation


MemoryEditHook = Callable[[str, str, int], None]
ToolHandler = Callable[[dict], str]


def memory_tools(memory: CoreMemory, on_edit: MemoryEditHook | None = None) -> list[tuple[ToolSpec, ToolHandler]]:
    """The two memory tools, each with a handler ``(args) -> str`` that raises ValueError on failure.

    ``on_edit(label, action, chars)`` runs after each successful edit (the agent logs it to the
    session); ``action`` is ``"append"`` or ``"replace"``.
    """

    def text_arg(args: dict, name: str, required: bool = True) -> str:
        value = args.get(name)
        if value is None and not required:
            return ""
        if not isinstance(value, str):
            raise ValueError(f"argument {name!r} must be a string")
        return value

    def notify(label: str, action: str) -> None:
        if on_edit is not None:
            on_edit(label, action, len(memory.get(label).value))

    def append(args: dict) -> str:
        label = text_arg(args, "label")
        result = memory.append(label, text_arg(args, "content"))
        notify(label, "append")
        return result

    def replace(args: dict) -> str:
        label = text_arg(args, "label")
        result = memory.replace(label, text_arg(args, "old_content"), text_arg(args, "new_content", required=False))
        notify(label, "replace")
        return result

    tools = []
    for name, handler in (("core_memory_append", append), ("core_memory_replace", replace)):
        spec = json.loads(json.dumps(tool_spec(name)))  # a private copy: the cached spec is shared
        spec["parameters"]["properties"]["label"]["enum"] = memory.labels()
        tools.append((ToolSpec(spec["name"], spec["description"], spec["parameters"]), handler))
    return tools
