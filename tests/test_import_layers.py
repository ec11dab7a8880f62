"""No lower layer of ``mini_letta/`` imports a higher one (the layers drawn in docs/architecture.md).

Imports are read with ``ast`` as ``test_import_cycles`` reads them: lazy and TYPE_CHECKING imports
count. Modules of one layer may import each other; the cycle test keeps them from looping.
"""

from __future__ import annotations

from pathlib import Path

from test_import_cycles import PACKAGE_ROOT, imported_modules, module_names

# Lowest first. A name is a module or a package (all of its modules).
LAYERS: list[tuple[str, ...]] = [
    # prompts/ and tools/ are data, installed as mini_letta.prompts and mini_letta.tool_specs (seen
    # as modules only in a non-editable install, as CI's).
    ("prompts", "tool_specs"),
    ("messages", "errors", "config", "notices", "resources", "wording", "settings", "endings", "guard",
     "workspace_files", "safe_git", "front_matter", "trust", "conversation", "hooks", "instructions", "memory", "permission_mode"),
    ("context", "compaction"),
    ("cost", "sessions", "providers", "toolbox"),
    ("checkpoints", "skills", "todos"),
    ("loop",),
    ("mcp", "subagents", "user_command", "attachments", "planning"),
    ("app",),
    ("repl", "headless", "headless_commands", "acp"),
    ("cli", "cli_app", "__main__"),
]


def layer_of(module: str, layers: list[tuple[str, ...]], package: str) -> int | None:
    parts = module.split(".")[1:]
    for index, names in enumerate(layers):
        for name in names:
            if parts[: len(name.split("."))] == name.split("."):
                return index
    return None


def upward_imports(root: Path, package: str, layers: list[tuple[str, ...]]) -> list[str]:
    modules = module_names(root, package)
    found = []
    for name, path in modules.items():
        here = layer_of(name, layers, package)
        for target in sorted(imported_modules(name, path, modules)):
            there = layer_of(target, layers, package)
            if here is not None and there is not None and there > here:
                found.append(f"{name} → {target}")
    return found


def test_every_module_has_a_layer():
    unplaced = [name for name in module_names(PACKAGE_ROOT, "mini_letta")
                if name != "mini_letta" and layer_of(name, LAYERS, "mini_letta") is None]
    assert unplaced == []


def test_no_lower_layer_imports_a_higher_one():
    found = upward_imports(PACKAGE_ROOT, "mini_letta", LAYERS)
    assert found == [], "imports that run back up: " + "; ".join(found)


def test_an_import_back_up_is_found(tmp_path):
    root = tmp_path / "pkg"
    (root / "core").mkdir(parents=True)
    for relative, source in {"__init__.py": "", "core/__init__.py": "", "face.py": "import pkg.core.base\n",
                             "core/base.py": "def f():\n    from pkg.face import g\n"}.items():
        (root / relative).write_text(source, encoding="utf-8")
    assert upward_imports(root, "pkg", [("core",), ("face",)]) == ["pkg.core.base → pkg.face"]
