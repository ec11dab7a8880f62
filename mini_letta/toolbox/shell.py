"""bash: run a command in the workspace, in its own process group, with bounded memory.

The output pipe is read as it fills; only the first and last part of it are kept, so a command
that prints gigabytes costs a few kilobytes here. The timeout counts from the start to the end of
the command, whether or not its output is still open; at the timeout or on Ctrl-C the whole process
group is stopped (SIGTERM, then SIGKILL), and with it every process the command started that left
the group (``setsid``): :mod:`processes` follows the tree while it runs. The result says which, if
any, could not be stopped. ``wrap`` puts the command inside a sandbox (:mod:`sandbox`), which also
chooses its environment (``env``; None: this process's).
"""

from __future__ import annotations

import math
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from mini_letta.settings import SETTINGS
from mini_letta.toolbox.outcome import NO_OUTPUT, ToolInterrupted, ToolOutcome
from mini_letta.toolbox.processes import ProcessTree, stop_tree
from mini_letta.wording import counted

KILL_GRACE = 2.0
# How long output may keep flowing after the shell itself exited (from its background children).
DRAIN_GRACE = 1.0
CHUNK = 65536
# How often the process tree is walked while a command runs, to remember children that leave it.
TREE_SCAN_INTERVAL = 0.2


class HeadTail:
    """Keeps the first ``head_max`` and the last ``tail_max`` bytes of a stream, and counts the rest."""

    def __init__(self, head_max: int, tail_max: int):
        self.head_max, self.tail_max = head_max, tail_max
        self.head, self.tail = bytearray(), bytearray()
        self.total = 0
        self.newlines = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_max > 0:
            self.tail += chunk
            if len(self.tail) > self.tail_max:
                del self.tail[:len(self.tail) - self.tail_max]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        if cut <= 0:
            return (self.head + self.tail).decode("utf-8", errors="replace")
        head, tail = bytes(self.head), bytes(self.tail)
        # Whole lines read better than fragments; trim to line boundaries when one is near.
        newline = head.rfind(b"\n")
        if newline >= len(head) // 2:
            head = head[:newline + 1]
        newline = tail.find(b"\n")
        if 0 <= newline < len(tail) // 2:
            tail = tail[newline + 1:]
        cut = self.total - len(head) - len(tail)
        cut_lines = self.newlines - head.count(b"\n") - tail.count(b"\n")
        note = (f"\n[… {cut:,} bytes ({counted(cut_lines, 'line')}) cut from the middle of the output; to see them, "
                "redirect the output to a file and read it with read_file or grep, or pipe through head/tail …]\n")
        return head.decode("utf-8", errors="replace") + note + tail.decode("utf-8", errors="replace")


def _survivors_note(survivors: dict[int, str]) -> str:
    listed = ", ".join(f"{pid} ({name})" for pid, name in sorted(survivors.items())[:5])
    more = f" and {len(survivors) - 5} more" if len(survivors) > 5 else ""
    return (f"{len(survivors)} of its processes could not be stopped and are still running: {listed}{more}. "
            "They may belong to another user; `kill -9` them if they should not run")


def _exit_note(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"[killed by {name}]"
    return f"[exit code {code}]"


def run_bash(command: str, cwd: Path, timeout: float, max_chars: int,
             wrap: Callable[[list[str]], list[str]] | None = None, follow_tree: bool = True,
             env: dict[str, str] | None = None) -> ToolOutcome:
    if not math.isfinite(timeout) or timeout <= 0:  # the argument check refuses these; never run unbounded
        timeout = SETTINGS.tools.shell_timeout_seconds
    timeout = min(timeout, SETTINGS.tools.shell_max_timeout_seconds)
    half = max(0, (max_chars - SETTINGS.tools.shell_note_chars) // 2)
    output = HeadTail(half, half)
    started = time.monotonic()
    argv = ["bash", "-c", command]
    process = subprocess.Popen(wrap(argv) if wrap else argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    assert process.stdout is not None
    fd = process.stdout.fileno()
    tree = ProcessTree(process.pid, fd) if follow_tree else None
    scanned = started
    stopped: str | None = None
    survivors: dict[int, str] = {}
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            reading = True
            shell_exited: float | None = None
            # The deadline holds whatever the pipe does: a command may close its output
            # (`exec >/dev/null 2>&1; sleep 600`) and keep running, so the loop waits on the process
            # too, never on the pipe alone.
            while True:
                now = time.monotonic()
                if tree is not None and now - scanned >= TREE_SCAN_INTERVAL:
                    tree.scan()
                    scanned = now
                left = timeout - (now - started)
                if left <= 0:
                    stopped = "timeout"
                    break
                if shell_exited is None and process.poll() is not None:
                    shell_exited = now
                if shell_exited is not None and not reading:
                    break
                if shell_exited is not None and now - shell_exited >= DRAIN_GRACE:
                    stopped = "background"
                    break
                if not reading:
                    try:
                        process.wait(timeout=min(0.25, left))
                    except subprocess.TimeoutExpired:
                        pass
                    continue
                if selector.select(timeout=min(0.25, left)):
                    chunk = os.read(fd, CHUNK)
                    if chunk:
                        output.feed(chunk)
                    else:
                        selector.unregister(fd)
                        reading = False
        if stopped:
            survivors = stop_tree(process.pid, tree, process.poll, KILL_GRACE)
        code = process.wait()
    except KeyboardInterrupt:
        survivors = stop_tree(process.pid, tree, process.poll, KILL_GRACE)
        process.wait()
        elapsed = time.monotonic() - started
        fate = _survivors_note(survivors) if survivors else "the command and its child processes were stopped"
        text = output.text() + f"\n[interrupted by the user after {elapsed:.1f} s; {fate}]"
        raise ToolInterrupted(ToolOutcome(text.lstrip("\n"), is_error=True)) from None
    finally:
        process.stdout.close()
    text = output.text() or NO_OUTPUT
    if not text.endswith("\n"):
        text += "\n"
    if stopped == "timeout":
        fate = (_survivors_note(survivors) if survivors
                else "the command and its child processes were killed")
        return ToolOutcome(text + f"[timed out after {timeout:g} s; {fate}. Pass a larger timeout (at most "
                           f"{SETTINGS.tools.shell_max_timeout_seconds}) or run it in the background with output to a file]", is_error=True)
    if stopped == "background":
        fate = _survivors_note(survivors) if survivors else "they were stopped"
        text += (f"[the shell exited but background processes kept its output open; {fate}. "
                 "To keep one running, redirect its output: nohup cmd > log 2>&1 &]\n")
    return ToolOutcome(text + _exit_note(code), is_error=code != 0)
