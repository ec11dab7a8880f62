"""How big the next request is, how much room is left, and what to do about it.

The estimate anchors on the provider's own usage report (the newest assistant reply whose usage
still describes this context, see ``Conversation.latest_usage_anchor``) and counts locally only the
messages appended after it, turned into the provider's count by ``calibration.py``.

Levels are computed on exact token counts, never on the rounded percentage:

- auto-compaction on (room = the compaction threshold, moved by ``CODEAGENT_AUTO_COMPACT_PCT`` when
  set): ``warning`` at ≤ 20% left, ``critical`` at ≤ 10%, ``blocked`` when the request is strictly
  over the threshold, exactly when the agent compacts.
- auto-compaction off (room = window − output reserve): ``warning`` ≤ 20%, ``critical`` ≤ 10%,
  ``blocked`` ≤ 5% left: the agent stops and lets the user choose (/compact, /clear, new session).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from mini_letta.context.calibration import Calibration, FloorCounter
from mini_letta.context.threshold import compaction_trigger, output_reserve
from mini_letta.context.tokens import CHARS_PER_TOKEN, RunningCount, TokenCounter
from mini_letta.context.window import LEARNED_SOURCE, WindowInfo
from mini_letta.conversation import Conversation
from mini_letta.messages import Message, ToolSpec
from mini_letta.settings import SETTINGS

Level = Literal["ok", "warning", "critical", "blocked"]


@dataclass(frozen=True)
class RequestSize:
    """The one size of the next request, computed once and handed to whoever needs it (compaction,
    the reply budget, tool-output caps, the status bar). ``total`` is without the reply;
    ``floor`` is system prompt and tools as the provider counts them (its own count, or ours
    calibrated); ``messages`` is ``total - floor``; ``estimated_tail`` is the part counted locally
    (calibrated): the messages after the usage anchor, or everything when not anchored; ``reply``
    the room a reply may have; ``source`` "usage" (anchored on the provider's report) or "count"."""

    total: int
    floor: int
    messages: int
    anchored: bool
    anchor_tokens: int
    estimated_tail: int
    reply: int = 0

    @property
    def source(self) -> str:
        return "usage" if self.anchored else "count"


class StepSize:
    """One model call's size: computed once, before the call (``ContextBudget.size``), and handed
    to compaction, the reply budget and the tool-output caps of the call's tools. What the step
    appends afterwards is added as it is counted: the reply (``replied``: the provider's usage when
    it reports one, our count otherwise) and each tool result (``add``), so nothing sizes the
    conversation again until the next call. A compaction gives the step the size it measured of
    what it installed (``known``)."""

    def __init__(self, request: RequestSize):
        self.request = request
        self.added = 0

    @property
    def total(self) -> int:
        """The request as sent, without its reply."""
        return self.request.total

    @property
    def reply(self) -> int:
        return self.request.reply

    @property
    def floor(self) -> int:
        return self.request.floor

    @property
    def now(self) -> int:
        """The next request as it stands: this one and what the step appended since."""
        return self.request.total + self.added

    def replied(self, reported: int | None, counted: int) -> None:
        """The reply came: ``reported`` is the context the provider says it leaves (prompt and visible
        reply, ``Usage.context_tokens``), ``counted`` our calibrated count of the reply."""
        self.added = reported - self.request.total if reported else self.added + counted

    def add(self, tokens: int) -> None:
        self.added += tokens

    def known(self, budget: ContextBudget, tokens: int) -> None:
        """The request is known to be ``tokens``: a compaction's measure of what it installed (floor
        included), or the server's own count of this very request, stated in its rejection."""
        self.request = budget.size_of(tokens, self.request.floor)
        self.added = 0


@dataclass(frozen=True)
class ContextState:
    tokens: int
    window: int
    threshold: int
    percent_left: int  # floored, 0–100; 100 only when empty, 0 only when no room is left
    level: Level


def short_tokens(count: int) -> str:
    """12,345 → "12.3k", 1,000,000 → "1M": for the status bar."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}".rstrip("0").rstrip(".") + "M"
    if count >= 1_000:
        return f"{count / 1_000:.1f}".rstrip("0").rstrip(".") + "k"
    return str(count)


def _next_power_of_two(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


class ContextBudget:
    def __init__(self, counter: TokenCounter, window_info: WindowInfo, *, auto_compact: bool,
                 floor_counter: FloorCounter | None = None):
        self.counter = counter
        self.window_info = window_info
        self.auto_compact = auto_compact
        # How the provider counts what we count: learned ratio, served and usage floors.
        self.calibration = Calibration(counter, floor_counter)
        self._conversation_count = RunningCount(counter)

    # --- sizes -----------------------------------------------------------------------------------
    @property
    def window(self) -> int:
        return self.window_info.window

    @property
    def threshold_window(self) -> int:
        """The window the compaction threshold is computed from (``should_compact(tokens, this)``)."""
        return self.window_info.auto_compact_window

    @property
    def threshold(self) -> int:
        return self.window_info.threshold

    def should_compact(self, tokens: int) -> bool:
        """True when a request of ``tokens`` is strictly over the threshold in use."""
        return self.auto_compact and tokens > self.threshold

    @property
    def limit(self) -> int:
        """The request size that counts as 0% left: the threshold, or the window less the reply."""
        return self._limit_for(self.window, self.window_info.auto_compact_window)

    def _limit_for(self, window: int, auto_compact_window: int) -> int:
        if self.auto_compact:
            return compaction_trigger(window, auto_compact_window, self.window_info.compact_percent)
        return max(0, window - output_reserve(window))

    def count_conversation(self, messages: list[Message]) -> int:
        """``count_messages`` of the conversation as it grows: each call counts only the messages
        appended since the last one (see ``RunningCount``), so a step costs what it added."""
        return self._conversation_count.of(messages)

    def learn_window(self, limit: int) -> bool:
        """A server rejected a request and named its window: from now on that is the window (even
        over an override, which was evidently wrong). True when the window changed."""
        if limit <= 0 or limit >= self.window:
            return False
        self.window_info = self.window_info.learned(limit)
        return True

    def reply_budget(self, tokens: int) -> int:
        """``max_tokens`` for a request of ``tokens``: the usual reply reserve, but never more than
        what is left of the window less a margin for what our estimate misses
        (``SETTINGS.reply_margin_ratio`` of the window, at least ``reply_margin_min``), since servers
        count prompt + ``max_tokens`` against it: a reply sized to the last token was rejected for an
        estimate two tokens short."""
        margin = max(SETTINGS.reply_margin_min, int(self.window * SETTINGS.reply_margin_ratio))
        return max(0, min(output_reserve(self.window), self.window - tokens - margin))

    @property
    def window_origin(self) -> str:
        """Where the window came from, in one word for the status bar (``/context`` has the details)."""
        info = self.window_info
        if info.guessed:
            return "guessed"
        if info.source == LEARNED_SOURCE:
            return "learned"
        if info.source.startswith("CODEAGENT_"):
            return "set"
        if info.source.startswith("served"):
            return "served"
        if info.source.startswith("built-in table"):
            return "published"
        return "model name" if "[1m]" in info.source else ""

    @property
    def window_label(self) -> str:
        """The window for the status bar: ``4.1k``, or ``~200k?`` when it is a guess."""
        label = short_tokens(self.window)
        return f"~{label}?" if self.window_info.guessed else label

    def size_of(self, total: int, floor: int) -> RequestSize:
        """The size of a request known to be ``total`` (a compaction's measure of what it
        installed: no usage anchors it any more), with its reply room."""
        return RequestSize(total, floor, max(0, total - floor), False, 0, max(0, total - floor), self.reply_budget(total))

    def size(self, system: str, tools: list[ToolSpec], conversation: Conversation) -> RequestSize:
        local, served = self.calibration.floor(system, tools), self.calibration.served_floor(system, tools)
        # As ``measure`` takes it: a floor not sent yet is scaled as the server counted the last one.
        floor = self.calibration.floor_calibrated(system, tools)
        messages = conversation.messages
        anchor = conversation.latest_usage_anchor()
        if anchor is None:
            total = floor + self.calibration.calibrated(self.count_conversation(messages))
            return RequestSize(total, floor, max(0, total - floor), False, 0, total, self.reply_budget(total))
        usage = messages[anchor].usage
        assert usage is not None  # latest_usage_anchor only returns messages with usage
        anchor_tokens = usage.context_tokens
        # A system prompt or core-memory edit since the anchor moved the floor; count the change now,
        # by the server's counts when both are its own, else by ours.
        meta = messages[anchor].meta
        now, then = local, meta.get("floor_tokens")
        if served is not None and isinstance(meta.get("served_floor_tokens"), int):
            now, then = served, meta["served_floor_tokens"]
        if isinstance(then, int):
            anchor_tokens = max(0, anchor_tokens + now - then)
        tail = self.calibration.calibrated(self.counter.count_messages(messages[anchor + 1 :]))
        total = anchor_tokens + tail
        return RequestSize(total, floor, max(0, total - floor), True, anchor_tokens, tail, self.reply_budget(total))

    # --- levels ----------------------------------------------------------------------------------
    def state(self, tokens: int) -> ContextState:
        limit = self.limit
        left = limit - tokens
        if self.auto_compact:
            blocked = self.should_compact(tokens)
        else:
            blocked = left * 100 <= SETTINGS.blocked_percent_manual * limit
        if blocked:
            level: Level = "blocked"
        elif left * 100 <= SETTINGS.critical_percent * limit:
            level = "critical"
        elif left * 100 <= SETTINGS.warning_percent * limit:
            level = "warning"
        else:
            level = "ok"
        return ContextState(tokens, self.window, self.threshold, self._percent_left(tokens, limit), level)

    @staticmethod
    def _percent_left(tokens: int, limit: int) -> int:
        if limit <= 0 or tokens >= limit:
            return 0
        if tokens <= 0:
            return 100
        # Floored, but never 100 with something in context nor 0 while room remains.
        return min(99, max(1, (limit - tokens) * 100 // limit))

    def tool_output_token_limit(self, level: Level, tokens: int | None = None, *,
                                after_compaction: int | None = None) -> int:
        """The most tokens (as the provider counts them) one tool output may take: the level's cap
        and, with ``tokens`` (the current request size), the room left before the 0%-left point
        less a whole reply, so the step after the tool fits without compacting first. Where that
        room is smaller than what a compaction would leave (``after_compaction``,
        ``tool_output_room``), the output may take that instead, with automatic compaction on:
        the loop then compacts, keeps this newest step and still fits, rather than going on with
        a few lines a step and never making room (a read cut to two lines, twelve steps running)."""
        cap = SETTINGS.tool_output_chars[level] // CHARS_PER_TOKEN
        if tokens is not None:
            room = self.limit - tokens - output_reserve(self.window)
            if after_compaction is not None and self.auto_compact:
                room = max(room, after_compaction)
            cap = min(cap, max(math.ceil(SETTINGS.tool_output_min_chars / CHARS_PER_TOKEN * max(self.calibration.ratio, SETTINGS.calibration_min)), room))
        return max(1, cap)

    def tool_output_limit(self, level: Level, tokens: int | None = None, *,
                          after_compaction: int | None = None) -> int:
        """``tool_output_token_limit`` in characters, for the tools that cut their own output (at
        line ends, with a note on how to page on): our tokens are ``CHARS_PER_TOKEN`` characters of
        prose; the learned ratio converts the provider's tokens to ours."""
        tokens_ours = self.tool_output_token_limit(level, tokens, after_compaction=after_compaction)
        return max(SETTINGS.tool_output_min_chars, int(tokens_ours / max(self.calibration.ratio, SETTINGS.calibration_min) * CHARS_PER_TOKEN))

    def tool_output_room(self, tokens: int, floor: int, conversation: Conversation) -> dict:
        """The arguments of ``tool_output_limit`` for the next tool output of ``conversation``, now
        ``tokens`` big (a step's ``StepSize.now``) over a floor of ``floor``.

        ``after_compaction``: half of what a compaction leaves above the floor under its target
        (``SETTINGS.comfort_ratio`` of the threshold), less the turn's own request, which it
        keeps verbatim; the other half is for the summary and what it carries over."""
        newest = next((m for m in reversed(conversation.messages) if m.role == "user" and m.kind != "summary"), None)
        request = self.calibration.count_message(newest) if newest is not None else 0
        after = int(self.limit * SETTINGS.comfort_ratio - floor) // 2 - request
        return {"level": self.state(tokens).level, "tokens": tokens, "after_compaction": after}

    # --- explanations ----------------------------------------------------------------------------
    def breakdown(
        self, system_prompt: str, core_memory: str, tools: list[ToolSpec], conversation: Conversation,
        skills_list: str = "",
    ) -> list[tuple[str, int]]:
        """Rows for ``/context``, summing to the window (unless over-full, then free is 0): local
        counts, except that a floor the server counted itself is split as the server counts it
        (its count of the prompt's text for system prompt and memory, the rest for the tools, which
        a template may leave out altogether).

        ``system_prompt`` may be the full prompt with ``core_memory`` and ``skills_list`` inside it;
        each is counted once, on its own row.

        "reserved" is what the window keeps free below the 0%-left point: the compaction reserve
        when auto-compaction is on, the reply's room when it is off.
        """
        count = self.counter
        served, answer = self.calibration.served_floor(system_prompt, tools), self.calibration.served_answer(system_prompt, tools)
        # The system prompt as sent usually embeds the memory; show the memory on its own row only.
        for part in (core_memory, skills_list):
            if part and part in system_prompt:
                system_prompt = system_prompt.replace(part, "", 1)
        summary = sum(count.count_message(m) for m in conversation.messages if m.kind == "summary")
        prompt, memory, schemas = count.count_system(system_prompt), count.count_text(core_memory), count.count_tools(tools)
        skills = count.count_text(skills_list) if skills_list else 0
        if served is not None and answer is not None:
            text = min(served, answer.system_text)
            whole = prompt + memory + skills
            prompt_share = round(text * prompt / whole) if whole else text
            skills_share = round(text * skills / whole) if whole else 0
            prompt, memory, skills, schemas = prompt_share, text - prompt_share - skills_share, skills_share, served - text
        rows = [
            ("system prompt", prompt),
            ("core memory", memory),
            *([("skills list", skills)] if skills_list else []),
            ("tool schemas", schemas),
            ("messages", count.count_messages(conversation.messages) - summary),
            ("summary", summary),
            ("reserved output", self.window - self.limit),
        ]
        used = sum(tokens for _, tokens in rows)
        rows.append(("free", max(0, self.window - used)))
        return rows

    def _setting_below_the_floor(self, floor_tokens: int, limit: int) -> str | None:
        """The message when the user's threshold (``--compact-at`` / ``CODEAGENT_AUTO_COMPACT_PCT``),
        not the window, leaves no room: the default threshold would hold the floor."""
        info = self.window_info
        if not (self.auto_compact and info.compact_percent is not None):
            return None
        default = compaction_trigger(self.window, info.auto_compact_window)
        if floor_tokens > default:
            return None
        base = min(self.window, info.auto_compact_window)
        # Room for the conversation as large as the floor, as the Ollama advice below leaves.
        advice = min(100, math.ceil(200 * floor_tokens / base))
        shown = f"--compact-at {info.compact_percent:g}" if info.compact_percent_from == "--compact-at" else (
            f"{info.compact_percent_from}={info.compact_percent:g}")
        return (f"The system prompt, core memory and tool schemas take {floor_tokens:,} tokens, more than the "
                f"{limit:,} that {shown} ({info.compact_percent:g}% of the {base:,}-token window) leaves for a "
                f"request; set it to {advice} or more, or leave it out (the default threshold is {default:,} tokens).")

    def floor_problem(self, floor_tokens: int, provider_name: str) -> str | None:
        """Why no request can be sent when the floor alone leaves no room, else None.

        The floor must stay at or under the 0%-left point (the threshold with auto-compaction on,
        else the window less the reply), or every request would be blocked and compaction cannot
        shrink the floor. For Ollama the advice names the smallest power of two (at least 8,192)
        whose own limit leaves the conversation at least as much room as the floor takes, so the
        agent does not compact every other turn.
        """
        limit = self.limit
        if floor_tokens <= limit:
            return None
        setting = self._setting_below_the_floor(floor_tokens, limit)
        if setting:
            return setting
        head = (
            f"The system prompt, core memory and tool schemas take {floor_tokens:,} tokens, "
            f"more than the {limit:,} this model's {self.window:,}-token window leaves for a request"
        )
        if provider_name == "ollama":
            size = max(SETTINGS.ollama_min_context, _next_power_of_two(floor_tokens))
            while self._limit_for(size, size) < 2 * floor_tokens:
                size *= 2
            return f"{head}; restart Ollama with a larger window, for example OLLAMA_CONTEXT_LENGTH={size} ollama serve"
        return (
            f"{head}; use a model with a larger window, fewer tools, smaller memory blocks or a "
            f"shorter AGENTS.md."
        )
