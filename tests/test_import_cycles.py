"""No import cycle inside ``mini_letta/``, found by reading every module's imports with ``ast``.

Every ``import`` statement counts, wherever it stands: at the top, inside a function (a lazy import
only postpones the dependency to run time) and under ``if TYPE_CHECKING:`` (a type still ties the
two modules together). The only edges not counted are the implicit ones from a module to the
packages that contain it: Python runs a package's ``__init__`` before its submodules, so a package
that creates its own submodules (``providers.create_provider``) would otherwise always count as a
cycle. ``from package import name`` counts as an import of ``package.name`` when that is a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mini_letta

PACKAGE_ROOT = Path(mini_letta.__file__).parent


def module_names(root: Path, package: str) -> dict[str, Path]:
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                       for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in modules and target != name)
    return found


def import_cycles(root: Path, package: str) -> list[list[str]]:
    """Each cycle as a list of modules, the first repeated at the end (one per strongly connected group)."""
    modules = module_names(root, package)
    graph = {name: sorted(imported_modules(name, path, modules)) for name, path in modules.items()}
    cycles = []
    finished: set[str] = set()

    def search(start: str) -> list[str] | None:
        """A path from ``start`` back to ``start``, by depth-first search."""
        stack = [(start, [start])]
        seen = set()
        while stack:
            node, path = stack.pop()
            for target in graph[node]:
                if target == start:
                    return path + [start]
                if target not in seen and target not in finished:
                    seen.add(target)
                    stack.append((target, path + [target]))
        return None

    for name in sorted(graph):
        cycle = search(name)
        if cycle is not None:
            cycles.append(cycle)
            finished.update(cycle)
        finished.add(name)
    return cycles


def test_the_package_has_no_import_cycle():
    cycles = import_cycles(PACKAGE_ROOT, "mini_letta")
    assert cycles == [], "import cycles: " + "; ".join(" → ".join(cycle) for cycle in cycles)


def _write(root: Path, files: dict[str, str]) -> Path:
    for relative, source in files.items():
        path = root / "pkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return root / "pkg"


def test_a_cycle_through_a_lazy_import_is_found(tmp_path):
    root = _write(tmp_path, {"__init__.py": "", "cli.py": "def main():\n    from pkg.cli_app import run\n",
                             "cli_app.py": "from pkg.cli import main\n"})
    assert import_cycles(root, "pkg") == [["pkg.cli", "pkg.cli_app", "pkg.cli"]]


def test_a_cycle_through_a_type_checking_import_and_a_relative_import_is_found(tmp_path):
    root = _write(tmp_path, {
        "__init__.py": "",
        "repl/__init__.py": "",
        "repl/app.py": "from . import commands\n",
        "repl/commands.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.repl.events import E\n",
        "repl/events.py": "from pkg.repl import app\n",
    })
    assert import_cycles(root, "pkg") == [["pkg.repl.app", "pkg.repl.commands", "pkg.repl.events", "pkg.repl.app"]]


def test_a_package_creating_its_own_submodules_is_not_a_cycle(tmp_path):
    root = _write(tmp_path, {"__init__.py": "def create():\n    from pkg.demo import Demo\n",
                             "base.py": "", "demo.py": "from pkg.base import Base\n"})
    assert import_cycles(root, "pkg") == []
