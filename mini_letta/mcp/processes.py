"""The processes and logs of MCP servers: the process groups the SDK starts stdio servers in, stopped
with their children; the SDK's own logging routed to a file instead of the screen."""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path


def group_leaders_started_by_us() -> set[int]:
    """Our child processes that lead a process group of their own (as the SDK starts a stdio
    server), read from /proc; empty where there is none."""
    me, found = os.getpid(), set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[1] == str(me) and fields[2] == entry:
            found.add(int(entry))
    return found


def stop_groups(groups: set[int]) -> None:
    """SIGTERM every group still alive, SIGKILL what is left after 2 s."""
    alive = set()
    for group in groups:
        try:
            os.killpg(group, signal.SIGTERM)
            alive.add(group)
        except OSError:
            pass
    deadline = time.monotonic() + 2
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        for group in list(alive):
            try:
                os.killpg(group, 0)
            except OSError:
                alive.discard(group)
    for group in alive:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass


def route_sdk_logging(path: Path) -> None:
    """The SDK logs failures (a bad line from a server, a broken pipe) with ``logging``; without a
    handler Python prints warnings on stderr, over the REPL. They go to a file instead."""
    for name in ("mcp", "httpx2", "httpx"):
        logger = logging.getLogger(name)
        ours = [handler for handler in logger.handlers if getattr(handler, "_mini_letta", False)]
        if ours and ours[0].baseFilename == os.path.abspath(path):
            continue
        for handler in ours:  # another data folder's (MINI_LETTA_HOME changed within the process)
            logger.removeHandler(handler)
            handler.close()
        handler = logging.FileHandler(path, encoding="utf-8", delay=True)
        handler._mini_letta = True
        logger.addHandler(handler)
        logger.propagate = False
