"""How well and how fast secrets are masked before anything is written to disk.

Run from the repository root:  python -m benchmarks.bench_redact [--held-out FOLDER]

1. On ``tests/redaction_corpus.json``: recall on realistic secrets inside the lines a tool prints
   (env output, .env files, config, headers, URLs, PEM blocks, command lines), whether only the
   value was masked, look-alike non-secrets changed (git ids, checksums, UUIDs, base64 of code,
   lock-file hashes, placeholders), and the lines of realistic code (settings modules, tests,
   database code) that did not come back byte-identical.
2. The time to redact 1 MB of ordinary tool output (git log, source code, JSON, a build log and a
   test run, with a few secrets sprinkled in), and 1 MB of base64, where every line is a long random
   token and so a candidate for the detector: the worst case. Session entries are capped by the tool
   output limit (30,000 characters by default), so these sizes are far above what one entry holds.
3. With ``--held-out FOLDER``: the lines of the ``*.py`` files under it that do not come back
   byte-identical, on code the rules were not tuned on (a virtualenv's site-packages, say).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import statistics
import time
from pathlib import Path
from typing import Callable

from mini_letta.trust.redact import MASK, redact_text, warm

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "redaction_corpus.json"
SIZE = 1_000_000
RUNS = 5


def expected_masking(case: dict) -> str:
    """What a secret case must come back as: its text with the secret value, and nothing else, masked."""
    return case.get("masked", case["text"].replace(case["secret"], MASK))


def corpus_figures() -> dict:
    """Recall on the secrets, whether only the value was masked, look-alikes changed, and code lines
    that did not come back byte-identical (each code sample redacted whole, as a tool prints it)."""
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    missed, inexact = [], []
    for case in corpus["secrets"]:
        masked = redact_text(case["text"], literals=[])
        if case["secret"] in masked:
            missed.append(case["kind"])
        elif masked != expected_masking(case):
            inexact.append(case["kind"])
    flagged = [c["kind"] for c in corpus["non_secrets"] if redact_text(c["text"], literals=[]) != c["text"]]
    code_lines, changed = 0, []
    for sample in corpus["code"]:
        lines = sample["text"].splitlines()
        code_lines += len(lines)
        for line, became in zip(lines, redact_text(sample["text"], literals=[]).splitlines()):
            if line != became:
                changed.append(f"{sample['kind'].split(':')[0]}: {line.strip()}")
    return {"secrets": len(corpus["secrets"]), "missed": missed, "inexact": inexact,
            "non_secrets": len(corpus["non_secrets"]), "false_positives": flagged,
            "code_lines": code_lines, "code_changed": changed, "corpus": corpus}


def ordinary_output(secrets: list[str], seed: int = 3) -> str:
    rng = random.Random(seed)
    source = (Path(__file__).resolve().parent.parent / "mini_letta" / "loop/agent.py").read_text().splitlines()
    lines: list[str] = []
    size = index = 0
    while size < SIZE:
        kind = index % 5
        digest = hashlib.sha1(str(index).encode()).hexdigest()
        if kind == 0:
            line = f"commit {digest}"
        elif kind == 1:
            line = source[index % len(source)]
        elif kind == 2:
            line = json.dumps({"id": index, "name": f"item-{index}", "sha": digest})
        elif kind == 3:
            line = f"[{index:05d}] CC src/module_{index % 97}.c -o build/module_{index % 97}.o -O2 -Wall"
        else:
            line = f"tests/test_mod{index % 50}.py::test_case_{index} PASSED [{index % 100:3d}%]"
        if rng.random() < 0.001:
            line = rng.choice(secrets)
        lines.append(line)
        size += len(line) + 1
        index += 1
    return "\n".join(lines)


def base64_output() -> str:
    return base64.encodebytes(random.Random(5).randbytes(SIZE * 3 // 4)).decode()


def timed(text: str) -> tuple[float, int]:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        masked = redact_text(text, literals=[])
        times.append(time.perf_counter() - started)
    return statistics.median(times), masked.count(MASK)


def held_out(folder: Path, print_fn: Callable[[str], object] = print) -> tuple[int, int]:
    """(lines, lines changed) over the Python files under ``folder``, each redacted whole."""
    files = lines = 0
    changed: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        files += 1
        original = text.splitlines()
        lines += len(original)
        masked = redact_text(text, literals=[])
        if masked != text:
            changed += [f"{path.relative_to(folder)}: {a.strip()[:120]}"
                        for a, b in zip(original, masked.splitlines()) if a != b]
    print_fn(f"held out: {lines - len(changed):,}/{lines:,} lines of {files:,} Python files under {folder} "
             "came back byte-identical" + "".join(f"\n  changed: {line}" for line in changed[:40]))
    return lines, len(changed)


def run(print_fn: Callable[[str], object] = print) -> dict:
    started = time.perf_counter()
    warm()
    load_ms = (time.perf_counter() - started) * 1000
    figures = corpus_figures()
    secrets = [c["text"] for c in figures.pop("corpus")["secrets"] if "\n" not in c["text"]]
    ordinary_s, ordinary_masked = timed(ordinary_output(secrets))
    worst_s, _ = timed(base64_output())
    found = figures["secrets"] - len(figures["missed"])
    print_fn(f"recall: {found}/{figures['secrets']} secrets masked"
             + (f" (missed: {', '.join(figures['missed'])})" if figures["missed"] else ""))
    print_fn(f"value only: {found - len(figures['inexact'])}/{found} masked secrets had nothing but their value "
             "replaced" + (f" (more changed: {', '.join(figures['inexact'])})" if figures["inexact"] else ""))
    print_fn(f"false positives: {len(figures['false_positives'])}/{figures['non_secrets']} non-secrets changed"
             + (f" ({', '.join(figures['false_positives'])})" if figures["false_positives"] else ""))
    identical = figures["code_lines"] - len(figures["code_changed"])
    print_fn(f"code: {identical}/{figures['code_lines']} lines of code came back byte-identical"
             + "".join(f"\n  changed: {line}" for line in figures["code_changed"]))
    print_fn(f"detector import: {load_ms:.0f} ms (once, in the background at REPL start)")
    print_fn(f"1 MB of ordinary tool output: {ordinary_s * 1000:.0f} ms (median of {RUNS}; "
             f"{ordinary_masked} secrets masked)")
    print_fn(f"1 MB of base64 (worst case, every line a candidate): {worst_s * 1000:.0f} ms")
    return dict(figures, found=found, load_ms=load_ms, ordinary_ms=ordinary_s * 1000, worst_ms=worst_s * 1000)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--held-out", type=Path, help="also count changed lines in the *.py files under this folder")
    arguments = parser.parse_args()
    run()
    if arguments.held_out:
        held_out(arguments.held_out)
