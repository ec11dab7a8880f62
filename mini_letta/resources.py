"""Prompt texts and tool descriptions, shipped as data inside the package.

In the repository they live in the top-level ``prompts/`` and ``tools/`` folders; packaging maps
them to ``mini_letta.prompts`` and ``mini_letta.tool_specs``, for wheels and editable installs alike.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=None)
def prompt(name: str) -> str:
    """The text of ``prompts/<name>.md``."""
    return resources.files("mini_letta.prompts").joinpath(f"{name}.md").read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def tool_spec(name: str) -> dict[str, Any]:
    """The parsed ``tools/<name>.json``: {"name", "description", "parameters"}."""
    text = resources.files("mini_letta.tool_specs").joinpath(f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=None)
def data(name: str) -> Any:
    """A JSON data file from ``mini_letta/data``."""
    return json.loads(resources.files("mini_letta").joinpath("data", name).read_text(encoding="utf-8"))
