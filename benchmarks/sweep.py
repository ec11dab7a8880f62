"""The engine sweep as a table (issue 46): every case of ``tests/sweep_support.py``'s grid, how it
ended, and what it cost (model calls, compactions, rejections), per window.

Run from the repository root:  python -m benchmarks.sweep            (the whole grid, 720 runs)
                               python -m benchmarks.sweep --covering (72 runs)

Prints one row per window and stop reason, and every run whose ending is untrue (there should be none).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import sweep_support  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--covering", action="store_true", help="the test's covering subset, not the whole grid")
    args = parser.parse_args(argv)
    cases = sweep_support.covering() if args.covering else sweep_support.grid()
    rows: dict[tuple[int, str], list[sweep_support.Outcome]] = defaultdict(list)
    wrong = []
    with tempfile.TemporaryDirectory() as folder:
        for index, case in enumerate(cases):
            workspace = Path(folder) / str(index)
            workspace.mkdir()
            outcome = sweep_support.run(case, workspace)
            rows[(case.window, outcome.stopped)].append(outcome)
            why = sweep_support.problem(outcome)
            if why:
                wrong.append((case.name, why))
    print(f"{'window':>8}  {'ended':<14} {'runs':>5} {'compactions/run':>16} {'rejections/run':>15} {'rejected runs':>14}")
    for (window, stopped), outcomes in sorted(rows.items()):
        count = len(outcomes)
        compactions = sum(o.compactions for o in outcomes) / count
        rejections = sum(o.rejections for o in outcomes) / count
        rejected = sum(1 for o in outcomes if o.rejections)
        print(f"{window:>8,}  {stopped:<14} {count:>5} {compactions:>16.1f} {rejections:>15.2f} {rejected:>14}")
    print(f"{len(cases)} runs, {len(wrong)} with an untrue ending")
    for name, why in wrong:
        print(f"  {name}: {why}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
