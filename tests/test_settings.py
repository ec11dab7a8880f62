"""Every ratio and limit of the package lives in ``mini_letta/settings.py``.

The scan reads every module of ``mini_letta/`` with ``ast`` and finds numbers in three places: names
bound to numbers at module or class level, numeric defaults of dataclass fields and of parameters
(other than 0 and 1, which start counters and flags), and float literals written inline (other than
0.0 and 1.0); in ``context/`` and ``compaction/``, integers written inline too. Each one found is either
a setting (moved into SETTINGS) or a fact listed in ``ALLOWED`` with its reason in a word. Elsewhere,
integers written inline (slices, ranges, HTTP statuses, file modes) are not scanned.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mini_letta.context.threshold import compaction_threshold
from mini_letta.settings import SETTINGS, Settings

ROOT = Path(__file__).resolve().parents[1] / "mini_letta"
# The budget and compaction themselves: there, integers written inline are scanned too (other than 0,
# 1, 2 and -1), named by their value.
STRICT_PACKAGES = ("context", "compaction")

# Facts, not choices of the budget, compaction or the tools: they stay where they are used.
#   tokenizer, unicode, unit, format, wire, protocol, exit, json, ollama, sdk, terminal: what a
#     format, a program, a terminal (a key sequence's timing, a tab stop) or a unit is; header, io:
#     a buffer's size; poll, grace: how often a loop looks, how long a process is given to end;
#     cache: how long a result is kept; os, kernel: what the system allows;
#   guard: a cap on input that only a hostile or broken file reaches (nothing a budget decides);
#   display: what the terminal shows of a list or a text, not what the model reads;
#   detector: a secret detector's thresholds; demo: the offline demo and scripted models;
#   layout: where a cut falls, not how much is kept; percent: a share written as a percentage;
#   tries: how many times a cut is measured again.
ALLOWED = {
    ("compaction/acceptance.py", 9): "format",
    ("compaction/audit.py", 4_096): "cache",
    ("compaction/layers.py", 3): "layout",
    ("compaction/plan.py", 1_000): "unit",
    ("compaction/summarizer.py", 4): "tries",
    ("compaction/transcript.py", 3): "layout",
    ("compaction/transcript.py", 4): "layout",
    ("context/budget.py", 1_000_000): "unit",
    ("context/budget.py", 1_000): "unit",
    ("context/budget.py", 99): "percent",
    ("context/budget.py", 100): "percent",
    ("context/budget.py", 200): "percent",
    ("context/threshold.py", 100): "percent",
    ("context/tokens.py", 12): "display",
    ("context/usage_floor.py", 16): "format",
    ("attachments.py", "GIT_TIMEOUT_SECONDS"): "guard",
    ("attachments.py", "MAX_PATHS"): "display",
    ("checkpoints/retention.py", "DAY_SECONDS"): "unit",
    ("context/tokens.py", "CHARS_PER_TOKEN"): "tokenizer",
    ("context/tokens.py", "IMAGE_TOKENS"): "tokenizer",
    ("context/tokens.py", "MESSAGE_OVERHEAD"): "tokenizer",
    ("context/tokens.py", "TOOL_CALL_OVERHEAD"): "tokenizer",
    ("context/tokens.py", "TOOL_SCHEMA_OVERHEAD"): "tokenizer",
    ("context/tokens.py", "_CACHE_LIMIT"): "cache",
    ("context/tokens.py", "_SPECIAL_TOKENS"): "tokenizer",
    ("context/window.py", "ONE_MILLION"): "unit",
    ("cost.py", 1e6): "unit",
    ("headless.py", "INCOMPLETE_EXIT"): "exit",
    ("hooks/__init__.py", "AFTER_EXIT_SECONDS"): "grace",
    ("hooks/replies.py", "BLOCK_EXIT_CODE"): "protocol",
    ("hooks/__init__.py", "KILL_WAIT_SECONDS"): "grace",
    ("hooks/__init__.py", "PIPE_CHUNK"): "io",
    ("hooks/__init__.py", "POLL_SECONDS"): "poll",
    ("hooks/__init__.py", "SETTINGS_CAP_BYTES"): "guard",
    ("instructions.py", "READ_CAP_BYTES"): "guard",
    ("instructions.py", 0.8): "layout",
    ("mcp/client.py", "CLOSE_SECONDS"): "sdk",
    ("mcp/config.py", "MAX_CONFIG_BYTES"): "guard",
    ("mcp/processes.py", 0.05): "poll",
    ("mcp/tools.py", "MAX_NAME"): "wire",
    ("memory.py", "FORMAT"): "format",
    ("providers/anthropic_provider.py", "COMPACT_MIN_TRIGGER"): "protocol",
    ("providers/anthropic_provider.py", "_COMPACTING"): "protocol",
    ("providers/anthropic_wire.py", "MAX_BREAKPOINTS"): "wire",
    ("providers/demo.py", "DEMO_WINDOW"): "demo",
    ("providers/demo.py", "SLOW_WORD_SECONDS"): "demo",
    ("providers/errors_map.py", "one_line.limit"): "display",
    ("providers/http_stream.py", "_READ_AFTER_DONE"): "io",
    ("providers/probe.py", "OLLAMA_DEFAULT_CONTEXT"): "ollama",
    ("providers/scripted.py", "ScriptedProvider.__init__.chunk_size"): "demo",
    ("providers/wire_cache.py", "_SLACK"): "cache",
    ("repl/app.py", 0.5): "display",
    ("repl/commands/basic.py", "MAX_KEPT_OUTPUTS"): "display",
    ("repl/commands/model.py", "MAX_LISTED"): "display",
    ("repl/commands/rewind.py", "SHOWN_FILES"): "display",
    ("repl/commands/rewind.py", "SHOWN_POINTS"): "display",
    ("repl/commands/sessions.py", "RESUME_CHOICES"): "display",
    ("repl/commands/shell.py", "SHOWN_COMMAND_LINES"): "display",
    ("repl/completion.py", "MAX_PATH_COMPLETIONS"): "display",
    ("repl/completion.py", "PATHS_REFRESH_SECONDS"): "cache",
    ("repl/diffs.py", "MAX_DIFF_LINES"): "display",
    ("repl/diffs.py", "MAX_FILE_BYTES"): "guard",
    ("repl/diffs.py", "NEW_FILE_LINES"): "display",
    ("repl/markdown_stream.py", "MarkdownStream.__init__.footer_interval"): "display",
    ("repl/markdown_stream.py", "MarkdownStream.__init__.live_lines"): "display",
    ("repl/markdown_stream.py", "MarkdownStream.__init__.min_interval"): "display",
    ("repl/markdown_stream.py", "_CODE_CONTEXT"): "display",
    ("repl/markdown_stream.py", "_FENCE_BATCH"): "display",
    ("repl/mcp_view.py", "SHOWN_LINES"): "display",
    ("repl/one_key.py", "ESCAPE_PAUSE_SECONDS"): "terminal",
    ("repl/raw_tail.py", "FOOTER_ROWS"): "display",
    ("repl/raw_tail.py", "_TAB_SIZE"): "terminal",
    ("repl/turn_keys.py", "ESCAPE_PAUSE_SECONDS"): "terminal",
    ("repl/turn_keys.py", "POLL_SECONDS"): "poll",
    ("repl/views.py", "MODEL_LABEL_MAX"): "display",
    ("sessions/listing.py", "_id_list.shown"): "display",
    ("sessions/listing.py", "_recent.shown"): "display",
    ("sessions/listing.py", "short_ids.minimum"): "display",
    ("sessions/loading.py", "FORMAT"): "format",
    ("subagents/catalog.py", "MAX_FILES"): "guard",
    ("subagents/catalog.py", "MAX_FILE_BYTES"): "guard",
    ("subagents/progress.py", "SHORT_DESCRIPTION"): "display",
    ("subagents/runner.py", "NAMES_IN_ERROR"): "display",
    ("subagents/runner.py", "WAIT_SECONDS"): "poll",
    ("toolbox/arguments.py", "MAX_SAFE_NUMBER"): "json",
    ("toolbox/files.py", "SNIFF_BYTES"): "io",
    ("toolbox/files.py", 0.1): "detector",
    ("toolbox/folder_tree.py", "MAX_FOLDERS"): "guard",
    ("toolbox/folder_tree.py", "MAX_WATCHED"): "kernel",
    ("toolbox/folder_tree.py", "MAX_WATCHED_TREES"): "kernel",
    ("toolbox/host_secrets.py", "MAX_SCANNED"): "guard",
    ("toolbox/host_secrets.py", "SOCKET_DEPTH"): "guard",
    ("toolbox/netproxy.py", "CONNECT_TIMEOUT"): "guard",
    ("toolbox/netproxy.py", "HEADER_LIMIT"): "header",
    ("toolbox/netproxy.py", "RELAY_CHUNK"): "io",
    ("toolbox/permissions.py", "SETTINGS_CAP_BYTES"): "guard",
    ("toolbox/processes.py", 0.05): "poll",
    ("toolbox/ripgrep.py", "ARGUMENT_BYTES"): "os",
    ("toolbox/sandbox.py", "HIDDEN_PATHS_TTL"): "cache",
    ("toolbox/sandbox_paths.py", "MAX_ENTRIES_SCANNED"): "guard",
    ("toolbox/sandbox_paths.py", "MAX_ENTRIES_WALKED"): "guard",
    ("toolbox/shell.py", "CHUNK"): "io",
    ("toolbox/shell.py", "DRAIN_GRACE"): "grace",
    ("toolbox/shell.py", "KILL_GRACE"): "grace",
    ("toolbox/shell.py", "TREE_SCAN_INTERVAL"): "poll",
    ("toolbox/shell.py", 0.25): "poll",
    ("trust/redact.py", "_MIN_LITERAL_LENGTH"): "detector",
    ("trust/redact.py", "_RANDOM_LOOKING"): "detector",
    ("trust/redact.py", 4.5): "detector",
    ("trust/secret_values.py", "MIN_SECRET_LENGTH"): "detector",
    ("trust/terminal_text.py", "_INVISIBLE"): "unicode",
    ("trust/terminal_text.py", "_SPACES"): "unicode",
    ("workspace_files.py", "DEFAULT_JSON_CAP_BYTES"): "guard",
    ("workspace_files.py", "UTF8_MAX_BYTES"): "unicode",
}


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


def _a_limit(node: ast.AST) -> bool:
    """A numeric default that is more than a counter's start or a flag (0 or 1, alone or in a tuple)."""
    return _numeric(node) and any(isinstance(leaf, ast.Constant) and type(leaf.value) in (int, float)
                                  and leaf.value not in (0, 1) for leaf in ast.walk(node))


def _bindings(body: list[ast.stmt]) -> list[tuple[str, ast.expr]]:
    found = []
    for item in body:
        if isinstance(item, ast.Assign):
            found += [(target.id, item.value) for target in item.targets if isinstance(target, ast.Name)]
        elif isinstance(item, ast.AnnAssign) and item.value is not None and isinstance(item.target, ast.Name):
            found.append((item.target.id, item.value))
    return found


def numeric_constants(source: str) -> list[str]:
    """Names bound to numbers at module or class level; a class's lower-case fields only when their
    default is more than 0 or 1 (a dataclass of limits outside settings.py is a second settings object)."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            found += [name for name, value in _bindings(node.body)
                      if (name.isupper() and _numeric(value)) or (not name.isupper() and _a_limit(value))]
        else:
            found += [name for name, value in _bindings([node]) if _numeric(value)]
    return found


def numeric_defaults(source: str) -> list[str]:
    """``function.parameter`` (``Class.method.parameter``) for each parameter defaulting to a number
    other than 0 or 1."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = child.args
                positional = args.posonlyargs + args.args
                pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
                pairs += [(arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults) if default is not None]
                found.extend(f"{prefix}{child.name}.{arg.arg}" for arg, default in pairs if _a_limit(default))
                visit(child, f"{prefix}{child.name}.")
    visit(ast.parse(source), "")
    return found


def inline_ratios(source: str, kind: type = float) -> list[float]:
    """Float literals (``kind``) other than 0.0 and 1.0 outside the values bound at module or class level
    (which ``numeric_constants`` names) and outside parameter defaults (``numeric_defaults``)."""
    tree = ast.parse(source)
    seen: set[int] = set()
    for node in tree.body:
        for _, value in _bindings(node.body if isinstance(node, ast.ClassDef) else [node]):
            seen.update(id(inner) for inner in ast.walk(value))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
                seen.update(id(inner) for inner in ast.walk(default))
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and type(node.value) is kind and node.value not in (0.0, 1.0)
            and id(node) not in seen]


def inline_integers(source: str) -> list[int]:
    """Integer literals other than 0, 1, 2 and -1 outside the values bound at module or class level
    and outside parameter defaults."""
    return [number for number in inline_ratios(source, int) if number not in (0, 1, 2, -1)]


def found_in(path: Path) -> list[str | float]:
    source = path.read_text()
    strict = path.relative_to(ROOT).parts[0] in STRICT_PACKAGES
    return [*numeric_constants(source), *numeric_defaults(source), *inline_ratios(source),
            *(inline_integers(source) if strict else [])]


def scanned() -> dict[tuple[str, str | float], Path]:
    return {(str(path.relative_to(ROOT)), name): path for path in sorted(ROOT.rglob("*.py"))
            if path.name != "settings.py" or path.parent != ROOT for name in found_in(path)}


def test_no_module_defines_a_ratio_or_limit_of_its_own():
    stray = sorted((key for key in scanned() if key not in ALLOWED), key=str)
    assert stray == [], ("move these into mini_letta/settings.py (or, for a fact, list them in ALLOWED "
                         f"with a reason): {stray}")


def test_every_allowed_number_is_still_there():
    found = scanned()
    assert [key for key in ALLOWED if key not in found] == []


def test_the_scan_finds_constants_at_module_and_class_level():
    source = ("A = 0.65\nB: int = 3\nC = {'ok': 1}\nclass K:\n    LIMIT = -2\n    field: int = 0\n"
              "    share: float = 0.4\nNAME = 'x'\n")
    assert numeric_constants(source) == ["A", "B", "C", "LIMIT", "share"]


def test_the_scan_finds_numeric_defaults_and_inline_ratios():
    source = ("X = 0.5\ndef f(a, b=3, *, c=0, d=0.25):\n    return a * 0.9 + b * 1.0\n"
              "class K:\n    def m(self, n: int = 40):\n        return n\n")
    assert numeric_defaults(source) == ["f.b", "f.d", "K.m.n"]
    assert inline_ratios(source) == [0.9]


def test_a_new_stray_ratio_anywhere_in_the_package_is_found(tmp_path, monkeypatch):
    module = tmp_path / "mini_letta" / "toolbox" / "new_tool.py"
    module.parent.mkdir(parents=True)
    module.write_text("def cap(text, room):\n    return text[:int(room * 0.7)]\n\nLIMIT = 12\n")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path / "mini_letta")
    assert set(scanned()) == {("toolbox/new_tool.py", "LIMIT"), ("toolbox/new_tool.py", 0.7)}
    (tmp_path / "mini_letta" / "compaction").mkdir()
    (tmp_path / "mini_letta" / "compaction" / "new_layer.py").write_text("def keep(text):\n    return text[:300]\n")
    assert ("compaction/new_layer.py", 300) in scanned()


def test_seed_000_threshold_numbers_are_named_in_the_settings():
    assert SETTINGS.compaction_reserve_tokens == 16_384
    assert SETTINGS.small_window_reserve_ratio == 0.2
    assert Settings() == SETTINGS
    assert [compaction_threshold(w) for w in (200_000, 32_000, 2_000)] == [183_616, 25_600, 1_600]


def test_a_changed_setting_moves_the_threshold(monkeypatch):
    monkeypatch.setattr(SETTINGS, "compaction_reserve_tokens", 1_000)
    assert compaction_threshold(200_000) == 199_000


def test_a_changed_setting_of_a_nested_group_reaches_its_reader(monkeypatch):
    from mini_letta.subagents.task_spec import listing_budget

    assert listing_budget(100_000) == 2_000
    monkeypatch.setattr(SETTINGS.subagents, "listing_share", 0.05)
    assert listing_budget(100_000) == 5_000
