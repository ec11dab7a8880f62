"""Keeping MCP tool definitions inside the budget: defer them behind one ``tool_search`` tool.

Claude Code's ``ENABLE_TOOL_SEARCH=auto:N`` relies on Anthropic's server-side search; this works on
every provider because the search runs here. When the MCP definitions together pass N% of the window
(``MINI_LETTA_TOOL_SEARCH=auto:N``, default 10; ``on`` always defers, ``off`` never), the request
carries the built-in tools, ``tool_search`` and the deferred tools' names in its description. A search
lists the best matches and loads them: their schemas are sent with every following request, appended
after the tools already sent, so a provider's cached prefix stays valid.

Pure functions over tool specs: no SDK, no terminal.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from mini_letta.notices import Say, quiet
from mini_letta import config
from mini_letta.messages import ToolSpec
from mini_letta.settings import SETTINGS
from mini_letta.wording import counted

SEARCH_TOOL = "tool_search"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Policy:
    mode: str  # "auto", "on" or "off"
    share: float = SETTINGS.mcp.deferral_share  # percent of the window, for "auto"

    def defers(self, mcp_tokens: int, window: int) -> bool:
        if self.mode == "off" or mcp_tokens == 0:
            return False
        return self.mode == "on" or mcp_tokens > window * self.share / 100

    def describe(self) -> str:
        return f"auto ({self.share:g}% of the window)" if self.mode == "auto" else self.mode


def policy_from_env(say: Say = quiet) -> Policy:
    raw = os.environ.get("MINI_LETTA_TOOL_SEARCH", "").strip().lower()
    if raw in ("", "auto"):
        return Policy("auto")
    if raw in ("on", "true", "1"):
        return Policy("on")
    if raw in ("off", "false", "0"):
        return Policy("off")
    if raw.startswith("auto:"):
        share = config.percent(raw[5:], "MINI_LETTA_TOOL_SEARCH", say=say)
        if share is not None:
            return Policy("auto", share)
        return Policy("auto")
    say(f"Ignoring MINI_LETTA_TOOL_SEARCH={raw!r}: use auto, auto:N (a percentage), on or off.")
    return Policy("auto")


def search_spec(names_by_server: dict[str, list[str]], full_names: bool = True) -> ToolSpec:
    """The ``tool_search`` tool; its description names what it can load (every tool, or only how
    many each server has when the names themselves would not fit)."""
    if full_names:
        listing = "\n".join(f"- {server}: {', '.join(names)}" for server, names in names_by_server.items())
    else:
        listing = "\n".join(f"- {server}: {counted(len(names), 'tool')}" for server, names in names_by_server.items())
    description = (
        "Load tools of the user's MCP servers that are not loaded yet. Give words describing what you "
        "need (or 'select:<name>,<name>' for exact names); the best matches are returned with their "
        "descriptions and can be called from the next step on, as mcp__<server>__<tool>. "
        "Deferred tools by server:\n" + listing)
    return ToolSpec(SEARCH_TOOL, description, {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What the tool should do, or select:<names>."},
                       "max_results": {"type": "integer", "minimum": 1, "maximum": 20,
                                       "description": f"How many tools to load (default {SETTINGS.mcp.search_results})."}},
        "required": ["query"],
    })


def search(query: str, specs: list[ToolSpec], limit: int = SETTINGS.mcp.search_results) -> list[ToolSpec]:
    """The specs that best match ``query``: the tools it names (``select:a,b``, or names given whole,
    with or without the ``mcp__server__`` prefix) if any, else by words shared with the name
    (weighted) and the description."""
    text = query.strip()
    by_name = {spec.name: spec for spec in specs}
    if text.lower().startswith("select:"):
        wanted = [name.strip() for name in text[7:].split(",") if name.strip()]
        return [by_name[name] for name in wanted if name in by_name][:limit]
    # A tool named whole, with or without its mcp__<server>__ prefix.
    short = {spec.name.split("__", 2)[-1]: spec for spec in specs}
    exact = [by_name.get(word) or short[word] for word in text.split() if word in by_name or word in short]
    if exact:  # the model knows what it wants: loading look-alikes too would only cost tokens
        return exact[:limit]
    words = _words(text)
    scored = []
    for index, spec in enumerate(specs):
        name_words = _words(spec.name.replace("_", " "))
        description_words = _words(spec.description)
        score = 3 * len(words & name_words) + len(words & description_words)
        # A word that is part of a longer name word ("time" in "timezone") still says something.
        score += sum(1 for word in words if len(word) > 3 and any(word in other and word != other for other in name_words))
        if score:
            scored.append((-score, index, spec))
    scored.sort(key=lambda item: item[:2])
    return [spec for _, _, spec in scored][:limit]


def _words(text: str) -> set[str]:
    """Lower-case words, a plural's "s" dropped ("issues" finds "issue")."""
    return {word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
            for word in _WORD.findall(text.lower())}
