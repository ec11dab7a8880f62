"""Streaming a long Markdown reply: latency of each settled block, and total CPU as the reply grows.

Run from the repository root:  python -m benchmarks.bench_stream  [--quick]

Replies of 750, 1,500 and 3,000 lines (headings, paragraphs, lists, fenced code; 20,000 chunks for
3,000 lines, proportionally fewer for the shorter ones) are fed to a 100-column truecolor terminal
console writing to a StringIO.

What the user feels is the pause when a block settles and is rendered, so the goal is per settled
block: the CPU time of each render (Rich's ``Markdown`` for a block, Rich's ``Syntax`` for a piece
of a long code fence), median at most 3 ms and 95th percentile at most 20 ms, at 3,000 lines. CPU
rather than wall time: on a shared machine the wall time measures the neighbours. Total CPU is
printed for the three lengths to show that it grows linearly with the reply (each block is rendered
once), next to ``console.print`` of the plain text and one ``Markdown`` render of the whole reply.

Two deliveries are measured. "Paced" simulates a model streaming at 15 ms per chunk with a
simulated clock, so settled blocks are checked for at the 20 frames per second the user would see:
``MarkdownStream`` writes each chunk raw and settles blocks at most once a frame; "burst" feeds
the chunks back to back on the real clock, as when replaying a reply. "Paced, with the footer"
adds the REPL's spinner line and status bar under the raw tail (``Activity.footer_lines``, drawn
again whenever the raw text moves down a row, and by the stream's thread 8 times a second).
The quadratic reference is the naive renderer (one Rich ``Live`` showing ``Markdown(whole text so
far)``, throttled like ours): it is run for a few seconds only, and the rest of its frames are
costed by timing a full render at a few sizes and interpolating; its row says so (run whole, the
3,000-line reply takes about 40 minutes).

``--quick`` runs short replies and a short naive budget: a check that the benchmark runs, not a
measurement.
"""

from __future__ import annotations

import argparse
import io
import itertools
import random
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from mini_letta.repl.activity import Activity
from mini_letta.repl.markdown_stream import MarkdownStream

SIZES = (750, 1_500, 3_000)
QUICK_SIZES = (60, 120, 240)
CHUNKS_PER_LINE = 20_000 / 3_000
CHUNK_SECONDS = 0.015
MIN_INTERVAL = 0.05
NAIVE_BUDGET_SECONDS = 3.0
QUICK_NAIVE_BUDGET_SECONDS = 0.2
WIDTH = 100
GOAL_MEDIAN_MS = 3.0
GOAL_P95_MS = 20.0

_WORDS = (
    "context window token budget compaction summary provider request message stream model "
    "reply tool call result workspace file line offset cache usage threshold limit level"
).split()


def make_reply(lines: int = SIZES[-1], seed: int = 0) -> str:
    """A deterministic Markdown reply of about ``lines`` lines, shaped like a long model answer."""
    rng = random.Random(seed)

    def sentence() -> str:
        words = rng.choices(_WORDS, k=rng.randint(6, 14))
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] = f"`{rng.choice(_WORDS)}()`"
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] = f"**{rng.choice(_WORDS)}**"
        return " ".join(words).capitalize() + "."

    out: list[str] = []
    section = 0
    while len(out) < lines:
        section += 1
        out += [f"## Step {section}: {rng.choice(_WORDS)} {rng.choice(_WORDS)}", ""]
        for _ in range(rng.randint(1, 3)):
            out += [" ".join(sentence() for _ in range(2)) for _ in range(rng.randint(2, 5))]
            out.append("")
        out += [f"- {sentence()}" for _ in range(rng.randint(3, 8))]
        out.append("")
        out += [f"{n}. {sentence()}" for n in range(1, rng.randint(3, 6))]
        out.append("")
        code_lines = 120 if section % 7 == 0 else rng.randint(8, 30)
        out.append("```python")
        for n in range(code_lines):
            indent = "    " * (n % 3)
            out.append(f"{indent}{rng.choice(_WORDS)}_{n} = compute({n}, '{rng.choice(_WORDS)}')")
        out += ["```", ""]
    return "\n".join(out[:lines]) + "\n```\n"


def split_chunks(text: str, count: int, seed: int = 1) -> list[str]:
    """Cut ``text`` into ``count`` chunks of uneven size, like a token stream."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(text)), count - 1))
    return [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])]


def _console() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=WIDTH, height=40)


def _paced_clock() -> Callable[[], float]:
    ticks = itertools.count()
    return lambda: next(ticks) * CHUNK_SECONDS


def _cpu(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def _best_cpu(work: Callable[[], object], repeats: int = 2) -> float:
    """The least CPU of a few runs: runs are noisy on a busy host."""
    return min(_cpu(work) for _ in range(repeats))


def _plain(chunks: list[str]) -> None:
    console = _console()
    for chunk in chunks:
        console.file.write(chunk)


def _ours(chunks: list[str], clock: Callable[[], float], *, footer: bool = False) -> MarkdownStream:
    console = _console()
    lines = None
    if footer:
        activity = Activity(console)
        activity.label = "Receiving the reply"
        activity.tokens = 1_234
        activity.status = Text("88% context left · openai:gpt-4.1 · 15k/128k tokens · window: server")
        lines = activity.footer_lines
    stream = MarkdownStream(console, min_interval=MIN_INTERVAL, clock=clock, footer=lines)
    for chunk in chunks:
        stream.feed(chunk)
    stream.finish()
    return stream


def _naive_frames(chunks: list[str]) -> Iterator[int]:
    """Text lengths at which a throttled naive renderer draws a frame on the paced clock."""
    clock = _paced_clock()
    last = float("-inf")
    length = 0
    for chunk in chunks:
        length += len(chunk)
        now = clock()
        if now - last >= MIN_INTERVAL:
            last = now
            yield length


def _naive(text: str, frames: list[int], budget: float) -> tuple[float, int]:
    """Draw naive frames until ``budget`` CPU seconds are spent; return (seconds, frames drawn)."""
    console = _console()
    start = time.process_time()
    drawn = 0
    with Live(console=console, auto_refresh=False, vertical_overflow="visible") as live:
        for length in frames:
            live.update(Markdown(text[:length]), refresh=True)
            drawn += 1
            if time.process_time() - start > budget:
                break
    return time.process_time() - start, drawn


def _frame_cost_model(text: str) -> Callable[[int], float]:
    """CPU seconds of one naive frame as a function of text length, from timed samples."""
    sizes = [len(text) * k // 8 for k in range(1, 9)]
    costs = []
    for size in sizes:
        console = _console()
        with Live(console=console, auto_refresh=False, vertical_overflow="visible") as live:
            costs.append(_cpu(lambda: live.update(Markdown(text[:size]), refresh=True)))
    points = list(zip([0, *sizes], [costs[0] * 0.5, *costs], strict=True))

    def cost(length: int) -> float:
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            if length <= x1:
                return y0 + (y1 - y0) * (length - x0) / (x1 - x0)
        return points[-1][1]

    return cost


@dataclass
class SizeFigures:
    lines: int
    chars: int
    chunks: int
    print_once: float
    markdown_once: float
    paced: float
    paced_footer: float
    burst: float
    naive: float
    naive_extrapolated: bool
    renders: int
    redraws: int
    block_ms: list[float]  # CPU of each settled block's render, first paced run

    @property
    def median_ms(self) -> float:
        return statistics.median(self.block_ms)

    @property
    def p95_ms(self) -> float:
        return statistics.quantiles(self.block_ms, n=20, method="inclusive")[-1]


def measure(lines: int, naive_budget: float) -> SizeFigures:
    text = make_reply(lines)
    chunks = split_chunks(text, round(lines * CHUNKS_PER_LINE))
    paced_streams: list[MarkdownStream] = []
    paced = _best_cpu(lambda: paced_streams.append(_ours(chunks, _paced_clock())))
    paced_footer = _best_cpu(lambda: _ours(chunks, _paced_clock(), footer=True))
    burst = _best_cpu(lambda: _ours(chunks, time.monotonic))
    print_once = _best_cpu(lambda: _console().print(text, markup=False, highlight=False))
    markdown_once = _best_cpu(lambda: _console().print(Markdown(text)), repeats=1)

    frames = list(_naive_frames(chunks))
    naive_measured, drawn = _naive(text, frames, naive_budget)
    cost = _frame_cost_model(text)
    naive = naive_measured + sum(cost(length) for length in frames[drawn:])
    first = paced_streams[0]
    return SizeFigures(
        lines=lines, chars=len(text), chunks=len(chunks), print_once=print_once,
        markdown_once=markdown_once, paced=paced, paced_footer=paced_footer, burst=burst, naive=naive,
        naive_extrapolated=drawn < len(frames), renders=first.renders, redraws=first.frames,
        block_ms=[seconds * 1000 for seconds in first.render_seconds],
    )


def run(print_fn: Callable[[str], object] = print, quick: bool = False) -> dict:
    """Run the benchmark, print its tables, and return the figures (CPU seconds, block times in ms)."""
    sizes = QUICK_SIZES if quick else SIZES
    budget = QUICK_NAIVE_BUDGET_SECONDS if quick else NAIVE_BUDGET_SECONDS
    figures = [measure(lines, budget) for lines in sizes]
    largest, smallest = figures[-1], figures[0]

    print_fn(f"{WIDTH} columns, truecolor; paced = {CHUNK_SECONDS * 1000:.0f} ms a chunk, a check for "
             f"settled blocks at most every {MIN_INTERVAL * 1000:.0f} ms. CPU seconds unless marked.")
    header = ["reply lines"] + [f"{f.lines:,}" for f in figures]
    rows = [
        ["chars / chunks"] + [f"{f.chars:,} / {f.chunks:,}" for f in figures],
        ["(a) console.print(text) once, no markup"] + [f"{f.print_once:.3f}" for f in figures],
        ["    Markdown(text) rendered once"] + [f"{f.markdown_once:.3f}" for f in figures],
        ["(b) MarkdownStream, paced"] + [f"{f.paced:.3f}" for f in figures],
        ["    per 1,000 lines"] + [f"{f.paced / f.lines * 1000:.3f}" for f in figures],
        ["    x (a)"] + [f"{f.paced / f.print_once:.1f}" for f in figures],
        ["(b) MarkdownStream, paced, with the footer"] + [f"{f.paced_footer:.3f}" for f in figures],
        ["(b) MarkdownStream, burst"] + [f"{f.burst:.3f}" for f in figures],
        ["(c) naive Live, paced" + (" (extrapolated)" if largest.naive_extrapolated else "")]
        + [f"{f.naive:.1f}" for f in figures],
        ["settled blocks and pieces rendered"] + [f"{f.renders:,}" for f in figures],
        ["per block: median ms"] + [f"{f.median_ms:.2f}" for f in figures],
        ["           p95 ms"] + [f"{f.p95_ms:.2f}" for f in figures],
        ["           worst ms"] + [f"{max(f.block_ms):.1f}" for f in figures],
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print_fn("  ".join([row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]))

    growth = largest.lines / smallest.lines
    goal_met = largest.median_ms <= GOAL_MEDIAN_MS and largest.p95_ms <= GOAL_P95_MS
    print_fn(f"Per settled block at {largest.lines:,} lines: median {largest.median_ms:.2f} ms, "
             f"p95 {largest.p95_ms:.2f} ms, worst {max(largest.block_ms):.1f} ms "
             f"(goal: median ≤ {GOAL_MEDIAN_MS:g} ms, p95 ≤ {GOAL_P95_MS:g} ms): {'met' if goal_met else 'MISSED'}. "
             f"The worst block of the first run includes loading Pygments' lexer."
             + (" (--quick: short replies, not the measurement.)" if quick else ""))
    print_fn(f"{smallest.lines:,} → {largest.lines:,} lines ({growth:g}× the reply): MarkdownStream "
             f"{largest.paced / smallest.paced:.1f}× paced, {largest.burst / smallest.burst:.1f}× burst "
             f"(linear: {growth:g}×); naive Live {largest.naive / smallest.naive:.1f}× "
             f"(quadratic: {growth * growth:g}×)")
    return {
        "sizes": [
            {"lines": f.lines, "chars": f.chars, "chunks": f.chunks, "print_once": f.print_once,
             "markdown_once": f.markdown_once, "stream_paced": f.paced,
             "stream_paced_footer": f.paced_footer, "stream_burst": f.burst,
             "naive_paced": f.naive, "naive_extrapolated": f.naive_extrapolated, "renders": f.renders,
             "redraws": f.redraws, "block_median_ms": f.median_ms, "block_p95_ms": f.p95_ms,
             "block_worst_ms": max(f.block_ms)}
            for f in figures
        ],
        "block_median_ms": largest.median_ms,
        "block_p95_ms": largest.p95_ms,
        "block_worst_ms": max(largest.block_ms),
        "goal_met": goal_met,
        "paced_growth": largest.paced / smallest.paced,
        "naive_growth": largest.naive / smallest.naive,
        "length_growth": growth,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short replies: check that it runs, measure nothing")
    run(quick=parser.parse_args().quick)


if __name__ == "__main__":
    main()
