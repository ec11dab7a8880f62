"""Every ratio and limit of the context budget and of compaction lives in ``mini_letta/settings.py``."""

from __future__ import annotations

import ast
from pathlib import Path

from mini_letta.context.threshold import compaction_threshold
from mini_letta.settings import SETTINGS, Settings

PACKAGES = ("context", "compaction")
# Facts about a tokenizer or a model name, not choices of the budget: they stay where they are used.
ALLOWED = {
    ("context/tokens.py", "CHARS_PER_TOKEN"), ("context/tokens.py", "IMAGE_TOKENS"),
    ("context/tokens.py", "MESSAGE_OVERHEAD"), ("context/tokens.py", "TOOL_CALL_OVERHEAD"),
    ("context/tokens.py", "TOOL_SCHEMA_OVERHEAD"), ("context/tokens.py", "_CACHE_LIMIT"),
    ("context/tokens.py", "_SPECIAL_TOKENS"), ("context/window.py", "ONE_MILLION"),
}
ROOT = Path(__file__).resolve().parents[1] / "mini_letta"


def _numeric(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, (ast.Dict,)):
        return bool(node.values) and any(_numeric(value) for value in node.values)
    if isinstance(node, (ast.Tuple, ast.List)):
        return bool(node.elts) and any(_numeric(element) for element in node.elts)
    return False


def numeric_constants(source: str) -> list[str]:
    """Names bound to numbers at module or class level (a dataclass field's default is no constant:
    lower-case names inside a class are passed over)."""
    found = []
    for node in ast.parse(source).body:
        scopes = [(False, node)] if not isinstance(node, ast.ClassDef) else [(True, item) for item in node.body]
        for in_class, item in scopes:
            if isinstance(item, ast.Assign):
                targets, value = item.targets, item.value
            elif isinstance(item, ast.AnnAssign) and item.value is not None:
                targets, value = [item.target], item.value
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Name) and _numeric(value):
                    if in_class and not target.id.isupper():
                        continue
                    found.append(target.id)
    return found


def test_no_module_of_context_or_compaction_defines_a_ratio_or_limit_of_its_own():
    stray = [(str(path.relative_to(ROOT)), name)
             for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             for name in numeric_constants(path.read_text())
             if (str(path.relative_to(ROOT)), name) not in ALLOWED]
    assert stray == [], f"move these into mini_letta/settings.py: {stray}"


def test_the_scan_finds_constants_at_module_and_class_level():
    source = "A = 0.65\nB: int = 3\nC = {'ok': 1}\nclass K:\n    LIMIT = -2\n    field: int = 0\nNAME = 'x'\n"
    assert numeric_constants(source) == ["A", "B", "C", "LIMIT"]


def test_seed_000_threshold_numbers_are_named_in_the_settings():
    assert SETTINGS.compaction_reserve_tokens == 16_384
    assert SETTINGS.small_window_reserve_ratio == 0.2
    assert Settings() == SETTINGS
    assert [compaction_threshold(w) for w in (200_000, 32_000, 2_000)] == [183_616, 25_600, 1_600]


def test_a_changed_setting_moves_the_threshold(monkeypatch):
    monkeypatch.setattr(SETTINGS, "compaction_reserve_tokens", 1_000)
    assert compaction_threshold(200_000) == 199_000
