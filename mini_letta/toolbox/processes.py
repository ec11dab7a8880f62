"""Finding and stopping every process a command started, not only its process group.

A command's children can leave its group (``setsid``, ``nohup setsid``) and, once their parent has
exited, are re-parented away from it, so neither the group nor a walk of parent links at the end
finds them. ``ProcessTree`` therefore walks ``/proc`` while the command runs and remembers each
descendant (by pid and start time, so a reused pid is never mistaken for one of them); at the end it
also looks for any process still holding the command's output pipe. On a system without ``/proc``
it knows only the group, and says so by returning no survivors it cannot see.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")


def _stat(pid: int) -> tuple[int, int, str, str] | None:
    """(parent pid, start time, state, name) of a live process, or None."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    name_end = raw.rfind(")")
    name = raw[raw.find("(") + 1:name_end]
    fields = raw[name_end + 2:].split()
    # fields[0] is the state, [1] the parent pid, [19] the start time (fields 3, 4 and 22 of proc(5)).
    return int(fields[1]), int(fields[19]), fields[0], name


def _pids() -> list[int]:
    try:
        return [int(entry) for entry in os.listdir(PROC) if entry.isdigit()]
    except OSError:
        return []


class ProcessTree:
    """The processes descended from ``root_pid``, remembered across re-parenting."""

    def __init__(self, root_pid: int, pipe_fd: int | None = None):
        self.root_pid = root_pid
        self.known: dict[int, tuple[int, str]] = {}  # pid -> (start time, name)
        self._pipe = None
        if pipe_fd is not None:
            try:
                self._pipe = f"pipe:[{os.fstat(pipe_fd).st_ino}]"
            except OSError:
                pass

    def scan(self) -> None:
        """Add the current descendants of the root and of every process already known."""
        children: dict[int, list[int]] = {}
        stats = {}
        for pid in _pids():
            stat = _stat(pid)
            if stat is not None:
                stats[pid] = stat
                children.setdefault(stat[0], []).append(pid)
        roots = [self.root_pid] + [pid for pid, (start, _) in self.known.items()
                                   if pid in stats and stats[pid][1] == start]
        queue = list(roots)
        while queue:
            for child in children.get(queue.pop(), ()):
                if child not in self.known or self.known[child][0] != stats[child][1]:
                    self.known[child] = (stats[child][1], stats[child][3])
                    queue.append(child)

    def _holders(self) -> dict[int, tuple[int, str]]:
        """Processes (other than us) with the command's output pipe open: whoever is left of it."""
        if self._pipe is None:
            return {}
        found = {}
        for pid in _pids():
            if pid == os.getpid():
                continue
            try:
                fds = os.listdir(PROC / str(pid) / "fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(PROC / str(pid) / "fd" / fd) == self._pipe:
                        stat = _stat(pid)
                        if stat is not None:
                            found[pid] = (stat[1], stat[3])
                        break
                except OSError:
                    continue
        return found

    def add_pipe_holders(self) -> None:
        self.known.update(self._holders())

    def alive(self) -> dict[int, str]:
        """pid -> name of the known processes still running (a zombie counts as gone)."""
        living = {}
        for pid, (start, name) in self.known.items():
            stat = _stat(pid)
            if stat is not None and stat[1] == start and stat[2] not in ("Z", "X"):
                living[pid] = name
        return living

    def signal_all(self, signum: int) -> None:
        for pid in self.alive():
            try:
                os.kill(pid, signum)
            except OSError:
                pass


def stop_tree(pgid: int, tree: ProcessTree | None, reap, grace: float) -> dict[int, str]:
    """SIGTERM the group and every known descendant, SIGKILL what is left after ``grace`` seconds;
    returns pid -> name of the processes still running after that (none, when all went)."""
    def group_alive() -> bool:
        try:
            os.killpg(pgid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def everyone(signum: int) -> None:
        try:
            os.killpg(pgid, signum)
        except (ProcessLookupError, PermissionError):
            pass
        if tree is not None:
            tree.scan()
            tree.add_pipe_holders()
            tree.signal_all(signum)

    everyone(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap()  # a dead but unreaped leader would keep the group "alive"
        if not group_alive() and (tree is None or not tree.alive()):
            return {}
        time.sleep(0.05)
    everyone(signal.SIGKILL)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        reap()
        if not group_alive() and (tree is None or not tree.alive()):
            return {}
        time.sleep(0.05)
    if tree is None:
        return {}
    tree.add_pipe_holders()
    return tree.alive()
