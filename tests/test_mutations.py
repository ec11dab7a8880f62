"""The mutation check's list (scripts/mutations.toml) still applies to the code it names.

Running the mutations takes minutes (``python scripts/mutate.py``); this only checks that each
entry still finds its code, so a change that moves or rewrites it updates the list with it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _mutate():
    spec = importlib.util.spec_from_file_location("mutate", ROOT / "scripts" / "mutate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate"] = module
    spec.loader.exec_module(module)
    return module


mutate = _mutate()


def test_every_mutation_still_applies_to_the_code_it_names():
    assert mutate.main(["--check"]) == 0


def test_a_mutation_changes_only_the_named_function(tmp_path):
    (tmp_path / "m.py").write_text("def a():\n    return 1 < 2\n\n\ndef b():\n    return 1 < 2\n")
    mutation = mutate.Mutation("m", "b compares strictly", "m.py", "b", "1 < 2", "1 <= 2", ("t.py",))
    assert mutate.mutated_source(tmp_path, mutation) == "def a():\n    return 1 < 2\n\n\ndef b():\n    return 1 <= 2\n"


@pytest.mark.parametrize(("within", "find", "problem"), [
    ("c", "1 < 2", "no c in m.py"),
    ("b", "3 < 4", "occurs 0 times"),
    ("b", "<", "occurs 2 times"),
])
def test_a_mutation_that_no_longer_finds_its_code_is_refused(tmp_path, within, find, problem):
    (tmp_path / "m.py").write_text("def b():\n    return 1 < 2 or 3 < 5\n")
    mutation = mutate.Mutation("m", "", "m.py", within, find, "1", ("t.py",))
    with pytest.raises(mutate.ListError, match=problem):
        mutate.mutated_source(tmp_path, mutation)


def test_a_mutation_that_breaks_the_syntax_is_refused(tmp_path):
    (tmp_path / "m.py").write_text("def b():\n    return 1 < 2\n")
    mutation = mutate.Mutation("m", "", "m.py", "b", "1 < 2", "1 <", ("t.py",))
    with pytest.raises(SyntaxError):
        mutate.mutated_source(tmp_path, mutation)
