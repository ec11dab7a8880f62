"""From the first Enter in the REPL to the request on the wire, as a user starting mini-letta feels it.

Run from the repository root:  python -m benchmarks.bench_first_answer [--repeats 5] [--after 0,1,2,3]
[--provider openai|anthropic]

``mini-letta`` runs in a pseudo-terminal with the OpenAI (or Anthropic) provider pointed at a local HTTP server
(``benchmarks/wire_fake.py``, 127.0.0.1). Once the prompt is drawn, "hello there" and Enter are
typed after each delay of ``--after`` (0: at once, faster than anyone types; 1-2 s: a short first
message typed by a quick typist; 3 s: the agent long since built in the background); the server
notes when the request's body arrived. Printed: prompt drawn, Enter → request on the wire (seen
from the server), Enter → the reply's text on the terminal, each a median and next to ``python -c
pass`` measured in the same run, and the load average before and after. Issue 36 asks for Enter →
wire under 100 ms on a quiet machine. No figure is an assertion.

mini-letta runs with compiled bytecode, as an installed copy does: a ``PYTHONDONTWRITEBYTECODE``
in the environment (a development setting) is dropped for it and the bytecode goes to a folder of
this run (``PYTHONPYCACHEPREFIX``), written by the first, unmeasured run.
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
AFTER_SECONDS = (0.0, 1.0, 2.0, 3.0)
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


def one_run(fake: WireFake, wait: float, bytecode: Path | None = None,
            provider: str = "openai") -> tuple[float, float, float]:
    """(prompt drawn, Enter → request on the wire, Enter → reply on the terminal), in seconds;
    ``bytecode``: the folder compiled modules are kept in (none: the environment decides)."""
    with tempfile.TemporaryDirectory(prefix="mini-letta-bench-") as root:
        workspace = Path(root, "work")
        workspace.mkdir()
        env = dict(_environment(Path(root, "home")), OPENAI_API_KEY="bench", ANTHROPIC_API_KEY="bench")
        if bytecode is not None:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(bytecode)
        model, base_url = ("gpt-4.1", fake.root_url + "/v1") if provider == "openai" else \
            ("claude-sonnet-5-5", fake.root_url)
        command = mini_letta_command() + ["--provider", provider, "--model", model, "--base-url", base_url]
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


def _label(wait: float) -> str:
    return "typed at once" if wait == 0 else f"typed after {wait:g} s"


def _load() -> str:
    return " ".join(f"{figure:.2f}" for figure in os.getloadavg())


def run(print_fn: Callable[[str], object] = print, repeats: int = REPEATS,
        after: tuple[float, ...] = AFTER_SECONDS, provider: str = "openai") -> dict:
    rows: dict[str, list[tuple[float, float, float]]] = {_label(wait): [] for wait in after}
    python: list[float] = []
    load_before = _load()
    with WireFake() as fake, tempfile.TemporaryDirectory(prefix="mini-letta-bytecode-") as bytecode:
        one_run(fake, 0.0, Path(bytecode), provider)  # compiles the bytecode, warms the file cache
        for _ in range(repeats):
            python.append(time_process([sys.executable, "-c", "pass"]))
            for label, wait in zip(rows, after):
                rows[label].append(one_run(fake, wait, Path(bytecode), provider))
    baseline = statistics.median(python) * 1000
    print_fn(f"{provider} provider; medians of {repeats} runs; python -c pass {baseline:.0f} ms in the same run; "
             f"load average {load_before} before, {_load()} after")
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
    parser.add_argument("--after", default=",".join(f"{wait:g}" for wait in AFTER_SECONDS),
                        help="seconds between the prompt and typing, comma-separated (default: %(default)s)")
    parser.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    arguments = parser.parse_args()
    run(repeats=arguments.repeats, after=tuple(float(wait) for wait in arguments.after.split(",")),
        provider=arguments.provider)


if __name__ == "__main__":
    main()
