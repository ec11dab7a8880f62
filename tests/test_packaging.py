"""A plain ``pip install .`` ships every package of mini_letta: the list in pyproject.toml is kept by
hand, and a package missing from it installs nothing of its own (CI's non-editable install found
``mini_letta.checkpoints`` missing)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "mini_letta").rglob("__init__.py")
             if "__pycache__" not in init.parts}
    assert found - listed == set()
