"""The mutation check: does the suite catch a broken core?

Each entry of ``scripts/mutations.toml`` breaks one behaviour that matters (the seed's threshold,
the breaker, the progress guard, redaction before writing, ...) in a small, realistic way and names
the tests that must catch it. This applies each mutation to a copy of the checkout, runs those
tests there, and prints caught or survived with the mutation shown.

    python scripts/mutate.py              run every mutation (two at a time)
    python scripts/mutate.py -k breaker   only mutations whose name contains "breaker"
    python scripts/mutate.py --check      only check that every mutation still applies

A mutation names the function, method or constant it lives in (``within``) and a snippet that must
occur exactly once there, never a line number, so it follows the code when it moves; when a
change renames or rewrites that code, the list is updated in the same commit (``--check`` fails
until it is, and a test runs ``--check``).

Exit status: 0 when every mutation is caught, 1 when one survived, 2 when the list no longer
applies or the tests fail on the unmutated copy.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "scripts" / "mutations.toml"
TIMEOUT_S = 300


@dataclass(frozen=True)
class Mutation:
    name: str
    behaviour: str
    file: str
    within: str
    find: str
    replace: str
    tests: tuple[str, ...]

    def shown(self) -> str:
        return f"{self.file} {self.within}: {self.find!r} -> {self.replace!r}"


class ListError(Exception):
    """The list no longer matches the code: a file, a name or a snippet is gone or ambiguous."""


def load(path: Path = LIST) -> list[Mutation]:
    with path.open("rb") as handle:
        entries = tomllib.load(handle).get("mutation", [])
    mutations = []
    for number, entry in enumerate(entries, 1):
        try:
            mutations.append(Mutation(entry["name"], entry["behaviour"], entry["file"], entry["within"],
                                      entry["find"], entry["replace"], tuple(entry["tests"])))
        except KeyError as missing:
            raise ListError(f"{path.name}: mutation {number} has no {missing}") from None
    names = [m.name for m in mutations]
    if len(set(names)) != len(names):
        raise ListError(f"{path.name}: two mutations share a name")
    return mutations


def _span(tree: ast.Module, within: str) -> tuple[int, int] | None:
    """Line span (1-based, inclusive) of the function, class, method or assigned name ``within``
    (dotted for nesting: ``Class.method``)."""
    body: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in within.split("."):
        node = None
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if statement.name == part:
                    node = statement
            elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                if any(isinstance(t, ast.Name) and t.id == part for t in targets):
                    node = statement
            if node is not None:
                break
        if node is None:
            return None
        body = getattr(node, "body", [])
    assert node is not None
    return node.lineno, node.end_lineno or node.lineno


def mutated_source(root: Path, mutation: Mutation) -> str:
    """The mutated text of ``mutation.file`` under ``root``; ListError when it does not apply."""
    path = root / mutation.file
    if not path.is_file():
        raise ListError(f"{mutation.name}: {mutation.file} does not exist")
    source = path.read_text(encoding="utf-8")
    span = _span(ast.parse(source), mutation.within)
    if span is None:
        raise ListError(f"{mutation.name}: no {mutation.within} in {mutation.file}")
    lines = source.splitlines(keepends=True)
    before, inside, after = lines[:span[0] - 1], "".join(lines[span[0] - 1:span[1]]), lines[span[1]:]
    found = inside.count(mutation.find)
    if found != 1:
        raise ListError(f"{mutation.name}: {mutation.find!r} occurs {found} times in "
                        f"{mutation.within} ({mutation.file}), not once")
    mutated = "".join(before) + inside.replace(mutation.find, mutation.replace) + "".join(after)
    ast.parse(mutated)  # a mutation must stay valid Python: a syntax error proves nothing
    return mutated


def tracked_files(root: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                            capture_output=True, check=True).stdout.decode()
    return [name for name in listed.split("\0") if name and (root / name).is_file()]


def make_copy(root: Path, files: list[str], into: Path) -> Path:
    for name in files:
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return into


def run_tests(copy: Path, tests: tuple[str, ...], timeout: float = TIMEOUT_S) -> tuple[int, str, float]:
    """pytest on ``tests`` inside ``copy``, importing mini_letta from the copy; code -1 past ``timeout``."""
    env = {**os.environ, "PYTHONPATH": str(copy) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               "-m", "not real_server", *tests]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "", time.monotonic() - started
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def imports_from(copy: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    done = subprocess.run([sys.executable, "-c", "import mini_letta; print(mini_letta.__file__)"],
                          cwd=copy, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ")[0]
    return ""


def try_one(mutation: Mutation, files: list[str], scratch: Path) -> tuple[str, str, float]:
    copy = make_copy(ROOT, files, Path(tempfile.mkdtemp(dir=scratch)))
    (copy / mutation.file).write_text(mutated_source(copy, mutation), encoding="utf-8")
    code, output, seconds = run_tests(copy, mutation.tests)
    shutil.rmtree(copy, ignore_errors=True)
    if code == -1:
        return "caught", f"the tests ran past {TIMEOUT_S} s (a hang)", seconds
    if code == 1:
        return "caught", first_failure(output), seconds
    if code == 0:
        return "SURVIVED", "", seconds
    tail = "\n".join(output.strip().splitlines()[-5:])
    return "ERROR", f"pytest exited {code}:\n{tail}", seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="", help="only mutations whose name contains this")
    parser.add_argument("-j", type=int, default=2, help="mutations tried at once (default 2)")
    parser.add_argument("--check", action="store_true", help="only check that every mutation applies")
    args = parser.parse_args(argv)
    try:
        mutations = [m for m in load() if args.k in m.name]
        for mutation in mutations:
            mutated_source(ROOT, mutation)
            for test in mutation.tests:
                if not (ROOT / test.split("::")[0]).exists():
                    raise ListError(f"{mutation.name}: the test {test} does not exist")
    except (ListError, SyntaxError) as problem:
        print(f"mutations.toml does not apply: {problem}", file=sys.stderr)
        return 2
    if args.check:
        print(f"{len(mutations)} mutations apply")
        return 0
    if not mutations:
        print(f"no mutation matches {args.k!r}", file=sys.stderr)
        return 2
    files = tracked_files(ROOT)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutate-") as scratch_dir:
        scratch = Path(scratch_dir)
        baseline = make_copy(ROOT, files, scratch / "baseline")
        if not imports_from(baseline).startswith(str(baseline)):
            print("the copy's tests would not import the copy's mini_letta", file=sys.stderr)
            return 2
        every_test = tuple(dict.fromkeys(t for m in mutations for t in m.tests))
        # Every listed test file at once: on a busy machine that takes several mutations' time.
        code, output, seconds = run_tests(baseline, every_test, timeout=TIMEOUT_S * 6)
        if code == -1:
            print(f"the unmutated tests ran past {TIMEOUT_S * 6} s; try again on a quieter machine", file=sys.stderr)
            return 2
        if code != 0:
            print(f"the tests fail without any mutation ({seconds:.0f} s):\n{output[-2000:]}", file=sys.stderr)
            return 2
        print(f"unmutated: {len(every_test)} test files pass ({seconds:.0f} s)")
        shutil.rmtree(baseline, ignore_errors=True)
        with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
            results = list(pool.map(lambda m: try_one(m, files, scratch), mutations))
    survived = errors = 0
    for mutation, (verdict, detail, seconds) in zip(mutations, results):
        survived += verdict == "SURVIVED"
        errors += verdict == "ERROR"
        print(f"{verdict:8} {mutation.name} ({seconds:.0f} s): {mutation.behaviour}\n"
              f"         {mutation.shown()}")
        if detail:
            print(f"         {detail}")
    caught = len(mutations) - survived - errors
    print(f"{caught} of {len(mutations)} caught, {survived} survived, {errors} errors "
          f"in {time.monotonic() - started:.0f} s")
    return 1 if survived else 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
