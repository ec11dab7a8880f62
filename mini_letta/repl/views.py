"""Rich renderables for the REPL: the status line, /context and /memory.

Rich's table and text modules are imported by the views that draw them: the status line is needed
before the first prompt, the tables only when a command asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_letta.terminal_text import visible

if TYPE_CHECKING:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

LEVEL_STYLES = {"ok": "green", "warning": "yellow", "critical": "red", "blocked": "bold red"}
# prompt_toolkit style strings for the status bar's "N% context left".
LEVEL_TOOLBAR = {"ok": "fg:ansigreen", "warning": "fg:ansiyellow", "critical": "fg:ansired",
                 "blocked": "fg:ansired bold"}


def plain(text: str, style: str = "") -> Text:
    """Text from a model, a tool, a file, a session or memory, for Rich: never markup, controls visible."""
    from rich.text import Text

    return Text(visible(text), style=style)


def short_tokens(value: int) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M".replace(".0M", "M")
    if value >= 1_000:
        return f"{value / 1_000:.1f}k".replace(".0k", "k")
    return str(value)


def compaction_line(record) -> str:
    return (f"Compacted {record.messages_before} → {record.messages_after} messages, "
            f"{short_tokens(record.tokens_before)} → {short_tokens(record.tokens_after)} tokens "
            f"({record.trigger}; {', '.join(record.layers) or 'no change'}; {record.duration_ms} ms)")


def context_view(agent) -> Group:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    budget = agent.budget
    state = agent.context_state()
    rows = budget.breakdown(agent.system_prompt(), agent.core_memory_text(), agent.tool_specs(), agent.conversation)
    auto = f"compaction at {state.threshold:,}" if budget.auto_compact else "automatic compaction off"
    headline = Text(f"Context: {state.tokens:,} of {state.window:,} tokens · {state.percent_left}% left ({auto})",
                    style="bold")
    table = Table()
    table.add_column("category")
    table.add_column("tokens", justify="right")
    table.add_column("share", justify="right")
    table.add_column("")
    for category, tokens in rows:
        share = tokens / state.window if state.window else 0
        bar = "█" * max(0, round(share * 30))
        table.add_row(category, f"{tokens:,}", f"{share:.1%}", Text(bar, style="cyan"))
    parts: list = [headline, table]
    if agent.history:
        chart = Table(title="Recent turns", title_justify="left", box=None)
        chart.add_column("turn", justify="right")
        chart.add_column("tokens", justify="right")
        chart.add_column("")
        for point in agent.history[-12:]:
            width = round(30 * point.tokens / point.window) if point.window else 0
            mark = " ◆ compacted" if point.compacted else ""
            chart.add_row(str(point.turn), f"{point.tokens:,}", Text("▇" * width, style="magenta") + Text(mark, "yellow"))
        parts.append(chart)
    if agent.compactions:
        parts.append(Text(f"{len(agent.compactions)} compaction(s) this session; last: "
                          + compaction_line(agent.compactions[-1]), style="dim"))
    return Group(*parts)


def memory_view(memory) -> Table:
    from rich.table import Table

    table = Table(title="Core memory (always in the system prompt)", title_justify="left")
    table.add_column("block")
    table.add_column("size", justify="right")
    table.add_column("description")
    table.add_column("value")
    for block in memory.blocks.values():
        preview = block.value.strip().replace("\n", " ⏎ ")
        table.add_row(plain(block.label), f"{len(block.value):,}/{block.limit:,}", plain(block.description),
                      plain(preview[:80] + ("…" if len(preview) > 80 else "")))
    return table
