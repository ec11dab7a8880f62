"""Prompt texts and tool descriptions, shipped as data inside the package.

In the repository they live in the top-level ``prompts/`` and ``tools/`` folders; packaging maps
them to ``mini_letta.prompts`` and ``mini_letta.tool_specs``, for wheels and editable installs alike.

Run from a source checkout without that mapping (``python -m benchmarks.run_all`` at the root of
the repository after a plain ``pip install .``: the current folder comes first on ``sys.path``, so
the source ``mini_letta/`` shadows the installed package), the data packages do not exist and the
texts are read from the repository's folders instead.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

# The data packages and the repository folders they are built from (see pyproject.toml).
_CHECKOUT_FOLDERS = {"mini_letta.prompts": "prompts", "mini_letta.tool_specs": "tools"}


@lru_cache(maxsize=None)
def _folder(package: str) -> Traversable:
    try:
        return resources.files(package)
    except ModuleNotFoundError:
        folder = Path(__file__).resolve().parent.parent / _CHECKOUT_FOLDERS[package]
        if not folder.is_dir():
            raise
        return folder


@lru_cache(maxsize=None)
def prompt(name: str) -> str:
    """The text of ``prompts/<name>.md``."""
    return _folder("mini_letta.prompts").joinpath(f"{name}.md").read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def tool_spec(name: str) -> dict[str, Any]:
    """The parsed ``tools/<name>.json``: {"name", "description", "parameters"}."""
    return json.loads(_folder("mini_letta.tool_specs").joinpath(f"{name}.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def data(name: str) -> Any:
    """A JSON data file from ``mini_letta/data``."""
    return json.loads(resources.files("mini_letta").joinpath("data", name).read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def tool_spec_names() -> frozenset[str]:
    """The names of every ``tools/<name>.json``."""
    return frozenset(entry.name[:-5] for entry in _folder("mini_letta.tool_specs").iterdir()
                     if entry.name.endswith(".json"))
