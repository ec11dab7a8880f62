"""From the first Enter in the REPL to the request on the wire, as a user starting mini-letta feels it.

Run from the repository root:  python -m benchmarks.bench_first_answer [--repeats 5]

``mini-letta`` runs in a pseudo-terminal with the OpenAI provider pointed at a local HTTP server
(``benchmarks/wire_fake.py``, 127.0.0.1). Once the prompt is drawn, "hello there" and Enter are
typed, either at once (a user who types as soon as the prompt is there) or after 3 s (the agent
long since built in the background); the server notes when the request's body arrived. Printed:
prompt drawn, Enter → request on the wire, Enter → the reply's text on the terminal, each a median
and next to ``python -c pass`` measured in the same run. Issue 36 asks for Enter → wire under
100 ms on a quiet machine. No figure is an assertion.
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from benchmarks.bench_startup import (CURSOR_POSITION_QUERY, PROMPT, _environment, mini_letta_command,
                                      repl_in_pty, time_process)
from benchmarks.wire_fake import WireFake

REPEATS = 5
SETTLED_SECONDS = 3.0
REPLY = "Hello! Which file shall we look at?"
TIMEOUT_SECONDS = 30.0


def _read_until(master: int, wanted: bytes, seen: bytearray, deadline: float) -> float:
    """Read the terminal until ``wanted`` appears after what was already ``seen``; the moment it did."""
    start = len(seen)
    while time.perf_counter() < deadline:
        ready, _, _ = select.select([master], [], [], 0.01)
        if not ready:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        seen += chunk
        if CURSOR_POSITION_QUERY in chunk:
            os.write(master, b"\x1b[1;1R")  # as a real terminal answers prompt_toolkit
        if wanted in seen[start:]:
            return time.perf_counter()
    raise RuntimeError(f"{wanted!r} not seen within {TIMEOUT_SECONDS:.0f} s; the terminal showed: {bytes(seen[-400:])!r}")


def _drain(master: int, seconds: float, seen: bytearray) -> None:
    deadline = time.perf_counter() + seconds
    while (left := deadline - time.perf_counter()) > 0:
        ready, _, _ = select.select([master], [], [], min(left, 0.05))
        if ready:
            chunk = os.read(master, 65536)
            seen += chunk
            if CURSOR_POSITION_QUERY in chunk:
                os.write(master, b"\x1b[1;1R")


def one_run(fake: WireFake, wait: float) -> tuple[float, float, float]:
    """(prompt drawn, Enter → request on the wire, Enter → reply on the terminal), in seconds."""
    with tempfile.TemporaryDirectory(prefix="mini-letta-bench-") as root:
        workspace = Path(root, "work")
        workspace.mkdir()
        env = dict(_environment(Path(root, "home")), OPENAI_API_KEY="bench")
        command = mini_letta_command() + ["--provider", "openai", "--model", "gpt-4.1",
                                          "--base-url", fake.root_url + "/v1"]
        with repl_in_pty(command, workspace, env) as (master, start):
            seen = bytearray()
            prompt = _read_until(master, PROMPT, seen, start + TIMEOUT_SECONDS) - start
            _drain(master, wait, seen)
            fake.script(("text", REPLY))
            before = len(fake.arrivals)
            enter = time.perf_counter()
            os.write(master, b"hello there\r")
            shown = _read_until(master, REPLY.encode(), seen, enter + TIMEOUT_SECONDS) - enter
            wire = fake.arrivals[before].received - enter
    return prompt, wire, shown


def run(print_fn: Callable[[str], object] = print, repeats: int = REPEATS) -> dict:
    rows: dict[str, list[tuple[float, float, float]]] = {"typed at once": [], f"typed after {SETTLED_SECONDS:g} s": []}
    python: list[float] = []
    with WireFake() as fake:
        one_run(fake, 0.0)  # warm the file cache
        for _ in range(repeats):
            python.append(time_process([sys.executable, "-c", "pass"]))
            for label, wait in zip(rows, (0.0, SETTLED_SECONDS)):
                rows[label].append(one_run(fake, wait))
    baseline = statistics.median(python) * 1000
    print_fn(f"medians of {repeats} runs; python -c pass {baseline:.0f} ms in the same run")
    print_fn(f"{'':18}  {'prompt drawn':>14}  {'Enter → wire':>16}  {'Enter → reply shown':>20}")
    figures = {"python_ms": baseline}
    for label, samples in rows.items():
        prompt, wire, shown = (statistics.median(column) * 1000 for column in zip(*samples))
        figures[label] = {"prompt_ms": prompt, "wire_ms": wire, "shown_ms": shown}
        print_fn(f"{label:18}  {prompt:8.0f} ms     {wire:7.0f} ms ({wire / baseline:4.1f}×)  "
                 f"{shown:9.0f} ms ({shown / baseline:4.1f}×)")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    run(repeats=parser.parse_args().repeats)


if __name__ == "__main__":
    main()
