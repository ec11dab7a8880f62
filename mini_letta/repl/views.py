"""Rich renderables for the REPL: the status line, /context and /memory.

Rich's table and text modules are imported by the views that draw them: the status line is needed
before the first prompt, the tables only when a command asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_letta.context.budget import short_tokens  # noqa: F401  (re-exported for the REPL)
from mini_letta.trust.terminal_text import preview, visible
from mini_letta.wording import counted

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


# Status-bar fields dropped first when the bar is wider than the terminal; percent left and the
# auto-compaction state always stay.
STATUS_DROP_ORDER = ("sandbox", "rewound", "ahead", "window", "mcp", "model", "tokens")
STATUS_SEPARATOR = " · "


MODEL_LABEL_MAX = 40


def model_label(model: str) -> str:
    """A model id short enough for the status bar: llama.cpp names its model by the ``-m`` path, of
    which the file name is what a person recognises; a long id keeps its start and end."""
    if model.startswith(("/", "./", "~")) or model.endswith(".gguf"):
        model = model.replace("\\", "/").rsplit("/", 1)[-1]
    if len(model) > MODEL_LABEL_MAX:
        half = (MODEL_LABEL_MAX - 1) // 2
        model = model[:half] + "…" + model[-half:]
    return model


def status_fields(agent) -> list[tuple[str, str, str]]:
    """The status bar as (field, text, level) triples, in display order."""
    state = agent.context_state()
    # With automatic compaction off, the blocked level refuses every message (loop/preflight.py).
    full = state.level == "blocked" and not agent.budget.auto_compact
    fields = [("percent", "context full — /compact" if full else f"{state.percent_left}% context left", state.level),
              ("model", f"{agent.provider.name}:{model_label(agent.provider.model)}", ""),
              ("tokens", f"{short_tokens(state.tokens)}/{agent.budget.window_label} tokens", "")]
    origin = getattr(agent.budget, "window_origin", "")
    if origin:
        fields.append(("window", f"window: {origin}", ""))
    if not agent.budget.auto_compact:
        fields.append(("auto", "auto-compact off", ""))
    elif agent.compacting.guards.breaker_open:
        fields.append(("auto", "auto-compact paused after 3 failures (/compact resets)", ""))
    if agent.ahead.ready:
        fields.append(("ahead", "summary ready", ""))
    freed = getattr(agent.checkpoints, "freed", 0)
    if freed:
        fields.append(("rewound", f"rewind freed {short_tokens(freed)}", ""))
    connecting = mcp_progress(agent)
    if connecting:
        fields.append(("mcp", connecting, ""))
    mode = mode_label(getattr(getattr(getattr(agent, "toolbox", None), "permissions", None), "mode", None))
    if mode:
        fields.insert(1, ("mode", mode, ""))
    sandbox = getattr(getattr(agent, "toolbox", None), "sandbox", None)
    if sandbox is not None and sandbox.active:  # off or unavailable: said at start and by /sandbox
        fields.append(("sandbox", f"sandbox: {sandbox.mode}", ""))
    return fields


def mode_label(mode) -> str:
    """The permission mode for the status bar, "" in the default mode (Claude Code's markers)."""
    from mini_letta.permission_mode import ACCEPT_EDITS, PLAN

    name = getattr(mode, "name", None)
    if name == ACCEPT_EDITS:
        return "⏵⏵ auto-accept edits (shift+tab)"
    if name == PLAN:
        return "⏸ plan mode (shift+tab)"
    return ""


def mcp_progress(agent) -> str:
    """"MCP 1/2 connecting" while the MCP servers connect in the background, else ""."""
    tools = getattr(agent, "mcp", None)
    return tools.servers.progress() if tools is not None else ""


def fit_status(fields: list[tuple[str, str, str]], width: int) -> list[tuple[str, str, str]]:
    """Drop fields by priority until the bar fits ``width`` columns."""
    for name in STATUS_DROP_ORDER:
        if len(STATUS_SEPARATOR.join(text for _, text, _ in fields)) <= width:
            break
        fields = [field for field in fields if field[0] != name]
    return fields


def status_text(fields: list[tuple[str, str, str]]):
    """The status bar as a ``rich.text.Text`` (for the footer shown during a turn)."""
    from rich.text import Text

    parts = [plain(text, LEVEL_STYLES.get(level, "")) for _, text, level in fields]
    return Text(STATUS_SEPARATOR).join(parts)




def tool_result_line(text: str, is_error: bool):
    """The collapsed result under a tool call: its first line, and how to see the rest."""
    from rich.text import Text

    from mini_letta.toolbox.outcome import NO_OUTPUT, summarize_output

    told = summarize_output(text)
    first = preview(visible(told.first), 100) if told.first else NO_OUTPUT
    style = "red" if is_error else "dim"
    line = Text.assemble(("  ⎿ ", style), (first, style))
    if told.exit and (is_error or told.lines == 0):
        line.append(f" [{told.exit}]", style=style)
    if told.lines > 1:
        more = told.lines - 1
        line.append(f" (+{counted(more, 'line')} · Ctrl-O or /expand to see all)", style="dim italic")
    return line


_LAYER_WORDS = {"clear_tool_results": "cleared old tool outputs", "collapse": "shortened long tool outputs",
                "drop_oldest": "dropped the oldest turns"}


def compaction_line(record, percent_left: int | None = None) -> str:
    """A compaction in plain words: "Summarized 37 older messages: 12.3k → 4.8k tokens, 57% left"."""
    actions = []
    for layer in record.layers:
        if layer in ("summarize", "extractive", "native"):
            summarized = max(1, record.messages_before - record.messages_after + 1)
            how = {"summarize": "", "extractive": " (without the model)", "native": " (the provider's own compaction)"}
            actions.append(f"summarized {summarized} older messages{how[layer]}")
        elif layer in _LAYER_WORDS:
            actions.append(_LAYER_WORDS[layer])
    if not actions:
        actions.append(f"compacted {record.messages_before} → {record.messages_after} messages")
    said = " and ".join([", ".join(actions[:-1]), actions[-1]] if len(actions) > 1 else actions)
    left = f", {percent_left}% left" if percent_left is not None else ""
    return (f"{said[:1].upper()}{said[1:]}: {short_tokens(record.tokens_before)} → "
            f"{short_tokens(record.tokens_after)} tokens{left}")


def context_view(agent) -> Group:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    budget = agent.budget
    state = agent.context_state()
    rows = in_context_rows(budget.breakdown(agent.system_prompt(), agent.prompt.core_memory(), agent.tool_specs(),
                                            agent.conversation, agent.prompt.skills_list()), state)
    guess = (" (guessed, shown as ~…? in the status bar: set CODEAGENT_MAX_CONTEXT_TOKENS to the real one)"
             if budget.window_info.guessed else "")
    headline = Text(f"{state.percent_left}% context left · {state.tokens:,} of {state.window:,} tokens in use\n"
                    f"Window: {budget.window_info.source}{guess}", style="bold")
    meaning = Text(percent_meaning(budget.auto_compact, state.threshold), style="dim")
    table = Table()
    table.add_column("category")
    table.add_column("tokens", justify="right")
    table.add_column("share", justify="right")
    table.add_column("")
    for category, tokens in rows:
        share = tokens / state.window if state.window else 0
        # Free room in the whole window: not the "context left" above, which ends where compaction runs.
        category = FREE_ROW if category == "free" else category
        bar = "█" * max(0, round(share * 30))
        table.add_row(category, f"{tokens:,}", f"{share:.1%}", Text(bar, style="cyan"))
    parts: list = [headline, meaning, table]
    system, tools = agent.system_prompt(), agent.tool_specs()
    served = budget.calibration.served_floor(system, tools)
    if served is not None:
        # The rows are our tokenizer's shares; a template that drops the tool schemas makes the
        # server's floor far from them, which is worth knowing when the window is small.
        how = "counts" if budget.calibration.floor_counted_by_server(system, tools) else "counts (as its usage reports show)"
        parts.append(Text(f"The server {how} system prompt and tool schemas as {served:,} tokens "
                          f"(our tokenizer: {budget.calibration.floor(system, tools):,}); its chat template decides what "
                          f"they cost.", style="dim"))
    if agent.prompt.compact_floor():
        parts.append(Text(agent.prompt.floor_form.describe(budget.window, budget.calibration.floor_calibrated(system, tools)), style="dim"))
    if agent.history:
        chart = Table(title="Recent turns", title_justify="left", box=None)
        chart.add_column("turn", justify="right")
        chart.add_column("tokens", justify="right")
        chart.add_column("")
        for point in agent.history[-12:]:
            width = round(30 * point.tokens / point.window) if point.window else 0
            mark = " ◆ compacted" if point.compacted else ""
            chart.add_row(f"/compact after {point.turn}" if point.manual else str(point.turn), f"{point.tokens:,}", Text("▇" * width, style="magenta") + Text(mark, "yellow"))
        parts.append(chart)
    parts.append(Text(cache_line(agent.spend), style="dim"))
    if agent.compactions:
        parts.append(Text(f"{counted(len(agent.compactions), 'compaction')} this session; last: "
                          + compaction_line(agent.compactions[-1]), style="dim"))
    subagents = _subagents_line(agent)
    if subagents:
        parts.append(Text(subagents, style="dim"))
    return Group(*parts)


def _subagents_line(agent) -> str | None:
    from mini_letta.subagents.progress import runs_line

    return runs_line(getattr(getattr(agent, "subagents", None), "runs", []))


_NOT_IN_CONTEXT = ("reserved output", "free")
FREE_ROW = "free (raw share of the window)"


def percent_meaning(auto_compact: bool, threshold: int) -> str:
    """What "N% context left" means, said once in /help and /context."""
    if auto_compact:
        return (f'"N% context left" is the room before compaction: at 0% ({threshold:,} tokens) the older '
                "conversation is summarized; the window's raw free share is larger.")
    return ('"N% context left" is the room left in the window less the reply\'s reserve (automatic '
            "compaction is off): at 0% nothing more fits; /compact or /clear makes room.")


def in_context_rows(rows: list[tuple[str, int]], state) -> list[tuple[str, int]]:
    """The breakdown's rows made to add up to the headline: the local counts of what is in context,
    scaled to the request size the headline shows (the provider's usage where it reported one),
    rounded so the sum is exact; then the reserve and what is free, which fill the window."""
    content = [(name, tokens) for name, tokens in rows if name not in _NOT_IN_CONTEXT]
    reserved = dict(rows).get("reserved output", 0)
    local = sum(tokens for _, tokens in content)
    if local > 0:
        exact = [tokens * state.tokens / local for _, tokens in content]
        scaled = [int(value) for value in exact]
        # Largest remainders get the units lost to rounding down, so the rows sum to the headline.
        order = sorted(range(len(exact)), key=lambda i: exact[i] - scaled[i], reverse=True)
        for index in order[:state.tokens - sum(scaled)]:
            scaled[index] += 1
        content = [(name, value) for (name, _), value in zip(content, scaled)]
    return content + [("reserved output", reserved), ("free", max(0, state.window - state.tokens - reserved))]


def cache_line(spend) -> str:
    from mini_letta.cost import cache_hit_share

    share = cache_hit_share(spend.usage)
    if share is None:
        return "Prompt cache: no model call yet this session."
    return (f"Prompt cache: {share:.0%} of this session's input tokens were read from the cache "
            f"({spend.usage.cache_read_tokens:,} of {spend.usage.prompt_tokens:,}).")


def cost_view(agent) -> Group:
    """/cost: the session's tokens by kind, its cost when the model has a price, and the cache share."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from mini_letta.cost import dollars

    spend = agent.spend
    usage = spend.usage
    table = Table(title="This session's model calls", title_justify="left", box=None)
    table.add_column("tokens")
    table.add_column("", justify="right")
    for label, value in (("input", usage.input_tokens), ("read from cache", usage.cache_read_tokens),
                         ("written to cache", usage.cache_write_tokens), ("output", usage.output_tokens)):
        table.add_row(label, f"{value:,}")
    if spend.usd is not None:
        checked = f" (prices checked {spend.table.checked})" if spend.table.checked else ""
        total = Text(f"Cost: {dollars(spend.usd)} over {counted(spend.calls, 'call')}{checked}.", style="bold")
    elif spend.calls:
        total = plain(f"No total: {counted(spend.unpriced_calls, 'call')} used a model with no known price "
                      f"(this session's model is {agent.provider.model!r}); add it to prices.json in the "
                      f"data folder to see costs.")
    else:
        total = Text("No model call yet this session.")
    parts = [table, total, Text(cache_line(spend), style="dim")]
    subagents = _subagents_line(agent)
    if subagents:
        parts.append(Text(f"Counted above: {subagents[0].lower()}{subagents[1:]}", style="dim"))
    return Group(*parts)


def memory_view(memory) -> Table:
    from rich.table import Table

    table = Table(title="Core memory (always in the system prompt)", title_justify="left")
    table.add_column("block")
    table.add_column("size", justify="right")
    table.add_column("description")
    table.add_column("value")
    for block in memory.blocks.values():
        table.add_row(plain(block.label), f"{len(block.value):,}/{block.limit:,}", plain(block.description),
                      plain(preview(block.value.strip().replace("\n", " ⏎ "), 80)))
    return table


def resume_recap(loaded, last_active: str = "", session_id: str | None = None) -> Group:
    """What was resumed: the session id (``session_id``, else the loaded file's: a fork's file is
    new, the session it goes on from is not), when, how many messages, the last user message and
    the first line of the last reply."""
    from rich.console import Group
    from rich.text import Text

    messages = loaded.all_messages
    last_user = next((m.text for m in reversed(messages) if m.role == "user" and m.kind == "normal"), "")
    last_reply = next((m.text for m in reversed(messages) if m.role == "assistant" and m.text.strip()), "")
    when = f", last active {last_active}" if last_active else ""
    lines = [Text.assemble(("Resumed session ", "bold"), plain(session_id or loaded.id, "bold"),
                           f"{when} · {counted(len(messages), 'message')}")]
    if last_user:
        lines.append(Text.assemble(("  You: ", "dim"), plain(preview(last_user, 100))))
    if last_reply:
        lines.append(Text.assemble(("  Reply: ", "dim"), plain(preview(last_reply.strip().splitlines()[0], 100))))
    return Group(*lines)
