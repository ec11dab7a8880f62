"""CPU cost of showing a long streamed Markdown reply: plain print, MarkdownStream, naive Live.

Run: ``python -m benchmarks.bench_stream``. A 3,000-line reply (headings, paragraphs, lists,
fenced code) is cut into 20,000 chunks and fed to a terminal console writing to a StringIO.

The baseline (a) is ``console.print(text, markup=False, highlight=False)`` on the same kind of
console: a terminal program prints through Rich either way. The goal is (b) within 3x of (a).

Two deliveries are measured. "Paced" simulates a model streaming at 15 ms per chunk (5 minutes
for the reply) with a simulated clock, so both renderers work at the 20 frames per second the
user would see: ``MarkdownStream`` writes each chunk raw and checks for settled blocks at most
once a frame, erasing and redrawing only the raw tail; "burst" feeds the chunks back to back on
the real clock, as when replaying a reply.
The naive renderer (one Rich ``Live`` showing ``Markdown(whole text so far)``, throttled like
ours) is quadratic: it is run for the first chunks only, and the rest of its frames are costed by
timing a full render at a few sizes and interpolating; its row says so.
"""

from __future__ import annotations

import io
import itertools
import random
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown

from mini_letta.repl.markdown_stream import MarkdownStream

REPLY_LINES = 3_000
CHUNKS = 20_000
CHUNK_SECONDS = 0.015
MIN_INTERVAL = 0.05
NAIVE_BUDGET_SECONDS = 5.0
WIDTH = 100

_WORDS = (
    "context window token budget compaction summary provider request message stream model "
    "reply tool call result workspace file line offset cache usage threshold limit level"
).split()


def make_reply(lines: int = REPLY_LINES, seed: int = 0) -> str:
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


def split_chunks(text: str, count: int = CHUNKS, seed: int = 1) -> list[str]:
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


def _best_cpu(work: Callable[[], object], repeats: int = 3) -> float:
    """The least CPU of a few runs: the short runs compared in the ratio are noisy on a busy host."""
    return min(_cpu(work) for _ in range(repeats))


def _plain(chunks: list[str]) -> None:
    console = _console()
    for chunk in chunks:
        console.file.write(chunk)


def _ours(chunks: list[str], clock: Callable[[], float]) -> MarkdownStream:
    stream = MarkdownStream(_console(), min_interval=MIN_INTERVAL, clock=clock)
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


def run(print_fn: Callable[[str], object] = print) -> dict:
    """Run the benchmark, print a table, and return the figures in seconds of CPU."""
    text = make_reply()
    chunks = split_chunks(text)
    stream_seconds = len(chunks) * CHUNK_SECONDS

    plain = _cpu(lambda: _plain(chunks))
    print_once = _best_cpu(lambda: _console().print(text, markup=False, highlight=False))
    markdown_once = _best_cpu(lambda: _console().print(Markdown(text)))
    paced_stream: list[MarkdownStream] = []
    paced = _best_cpu(lambda: paced_stream.append(_ours(chunks, _paced_clock())))
    burst_stream: list[MarkdownStream] = []
    burst = _best_cpu(lambda: burst_stream.append(_ours(chunks, time.monotonic)))

    frames = list(_naive_frames(chunks))
    naive_measured, drawn = _naive(text, frames, NAIVE_BUDGET_SECONDS)
    cost = _frame_cost_model(text)
    naive = naive_measured + sum(cost(length) for length in frames[drawn:])
    naive_label = (
        f"naive Live, paced ({drawn} of {len(frames)} frames run, rest extrapolated)"
        if drawn < len(frames)
        else "naive Live, paced"
    )

    rows = [
        ("(a) console.print(text) once, no markup", print_once),
        ("    raw chunk writes to console.file", plain),
        ("    Markdown(text) rendered once", markdown_once),
        (f"(b) MarkdownStream, paced ({paced_stream[0].renders} renders)", paced),
        (f"(b) MarkdownStream, burst ({burst_stream[0].renders} renders)", burst),
        (f"(c) {naive_label}", naive),
    ]
    print_fn(
        f"Reply: {text.count(chr(10))} lines, {len(text):,} chars, {len(chunks):,} chunks; "
        f"paced = {CHUNK_SECONDS * 1000:.0f} ms/chunk ({stream_seconds:.0f} s of streaming), "
        f"frames every {MIN_INTERVAL * 1000:.0f} ms"
    )
    label_width = max(len(label) for label, _ in rows)
    print_fn(f"{'':{label_width}}  {'CPU s':>9}  {'x (a)':>9}  {'x md once':>9}")
    for label, seconds in rows:
        print_fn(
            f"{label:{label_width}}  {seconds:9.3f}  {seconds / print_once:9.2f}  "
            f"{seconds / markdown_once:9.2f}"
        )
    print_fn(
        f"(b)/(a): burst {burst / print_once:.2f}x, paced {paced / print_once:.2f}x "
        f"(goal: 3x). Paced: {paced / stream_seconds:.2%} of one core while streaming, "
        f"raw tail redrawn {paced_stream[0].frames} times"
    )
    print_fn(
        f"Rendered {paced_stream[0].rendered_chars / len(text):.1f}x the reply's characters "
        f"(paced); left to Rich's Markdown: {burst_stream[0].fallback_renders} of "
        f"{burst_stream[0].renders} renders (burst), {paced_stream[0].fallback_renders} of "
        f"{paced_stream[0].renders} (paced)"
    )
    return {
        "reply_chars": len(text),
        "chunks": len(chunks),
        "plain_writes": plain,
        "print_once": print_once,
        "markdown_once": markdown_once,
        "stream_paced": paced,
        "stream_burst": burst,
        "burst_ratio": burst / print_once,
        "paced_ratio": paced / print_once,
        "stream_paced_renders": paced_stream[0].renders,
        "stream_paced_rendered_chars": paced_stream[0].rendered_chars,
        "stream_paced_redraws": paced_stream[0].frames,
        "naive_paced": naive,
        "naive_extrapolated": drawn < len(frames),
        "naive_frames_run": drawn,
        "naive_frames": len(frames),
    }


if __name__ == "__main__":
    run()
