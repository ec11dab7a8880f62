"""The floor's compact form, for windows where the usual one would crowd out the conversation.

The floor (system prompt, core memory, tool schemas) is paid on every request. The usual one is
~1,700 tokens with every tool: 41% of a 4,096-token window (Ollama's default), which leaves
compaction too little room to work with. When the usual floor would pass ``SETTINGS.compact_floor_share``
of the window, the agent sends a compact one instead: the terse system prompt
(``prompts/system_compact.md``), core memory without its editing guide, each built-in tool with
its short description (``short_description`` in ``tools/<name>.json``), no parameter
descriptions or bounds and only its ``short_parameters`` where the file names them, and the optional tools left out: memory editing, and ``conversation_search`` in
windows under ``SETTINGS.recall_min_window``. Once chosen for a window it stays, so the prompt cache is not
thrown away by a ratio that wobbles around the boundary.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from mini_letta.messages import ToolSpec
from mini_letta.resources import tool_spec
from mini_letta.settings import SETTINGS

MEMORY_TOOLS = ("core_memory_append", "core_memory_replace")
RECALL_TOOL = "conversation_search"
COMPACT_PROMPT = "system_compact"
FULL_PROMPT = "system"


# Schema keywords the compact form leaves out: the tool checks the values it gets anyway.
_LEFT_OUT_KEYWORDS = ("description", "minimum", "maximum")


def _bare(schema: Any) -> Any:
    """A JSON schema without its descriptions and bounds (names, types and enums stay)."""
    if isinstance(schema, dict):
        return {key: _bare(value) for key, value in schema.items() if key not in _LEFT_OUT_KEYWORDS}
    if isinstance(schema, list):
        return [_bare(value) for value in schema]
    return schema


def _short_parameters(parameters: dict, keep: list[str] | None) -> dict:
    """The parameters bare, and only those named in ``keep`` (``short_parameters``) when given."""
    bare = _bare(parameters)
    if keep is not None and isinstance(bare.get("properties"), dict):
        bare["properties"] = {name: value for name, value in bare["properties"].items() if name in keep}
    return bare


def _short_form(name: str) -> dict | None:
    try:
        data = tool_spec(name)
    except (FileNotFoundError, OSError, ValueError):
        return None  # not one of ours (an MCP tool, a test's): sent as it is
    return data if "short_description" in data else None


def compact_specs(specs: list[ToolSpec], window: int) -> list[ToolSpec]:
    """``specs`` in their compact form: the optional tools left out, the others shortened."""
    left_out = set(MEMORY_TOOLS) | ({RECALL_TOOL} if window < SETTINGS.recall_min_window else set())
    result = []
    for spec in specs:
        if spec.name in left_out:
            continue
        short = _short_form(spec.name)
        if short is None:
            result.append(spec)
        else:
            result.append(ToolSpec(spec.name, short["short_description"],
                                   _short_parameters(spec.parameters, short.get("short_parameters"))))
    return result


class FloorForm:
    """Which form of the floor a session sends, decided per window, once its tools are all in:
    while ``undecided`` (the assembly registering them) the answer is worked out each time and
    kept for none, so a tool registered last still counts."""

    def __init__(self) -> None:
        self._decided: dict[int, bool] = {}
        self.full_tokens = 0  # the usual floor, when the compact one was chosen
        self.announced = False
        self._held = False

    @contextmanager
    def undecided(self):
        self._held = True
        try:
            yield self
        finally:
            self._held = False

    def compact(self, window: int, full_floor: Callable[[], int]) -> bool:
        """Whether to send the compact form in ``window``; ``full_floor`` counts the usual floor as
        the provider would (asked once per window)."""
        if window in self._decided:
            return self._decided[window]
        tokens = full_floor()
        compact = tokens > window * SETTINGS.compact_floor_share
        if not self._held:
            self._decided[window] = compact
            if compact:
                self.full_tokens = tokens
        return compact

    def describe(self, window: int, compact_tokens: int) -> str:
        """One sentence for the user: what the compact floor leaves out, and what it saves."""
        left_out = "memory editing" + (f" and {RECALL_TOOL}" if window < SETTINGS.recall_min_window else "")
        return (f"The {window:,}-token window is small, so mini-letta sends a compact system prompt and short tool "
                f"descriptions, without {left_out} ({self.full_tokens:,} → {compact_tokens:,} tokens of "
                f"system prompt and tools).")
