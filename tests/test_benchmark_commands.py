"""The README's benchmark commands run from the repository root after the README's install.

After ``pip install .`` (not editable), ``python -m benchmarks.<name>`` at the root of the
repository imports ``mini_letta`` from the source folder, because the current folder comes first on
``sys.path``: the installed package, with its ``mini_letta.prompts`` and ``mini_letta.tool_specs``
data packages, is shadowed. The tests recreate that situation with the interpreter running these
tests: ``-S`` skips the site initialisation (where an editable install maps the data packages to
``prompts/`` and ``tools/``), and ``PYTHONPATH`` names its site-packages for the dependencies.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent


def _from_the_repository_root(home: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "MINI_LETTA_HOME": str(home)}
    env.pop("PYTHONSAFEPATH", None)  # it would keep the current folder off sys.path
    return subprocess.run([sys.executable, "-S", *arguments], cwd=REPOSITORY, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_source_folder_shadows_the_package_without_its_data_packages(tmp_path):
    probe = ("import importlib.util, mini_letta; print(mini_letta.__file__); "
             "print(importlib.util.find_spec('mini_letta.tool_specs'))")
    completed = _from_the_repository_root(tmp_path, "-c", probe)
    assert completed.returncode == 0, completed.stderr
    location, spec = completed.stdout.splitlines()
    assert Path(location) == REPOSITORY / "mini_letta" / "__init__.py"
    assert spec == "None"


@pytest.mark.parametrize("command, expected", [
    # The agent reads its system prompt and tool descriptions: the data the shadowing hid.
    (["-m", "benchmarks.simulate", "--turns", "3", "--windows", "32000"], "turns ended by an error 0"),
    (["-m", "benchmarks.bench_subagents", "--files", "20"], "Goal with subagents: 20/20 read"),
    (["-m", "benchmarks.bench_stream", "--quick"], "Per settled block"),
    (["-m", "benchmarks.bench_cache", "--turns", "12", "--window", "16000"], "from cache"),
    (["-m", "benchmarks.bench_search", "--quick", "--runs", "1", "--no-walker"], "from ignored"),
    (["-m", "benchmarks.bench_turn", "--messages", "60", "--turns", "2", "--repeats", "1"], "Anthropic to wire"),
    (["-m", "benchmarks.bench_tool_loop", "--steps", "2", "--turns", "2", "--resumed-messages", "40"], "as the server saw"),
])
def test_a_readme_benchmark_command_runs_from_the_repository_root(tmp_path, command, expected):
    completed = _from_the_repository_root(tmp_path, *command)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert expected in completed.stdout
