"""The MCP, sessions and checkpoints rooms keep the house rule: no module over 400 lines, and no
module reaching into another's private names (``sessions/listing.py`` used ``store._no_header``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mini_letta"
ROOMS = ("mcp", "sessions", "checkpoints")
MAX_LINES = 400


@pytest.mark.parametrize("room", ROOMS)
def test_no_module_of_the_room_is_over_400_lines(room):
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in (PACKAGE / room).glob("*.py")}
    assert {name: lines for name, lines in sizes.items() if lines > MAX_LINES} == {}


@pytest.mark.parametrize("room", ROOMS)
def test_no_module_of_the_room_imports_another_modules_private_names(room):
    found = []
    for path in (PACKAGE / room).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mini_letta."):
                own = node.module == f"mini_letta.{room}.{path.stem}"
                found += [f"{path.name}: {node.module}.{alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not own and not alias.name.startswith("__")]
    assert found == []
