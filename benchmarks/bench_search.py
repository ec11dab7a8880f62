"""grep and glob through the tool functions against ripgrep called directly, on a real tree.

Run from the repository root:  python -m benchmarks.bench_search   (``--quick``: a small tree)

The tree is a copy of this interpreter's installed packages and standard library (real Python, C
extensions, data files; 100+ MB and thousands of files) under ``src/``, plus a generated
``build/`` folder listed in ``.gitignore`` whose files are full of the searched words, so a search
that ignored the ``.gitignore`` would drown in them. Each figure is the median of a few runs, in
one process, on one machine, mini-letta's and rg's taken in turns (a load that comes and goes
weighs on both): mini-letta's time includes both ripgrep passes, telling binary files, the JSON
parsing and the formatting of what the model is sent; ``rg`` is the plain command with its text
output captured (for glob, ``rg --files --sortr modified``: the same list, newest first). The
walker column is the Python search that grep and glob fall back to where ``rg`` cannot run (it
does not read .gitignore, so it searches ``build/`` too), the median of up to 3 runs, for scale:
it has no goal.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Callable

from mini_letta.toolbox import glob_patterns, search
from mini_letta.settings import SETTINGS
from mini_letta.toolbox.ripgrep import find_rg
from mini_letta.toolbox.workspace import Workspace

MAX_CHARS = 30_000
# The last finds nothing, so grep searches the binary files too (to name any that match). It is made
# at run time: a fixed word sits in the README's own table, which the installed package's METADATA
# copies into the tree.
ABSENT = f"no_such_word_{secrets.token_hex(4)}"
PATTERNS = ["def __init__", r"class \w+Error\(", "NEEDLE_[0-9]+", "import", ABSENT]
GLOBS = ["**/*.py", "**/*.{so,pyi}"]


def build_tree(root: Path, quick: bool) -> tuple[int, int]:
    """The tree described above; returns (bytes, files) outside ``build/``."""
    import rich  # a dependency: where it is installed is the site-packages in use

    source = Path(rich.__file__).resolve().parent.parent
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    if quick:
        shutil.copytree(source / "rich", root / "src" / "rich", ignore=ignore)
    else:
        shutil.copytree(source, root / "src" / "site-packages", ignore=ignore, symlinks=True)
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        shutil.copytree(stdlib, root / "src" / "stdlib", symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "site-packages", "test", "tests"))
    for index in range(3):
        (root / "src" / f"needle_{index}.py").write_text(f"NEEDLE_{index} = {index}\n")
    generated = root / "build" / "generated"
    generated.mkdir(parents=True)
    body = "".join(f"def __init__(self): pass  # NEEDLE_{i}\nclass Gen{i}Error(Exception): pass\n"
                   for i in range(200))
    for index in range(200 if quick else 2_000):
        (generated / f"gen_{index:04d}.py").write_text(body)
    (root / ".gitignore").write_text("build/\n")
    size = files = 0
    for folder, _, names in os.walk(root / "src"):
        for name in names:
            files += 1
            size += os.lstat(os.path.join(folder, name)).st_size
    return size, files


def median_seconds(call: Callable[[], object], runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def paired_medians(mine: Callable[[], object], direct: Callable[[], object], runs: int) -> tuple[float, float, object]:
    """Both medians from runs taken in turns, so a load that comes and goes weighs on both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    result = None
    for _ in range(runs):
        for index, call in enumerate((mine, direct)):
            start = time.perf_counter()
            value = call()
            times[index].append(time.perf_counter() - start)
            result = value if index == 0 else result
    return statistics.median(times[0]), statistics.median(times[1]), result


def rg_direct(rg: str, root: Path, *args: str) -> str:
    return subprocess.run([rg, "--no-require-git", *args], cwd=root, capture_output=True, text=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small tree (the rich package only)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-walker", action="store_true", help="skip the fallback walker's column")
    options = parser.parse_args()
    rg = find_rg()
    if rg is None:
        raise SystemExit("rg is not installed (pip install ripgrep==14.1.0)")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        size, files = build_tree(root, options.quick)
        ws = Workspace(root)
        engine = search.Engine(ws, rg)
        walker = search.Engine(ws, None, "benchmark")
        walker.told = True

        def walker_time(call: Callable[[], object]) -> str:
            return "" if options.no_walker else f"{median_seconds(call, min(3, options.runs))[0]:7.2f}s"

        print(f"Tree: {size / 1e6:,.0f} MB in {files:,} files under src/, plus build/ (ignored by .gitignore)")
        print(f"{'search':34} {'mini-letta':>10} {'rg':>8} {'ratio':>6} {'walker':>8}  from ignored")
        for pattern in PATTERNS:
            mine, direct, text = paired_medians(lambda: search.grep(ws, pattern, max_chars=MAX_CHARS, engine=engine),
                                                lambda: rg_direct(rg, root, "-e", pattern), options.runs)
            slow = walker_time(lambda: search.grep(ws, pattern, max_chars=MAX_CHARS, engine=walker))
            leaked = sum(line.startswith("build/") for line in str(text).splitlines())
            print(f"{'grep ' + pattern:34} {mine:9.3f}s {direct:7.3f}s {mine / direct:5.2f}× {slow:>8}  {leaked}")
            if pattern == ABSENT:
                # rg's own way to the same answer (which binary files match): one pass with --text.
                mine, direct, _ = paired_medians(
                    lambda: search.grep(ws, pattern, max_chars=MAX_CHARS, engine=engine),
                    lambda: rg_direct(rg, root, "-l", "--text", "--max-filesize", str(SETTINGS.tools.grep_binary_max_bytes), "-e", pattern),
                    options.runs)
                print(f"{'  the same, against rg -l --text':34} {mine:9.3f}s {direct:7.3f}s {mine / direct:5.2f}×")
        for pattern in GLOBS:
            # The same selection as rg's user would write it (a type: -g would override .gitignore).
            names = [glob_patterns.GlobPlan.of(g).basename_glob() for g in glob_patterns.expand_braces(pattern)]
            types = [a for name in names for a in ("--type-add", f"sel:{name}")]
            mine, direct, text = paired_medians(
                lambda: search.glob(ws, pattern, max_chars=MAX_CHARS, engine=engine),
                lambda: rg_direct(rg, root, "--files", "--sortr", "modified", *types, "-t", "sel"), options.runs)
            slow = walker_time(lambda: search.glob(ws, pattern, max_chars=MAX_CHARS, engine=walker))
            leaked = sum(line.startswith("build/") for line in str(text).splitlines())
            print(f"{'glob ' + pattern:34} {mine:9.3f}s {direct:7.3f}s {mine / direct:5.2f}× {slow:>8}  {leaked}")
        print("mini-letta: through grep()/glob() with formatting; rg: the plain command, output captured "
              "(glob: rg --files --sortr modified); walker: the Python fallback (no .gitignore: build/ is searched).")


if __name__ == "__main__":
    main()
