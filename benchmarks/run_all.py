"""Every benchmark in one run, each one's own table first, then one summary table.

Run from the repository root:  python -m benchmarks.run_all

Takes a few minutes on a 2-core machine (the streaming benchmark alone about half a minute; the
start-up benchmark spawns ~80 processes). The simulation runs with a shorter session than its own
default.
"""

from __future__ import annotations

import time
from typing import Any, Callable

SIMULATION_TURNS = 150

PrintFn = Callable[[str], object]


def _startup(print_fn: PrintFn) -> list[tuple[str, str]]:
    from benchmarks import bench_startup

    figures = bench_startup.run(print_fn)

    def timed(key: str) -> str:
        ms = figures[key]
        return f"{ms:.0f} ms ({ms / figures['python_ms']:.2f}× python -c pass)"

    return [
        ("python -c pass", f"{figures['python_ms']:.0f} ms"),
        ("mini-letta --version", timed("version_ms")
         + f", goal ≤ 1.5× + 50 ms {'met' if figures['version_goal_met'] else 'MISSED'}"),
        ("mini-letta --help", timed("help_ms")),
        ("mini-letta -p hi (demo)", timed("print_demo_ms")),
        ("`mini-letta`: prompt drawn (pty)", timed("prompt_ms")
         + f", goal ≤ 300 ms {'met' if figures['prompt_goal_met'] else 'MISSED'}"),
        ("  with --provider demo (Typer)", timed("prompt_with_options_ms")),
    ]


def _turn(print_fn: PrintFn) -> list[tuple[str, str]]:
    from benchmarks import bench_turn

    rows = bench_turn.run(print_fn, sizes=(100, 1_000, 5_000))
    figures = []
    for row in rows:
        figures.append((f"{row['messages']:,} messages: agent turn / resume",
                        f"{row['turn']:.1f} ms / {row['resume']:.0f} ms ({row['resume'] / row['loads']:.1f}× json.loads)"))
        figures.append(("  request to the wire, OpenAI / Anthropic",
                        f"{row['openai'] / row['openai_dumps']:.1f}× / "
                        f"{row['anthropic'] / row['anthropic_dumps']:.1f}× json.dumps of the body"))
    return figures


def _context(print_fn: PrintFn) -> list[tuple[str, str]]:
    from benchmarks import bench_context

    figures = bench_context.run(print_fn)
    errors = figures["mean_error_percent"]
    return [
        ("estimate per message (append + estimate)", f"{figures['incremental_ms']:.3f} ms vs naive re-count "
                                                      f"{figures['naive_recount_ms']:.0f} ms"),
        ("estimate error, usage + tail calibrated", f"{errors['usage + tail, calibrated']:.2f}% mean "
                                                    f"(local count alone {errors['local count, no usage']:.1f}%)"),
    ]


def _stream(print_fn: PrintFn) -> list[tuple[str, str]]:
    from benchmarks import bench_stream

    figures = bench_stream.run(print_fn)
    sizes = figures["sizes"]
    largest = sizes[-1]
    return [
        (f"streamed Markdown, per settled block ({largest['lines']:,} lines)",
         f"median {figures['block_median_ms']:.2f} ms, p95 {figures['block_p95_ms']:.1f} ms "
         f"(goal ≤ {bench_stream.GOAL_MEDIAN_MS:g} / ≤ {bench_stream.GOAL_P95_MS:g} ms) "
         + ("met" if figures["goal_met"] else "MISSED")),
        ("streamed Markdown, paced, total CPU",
         " / ".join(f"{size['stream_paced']:.2f} s" for size in sizes) + " at "
         + " / ".join(f"{size['lines']:,}" for size in sizes) + " lines "
         f"({figures['paced_growth']:.1f}× for {figures['length_growth']:g}× the lines)"),
        ("  naive Rich Live, paced (CPU)",
         " / ".join(f"{size['naive_paced']:.0f} s" for size in sizes)
         + (" (extrapolated)" if largest["naive_extrapolated"] else "")
         + f" ({figures['naive_growth']:.0f}×)"),
    ]


def _simulation(print_fn: PrintFn) -> list[tuple[str, str]]:
    from benchmarks import simulate

    rows = []
    for window in simulate.WINDOWS:
        result = simulate.simulate(window, SIMULATION_TURNS, 0)
        print_fn(simulate.report(result))
        rows.append((f"simulated session, {window:,}-token window",
                     f"{SIMULATION_TURNS} turns: {len(result.compactions)} compactions, "
                     f"{result.over_window} requests over the window, {result.overflows} provider overflows, "
                     f"{len(result.errors)} failed turns"))
    return rows


def _redaction(print_fn: PrintFn) -> list[tuple[str, str]]:
    from benchmarks import bench_redact

    figures = bench_redact.run(print_fn)
    return [
        ("secret redaction, corpus", f"recall {figures['found']}/{figures['secrets']}, false positives "
                                     f"{len(figures['false_positives'])}/{figures['non_secrets']}, code lines "
                                     f"byte-identical {figures['code_lines'] - len(figures['code_changed'])}"
                                     f"/{figures['code_lines']}"),
        ("  1 MB tool output", f"{figures['ordinary_ms']:.0f} ms ordinary, {figures['worst_ms']:.0f} ms base64 "
                               "(worst case)"),
    ]


def _checkpoints(print_fn: PrintFn) -> list[tuple[str, str]]:
    from benchmarks import bench_checkpoints

    figures = bench_checkpoints.run(print_fn)
    restore, writes = figures["restore"], figures["writes"]
    return [
        (f"restore {figures['files']} files of {figures['size'] // 1000} kB",
         f"{restore['total_s']:.2f} s (goal < {bench_checkpoints.GOAL_RESTORE_S:g} s)"),
        ("  added to a 100 kB write_file", f"+{writes['added_ms']:.2f} ms median, +{writes['p95_added_ms']:.2f} ms "
                                           f"p95 (goal < {bench_checkpoints.GOAL_WRITE_MS:g} ms)"),
    ]


BENCHMARKS: list[tuple[str, Callable[[PrintFn], list[tuple[str, str]]]]] = [
    ("start-up", _startup),
    ("per-turn overhead", _turn),
    ("context estimate", _context),
    ("streaming", _stream),
    ("simulation", _simulation),
    ("redaction", _redaction),
    ("checkpoints", _checkpoints),
]


def run(print_fn: PrintFn = print) -> dict[str, Any]:
    """Run every benchmark, print each one's table and then the summary; return the summary rows."""
    summary: dict[str, list[tuple[str, str]]] = {}
    started = time.perf_counter()
    for name, bench in BENCHMARKS:
        print_fn(f"\n== {name} " + "=" * (70 - len(name)))
        summary[name] = bench(print_fn)
    elapsed = time.perf_counter() - started

    rows = [(name, label, value) for name, entries in summary.items() for label, value in entries]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    print_fn(f"\n== summary ({elapsed:.0f} s) " + "=" * 58)
    previous = None
    for name, label, value in rows:
        shown = name if name != previous else ""
        previous = name
        print_fn(f"{shown:{widths[0]}}  {label:{widths[1]}}  {value}")
    return {"seconds": elapsed, "rows": rows}


if __name__ == "__main__":
    run()
