"""The carry-over: what a compaction keeps without trusting the summarizer.

It is computed from the messages being compacted and the previous summary's carry-over, the same
way every time, and placed in the summary message after the model's summary: the user's own
messages (verbatim, newest first; older ones shortened to their first sentence and their rules,
the oldest named by turn range, none left out without a note), the files changed with the last
change to each, the commands run with their exit status, errors no later call resolved, open TODO
items the model wrote, and the current task. A small model's summary can be nearly empty; the
task survives anyway, and what is no longer shown is one ``conversation_search`` away.

The structured carry-over rides in the summary message's ``meta["carryover"]`` (saved with the
session), so the next compaction merges it instead of reading it back from text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mini_letta.messages import Message, ToolCall
from mini_letta.compaction.transcript import short_call
from mini_letta.compaction.turns import Cut, has_summary
from mini_letta.wording import counted
from mini_letta.settings import SETTINGS

RECALL_TOOL = "conversation_search"

# A sentence the user wrote with one of these is a rule or a decision for the rest of the session
# ("never touch tests/legacy", "we use SQLite because ..."): it outlives the message it came in.
_RULE = re.compile(r"\b(never|always|don'?t|do not|must|mustn'?t|should(?:n'?t)?|only|avoid|keep|prefer|"
                   r"make sure|no longer|instead of|stop|from now on|decided|decision|because|chose|go with)\b",
                   re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_EXIT = re.compile(r"\[(exit code -?\d+|killed by [\w ]+|timed out after [^\]]*?)[\];]")
_OPEN_TODO = re.compile(r"^\s*(?:[-*]\s*\[ \]|TODO:?)\s+(.+?)\s*$", re.M)
_DONE_TODO = re.compile(r"^\s*(?:[-*]\s*\[[xX]\]|DONE:?)\s+(.+?)\s*$", re.M)
_ERROR_LINE = re.compile(r"error|exception|fail|traceback|denied|not found|invalid", re.I)
_MODIFIES = ("write", "edit", "patch", "create")


@dataclass
class CarryOver:
    """What the compacted part of the session held that must not depend on the summarizer."""

    users: list[tuple[int, str]] = field(default_factory=list)  # (turn, text), oldest first
    changes: dict[str, str] = field(default_factory=dict)  # path -> last change, oldest first
    commands: dict[str, str] = field(default_factory=dict)  # command -> status of its last run
    errors: dict[str, str] = field(default_factory=dict)  # call -> error, only unresolved ones
    todos: list[str] = field(default_factory=list)
    through_turn: int = 0  # the newest turn summarised (wholly or, when split, its first steps)
    split_turn: bool = False
    task: str = ""
    task_turn: int = 0
    task_answered: bool = False
    step: str = ""

    def to_meta(self) -> dict[str, Any]:
        return {"users": [list(u) for u in self.users], "changes": dict(self.changes),
                "commands": dict(self.commands), "errors": dict(self.errors), "todos": list(self.todos),
                "through_turn": self.through_turn}

    @classmethod
    def from_meta(cls, data: Any) -> CarryOver:
        if not isinstance(data, dict):
            return cls()
        users = [(int(u[0]), str(u[1])) for u in data.get("users") or []
                 if isinstance(u, (list, tuple)) and len(u) == 2 and isinstance(u[0], int)]
        return cls(users=users, changes=_str_dict(data.get("changes")), commands=_str_dict(data.get("commands")),
                   errors=_str_dict(data.get("errors")),
                   todos=[str(t) for t in data.get("todos") or [] if isinstance(t, str)],
                   through_turn=data.get("through_turn") if isinstance(data.get("through_turn"), int) else 0)

    def facts(self) -> list[str]:
        """The carried items that must stay in the request: paths, commands, errors, TODOs."""
        return list(self.changes) + list(self.commands) + list(self.errors.values()) + list(self.todos)


def _str_dict(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _results_by_call(messages: list[Message]) -> dict[str, Message]:
    return {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        return call.parse_arguments()
    except ValueError:
        return {}


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _error_line(text: str) -> str:
    """The line of a failed result that says what went wrong (a traceback's last error line)."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not _EXIT.fullmatch(line.strip())]
    for line in reversed(lines):
        if _ERROR_LINE.search(line):
            return _head(line, SETTINGS.carryover_line_chars)
    return _head(lines[-1] if lines else text.strip(), SETTINGS.carryover_line_chars)


def _status(result: Message | None) -> str:
    if result is None:
        return "no result"
    found = _EXIT.findall(result.text)
    if found:
        return found[-1]
    return "error" if result.is_error else "ok"


def _change(call: ToolCall, result: Message) -> str:
    """One line for a successful change: the tool's own report, and the first new line of an edit."""
    line = _head(_first_line(result.text), SETTINGS.quote_long_chars)
    new = _arguments(call).get("new_string")
    if isinstance(new, str) and _first_line(new):
        line += f'; now "{_head(_first_line(new), SETTINGS.quote_chars)}"'
    return line


def _merge(carried: CarryOver, messages: list[Message], results: dict[str, Message]) -> None:
    """Fold the files, commands, errors and TODOs of ``messages`` into ``carried``, in order."""
    for message in messages:
        if message.role == "assistant":
            for done in _DONE_TODO.findall(message.text):
                carried.todos = [t for t in carried.todos if t.lower() != done.strip().lower()]
            for todo in _OPEN_TODO.findall(message.text):
                if todo not in carried.todos:
                    carried.todos.append(_head(todo, SETTINGS.carryover_line_chars))
        for call in message.tool_calls:
            result = results.get(call.id)
            if call.name == RECALL_TOOL:
                continue
            key = short_call(call)
            arguments = _arguments(call)
            if call.name == "bash" and isinstance(arguments.get("command"), str):
                command = _head(arguments["command"].strip(), SETTINGS.carryover_line_chars)
                carried.commands.pop(command, None)
                carried.commands[command] = _status(result)
            if result is None:
                continue
            if result.is_error:
                carried.errors.pop(key, None)
                carried.errors[key] = _error_line(result.text)
                continue
            carried.errors.pop(key, None)
            path = arguments.get("path") or arguments.get("file_path")
            if isinstance(path, str) and path and any(word in call.name.lower() for word in _MODIFIES):
                carried.changes.pop(path, None)
                carried.changes[path] = _change(call, result)


def _resolve(carried: CarryOver, later: list[Message], results: dict[str, Message]) -> None:
    """Errors and TODOs that the kept tail already resolves are not open any more."""
    probe = CarryOver(errors=dict(carried.errors), todos=list(carried.todos))
    _merge(probe, later, results)
    carried.errors = {k: v for k, v in carried.errors.items() if k in probe.errors}
    carried.todos = [t for t in carried.todos if t in probe.todos]


def carry_over(messages: list[Message], cut: Cut) -> CarryOver:
    """The carry-over for compacting ``messages`` at ``cut``, merged with the previous summary's."""
    carried = CarryOver.from_meta(messages[0].meta.get("carryover")) if has_summary(messages) else CarryOver()
    summarised = cut.summarised(messages)
    results = _results_by_call(messages)
    last_turn = carried.through_turn
    for message in summarised:
        if message.role == "user" and message.kind == "normal":
            turn = _turn_of(message, last_turn)
            last_turn = max(last_turn, turn)
            carried.users.append((turn, message.text[:SETTINGS.carryover_stored_user_chars]))
    carried.split_turn = cut.kept_turn_start is not None
    if carried.split_turn:
        # The split turn's request stays in the tail; it is carried when a later cut summarises it.
        last_turn = max(last_turn, _turn_of(messages[cut.kept_turn_start], last_turn))
    carried.through_turn = last_turn
    _merge(carried, summarised, results)
    _resolve(carried, messages[cut.index:], results)
    carried.commands = dict(list(carried.commands.items())[-SETTINGS.carryover_max_commands:])
    carried.changes = dict(list(carried.changes.items())[-SETTINGS.carryover_max_files:])
    carried.errors = dict(list(carried.errors.items())[-SETTINGS.carryover_max_errors:])
    carried.todos = carried.todos[-SETTINGS.carryover_max_todos:]
    _current_task(carried, messages)
    return carried


def _turn_of(message: Message, previous: int) -> int:
    """A typed message's turn; one after ``previous`` for messages saved before turns were numbered."""
    turn = message.meta.get("turn")
    return turn if isinstance(turn, int) and turn > 0 else previous + 1


def _current_task(carried: CarryOver, messages: list[Message]) -> None:
    """The newest request, whether a final reply followed it, and the step the model was on."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and message.kind == "normal":
            carried.task = message.text
            turn = message.meta.get("turn")
            carried.task_turn = turn if isinstance(turn, int) else 0
            carried.task_answered = any(m.role == "assistant" and not m.tool_calls and m.text.strip()
                                        for m in messages[index + 1:])
            break
    results = _results_by_call(messages)
    for message in reversed(messages):
        if message.role != "assistant":
            continue
        if message.tool_calls:
            call = message.tool_calls[-1]
            carried.step = f"{short_call(call)} -> {_status(results.get(call.id))}"
        elif message.text.strip():
            carried.step = "replied: " + _head(_first_line(message.text), SETTINGS.carryover_task_chars)
        break


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


def shorten(text: str, limit: int = SETTINGS.carryover_short_user_chars) -> str:
    """A long message cut to the start of its first sentence and the sentences that state rules."""
    sentences = [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]
    if not sentences:
        return ""
    kept = [_head(sentences[0], limit)] + [_head(s, SETTINGS.carryover_rule_chars) for s in sentences[1:] if _RULE.search(s)]
    return " … ".join(kept)


def rules(text: str) -> list[str]:
    """The sentences of a user message that state a rule."""
    return [_head(s.strip(), SETTINGS.carryover_rule_chars) for s in _SENTENCE.split(text) if s.strip() and _RULE.search(s)]


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()


def _turns(turns: list[int]) -> str:
    if not turns:
        return ""
    return f"turn {turns[0]}" if len(turns) == 1 else f"turns {min(turns)}–{max(turns)}"


def render(carried: CarryOver, *, body: str, user_budget: int, facts_budget: int,
           count: Callable[[str], int]) -> str:
    """The carry-over as text for the summary message.

    Typed messages newest first: verbatim while ``user_budget`` tokens last (skipping those the
    summary already quotes whole), then shortened to their first sentence and rules, then only their
    rules, the rest named by turn range. Changes, commands, errors and TODOs share ``facts_budget``.
    """
    lines = ["## Carried over from the session record (exact)"]
    if carried.task:
        state = "answered" if carried.task_answered else "in progress"
        # The request itself is in the kept tail; this line only anchors it.
        lines.append(f"Current request (turn {carried.task_turn}, {state}): {_head(carried.task.strip(), SETTINGS.carryover_task_chars)}")
        if carried.step:
            lines.append(f"Last step: {_head(carried.step, SETTINGS.carryover_line_chars)}")
    user_budget -= sum(count(line) for line in lines)
    lines += _user_lines(carried.users, body, user_budget, count)
    lines += _fact_lines(carried, facts_budget, count)
    return "\n".join(lines)


def _user_lines(users: list[tuple[int, str]], body: str, budget: int, count: Callable[[str], int]) -> list[str]:
    if not users:
        return []
    quoted = _normal(body)
    newest_first = list(reversed(users))
    # A message the summary quotes (whole, or its opening) is not repeated, only its rules that the
    # summary left out.
    covered = [_normal(text)[:SETTINGS.carryover_quoted_chars] in quoted for _, text in newest_first]
    rule_lines = [_user_line("rules", turn, text, skip=quoted) for turn, text in newest_first]
    rule_costs = [count(line) if line else 0 for line in rule_lines]
    # The rules of older messages are reserved first (up to half the budget): a constraint typed
    # long ago must outlive the newest chatter.
    reserved = [0] * (len(newest_first) + 1)
    for index in range(len(newest_first) - 1, -1, -1):
        reserved[index] = reserved[index + 1] + rule_costs[index]
    lines = ["User messages, newest first:"]
    # The title and the line naming what is not shown come out of the budget too.
    used = count(lines[0]) + count(f"- [turns 1–{users[-1][0]}: {counted(len(users), 'older message')} not shown; "
                                   f"find them with {RECALL_TOOL}]")
    unlisted: list[int] = []
    # Each older message gets the fullest form that still fits; once a form stops fitting, older
    # messages get only shorter ones, so the newest words are the ones kept whole.
    forms = ["verbatim", "short"]
    for index, (turn, text) in enumerate(newest_first):
        reserve = min(reserved[index + 1], budget // 2)
        chosen = None
        for form in ([] if covered[index] else list(forms)):
            candidate = _user_line(form, turn, text)
            cost = count(candidate)
            if used + cost + reserve <= budget:
                chosen, used = candidate, used + cost
                break
            forms.remove(form)
        if chosen is None and rule_lines[index] and used + rule_costs[index] <= budget:
            chosen, used = rule_lines[index], used + rule_costs[index]
        if chosen is not None:
            lines.append(chosen)
        elif not covered[index]:
            unlisted.append(turn)
    if unlisted:
        lines.append(f"- [{_turns(sorted(unlisted))}: {counted(len(unlisted), 'older message')} not shown; "
                     f"find them with {RECALL_TOOL}]")
    return lines if len(lines) > 1 else []


def _user_line(form: str, turn: int, text: str, skip: str = "") -> str:
    """One message as a line: whole, shortened, or only its rules (those ``skip`` does not hold)."""
    if form == "verbatim":
        return f"- [turn {turn}] {text.strip()}"
    if form == "short":
        short = shorten(text)
        return f"- [turn {turn}]{'' if short == text.strip() else ' (shortened)'} {short}"
    found = [rule for rule in rules(text) if _normal(rule) not in skip]
    return f"- [turn {turn}, its rules] " + " … ".join(found) if found else ""


def _fact_lines(carried: CarryOver, budget: int, count: Callable[[str], int]) -> list[str]:
    sections = [
        ("Unresolved errors:", [f"- {k}: {v}" for k, v in reversed(carried.errors.items())]),
        ("Open TODO items:", [f"- [ ] {t}" for t in reversed(carried.todos)]),
        ("Files changed (last change):", [f"- {p}: {d}" for p, d in reversed(carried.changes.items())]),
        ("Commands run (last run first):", [f"- `{c}` -> {s}" for c, s in reversed(carried.commands.items())]),
    ]
    lines: list[str] = []
    used = 0
    for title, items in sections:
        shown = []
        for item in items:
            cost = count(item) + (count(title) if not shown else 0)
            if used + cost > budget:
                break
            shown.append(item)
            used += cost
        if shown:
            lines.append(title)
            lines += shown
            if len(shown) < len(items):
                lines.append(f"- ({len(items) - len(shown)} more; find them with {RECALL_TOOL})")
    return lines
