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


def test_building_the_wheel_leaves_the_checkout_as_it_was(tmp_path):
    """``pip install .`` asks the backend for its requirements, the metadata and the wheel; each is
    made in a copy, so no build/ or egg-info appears in the checkout (only tracked and ignored-before
    files remain). pip builds it as ``pip install .`` does, in its isolated build environment."""
    import subprocess
    import sys
    import zipfile

    root = Path(__file__).resolve().parents[1]
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(root), str(checkout)], check=True)
    for name in ("pyproject.toml", "build_backend/clean_build.py"):  # the working copy's, committed or not
        (checkout / name).parent.mkdir(exist_ok=True)
        (checkout / name).write_bytes((root / name).read_bytes())
    before = sorted(p.relative_to(checkout).as_posix() for p in checkout.rglob("*") if ".git" not in p.parts)
    out = tmp_path / "out"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), "."],
                           cwd=checkout, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (wheel,) = out.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "mini_letta/tool_specs/todo_write.json" in names and "mini_letta/todos/items.py" in names
    after = sorted(p.relative_to(checkout).as_posix() for p in checkout.rglob("*")
                   if ".git" not in p.parts and "__pycache__" not in p.parts)
    assert after == [name for name in before if "__pycache__" not in name]
