"""The Anthropic Messages API's wire form of a conversation, and where its cache breakpoints go.

Conversion rules the API imposes: roles alternate, so tool results and the user text after them
share one user message (results first); text blocks may not be empty; an assistant message needs
some content.

Caching: Anthropic caches a prefix (tools, then system, then messages) only up to a ``cache_control``
breakpoint, at most 4 per request, and only when that prefix reaches the model's minimum size. The
breakpoints: after the stable system text (with the tools before it, the same all session), after the
volatile system text (date, core memory, project instructions: a memory edit rewrites only from
here), at the end of the previous request (so it is read back whatever the model added since) and on
the newest message (written for the next request). Anthropic reports the reads and writes in usage.

Two ways to the same bytes: :func:`to_anthropic_messages` and :func:`place_breakpoints` build the
request as data, afresh; :func:`message_form` and :func:`encode_messages` serialise each message's
blocks once (the provider keeps them in a :class:`~mini_letta.providers.wire_cache.WireCache`) and
join them per request, merging turns and marking breakpoints on the serialised blocks;
:class:`TurnJoiner` does the same for successive requests, merging only the turns that changed.

Anthropic's own compaction (``compact_20260112``, :mod:`~mini_letta.compaction.native`): a summary
message that carries this API's ``compaction`` block for the model it goes to is sent as the block
in an assistant turn (the API reads the summary from the block and ignores what comes before it),
after a one-line user turn (a conversation starts with the user), and then the summary message's
own text with the summary itself left out (the block holds it): the carry-over and the file lists.
Sent to any other model, the summary message is its text, as any summary is.
"""

from __future__ import annotations

import bisect
import json
import threading
from typing import Any, Callable

from mini_letta.messages import Message, native_of
from mini_letta.providers.base import encode_body

_CACHE = {"type": "ephemeral"}
_CACHE_FIELD = b',"cache_control":' + encode_body(_CACHE) + b"}"
MAX_BREAKPOINTS = 4
EMPTY_REPLY = "(no reply)"
EMPTY_RESULT = "(no output)"
EMPTY_USER = "(empty)"
PROVIDER = "anthropic"  # the name a summary's native items carry (compaction/native.py)
COMPACTED_LEAD = "(The conversation before this point was compacted.)"
SUMMARY_IN_BLOCK = "(The summary is the compaction block before this message.)"

# One serialised block: its bytes as sent, and its length as ``json.dumps`` (default separators)
# writes it, which the breakpoint estimate (:func:`_tokens`) measures.
Block = tuple[bytes, int]


# --- conversion ---------------------------------------------------------------------------------
def to_anthropic_messages(messages: list[Message]) -> list[dict[str, Any]]:
    converted: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            converted.append({"role": "assistant", "content": _assistant_blocks(message)})
            continue
        blocks = _user_blocks(message)
        if converted and converted[-1]["role"] == "user":
            previous = converted[-1]["content"]
            if message.role == "tool":  # results go before any text in the merged turn
                at = sum(1 for b in previous if b["type"] == "tool_result")
                previous[at:at] = blocks
            else:
                previous.extend(blocks)
        else:
            converted.append({"role": "user", "content": blocks})
    for entry in converted:
        if not entry["content"]:
            entry["content"] = [{"type": "text", "text": EMPTY_REPLY if entry["role"] == "assistant" else EMPTY_USER}]
    return converted


# --- the provider's own compaction -------------------------------------------------------------------
def compaction_blocks(messages: list[Message], model_id: str) -> list[dict[str, Any]]:
    """The ``compaction`` blocks of a summary at the start of ``messages`` that this API made for
    ``model_id`` (a summary is only ever the first message); [] for none."""
    native = native_of(messages[0]) if messages else None
    if native is None or native.get("provider") != PROVIDER or native.get("model") != model_id:
        return []
    return [block for block in native["items"] if isinstance(block, dict) and block.get("type") == "compaction"]


def alternating(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with successive turns of one role joined: the part of a conversation sent to be
    compacted may end inside a turn whose user message stays (its steps are assistant turns in a row)."""
    joined: list[dict[str, Any]] = []
    for message in messages:
        if joined and joined[-1]["role"] == message["role"]:
            joined[-1] = {**joined[-1], "content": joined[-1]["content"] + message["content"]}
        else:
            joined.append(message)
    return joined


def compacted_lead(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turns that go before the summary message when it is sent with its blocks."""
    return [{"role": "user", "content": [{"type": "text", "text": COMPACTED_LEAD}]},
            {"role": "assistant", "content": [dict(block) for block in blocks]}]


def beside_blocks(summary: Message) -> Message:
    """The summary message as sent after its blocks: its text without the summary the blocks hold."""
    body = str(summary.meta.get("summary_body") or "").strip()
    text = summary.text.replace(body, SUMMARY_IN_BLOCK, 1) if body else summary.text
    return Message(role="user", kind="summary", text=text, seq=summary.seq)


# --- cache breakpoints ----------------------------------------------------------------------------
def min_cacheable_tokens(model_id: str) -> int:
    """The smallest prefix Anthropic caches for this model; a breakpoint on less is ignored."""
    name = model_id.lower()
    if "haiku-4-5" in name or "opus-4-5" in name:
        return 4096
    if "haiku" in name:
        return 2048
    return 1024


def system_blocks(system: str, stable_chars: int) -> list[dict[str, Any]]:
    """The system prompt as one block, or as its stable and volatile parts."""
    parts = [system[:stable_chars], system[stable_chars:]] if 0 < stable_chars < len(system) else [system]
    return [{"type": "text", "text": part} for part in parts if part]


def _tokens(value: Any) -> int:
    # chars/4 of the wire form: a breakpoint is only worth placing when the prefix is clearly big
    # enough, and an estimate that errs a little either way only moves one breakpoint.
    return len(json.dumps(value, ensure_ascii=False)) // 4


def place_breakpoints(tools: list[dict[str, Any]], system: list[dict[str, Any]], messages: list[dict[str, Any]],
                      minimum: int) -> None:
    """Mark (in place) the blocks described in the module docstring whose prefix reaches ``minimum``."""
    marked_system, marked_messages = _choose_breakpoints(
        _tokens(tools) if tools else 0, system, [m["role"] for m in messages],
        lambda index: _tokens(messages[index]), minimum)
    for block in marked_system:
        block["cache_control"] = _CACHE
    for index in marked_messages:
        messages[index]["content"][-1]["cache_control"] = _CACHE


def _choose_breakpoints(tools_tokens: int, system: list[dict[str, Any]], roles: list[str],
                        tokens_of: Callable[[int], int], minimum: int) -> tuple[list[dict[str, Any]], list[int]]:
    """(the system blocks to mark, the messages whose last block to mark); ``tokens_of(i)`` is
    message ``i``'s estimate. Only the messages up to the first whose prefix reaches ``minimum``
    are measured (a prefix only grows): in a long session a few, not the whole conversation."""
    candidates: list[tuple[int, str, Any]] = []  # (priority, "system" or "message", block or index)
    prefix = tools_tokens
    for rank, block in enumerate(system):
        prefix += _tokens(block)
        if prefix >= minimum:
            # The stable part first: it serves every request of the session.
            candidates.append((0 if rank == 0 else 3, "system", block))
    reaching = len(roles)
    for index in range(len(roles)):
        prefix += tokens_of(index)
        if prefix >= minimum:
            reaching = index
            break
    last = len(roles) - 1
    if roles and last >= reaching:
        candidates.append((1, "message", last))
    previous = last - 2
    if roles and previous >= reaching and roles[last - 1] == "assistant":
        candidates.append((2, "message", previous))
    chosen = sorted(candidates, key=lambda c: c[0])[:MAX_BREAKPOINTS]
    return [c[2] for c in chosen if c[1] == "system"], [c[2] for c in chosen if c[1] == "message"]


# --- the same, serialised once per message ---------------------------------------------------------
def message_form(message: Message) -> tuple[str, list[Block]]:
    """What :func:`encode_messages` needs of one message: its role and its blocks, serialised."""
    blocks = _assistant_blocks(message) if message.role == "assistant" else _user_blocks(message)
    return message.role, [_block(block) for block in blocks]


def _block(block: dict[str, Any]) -> Block:
    return encode_body(block), len(json.dumps(block, ensure_ascii=False))


_FILLERS = {"assistant": _block({"type": "text", "text": EMPTY_REPLY}), "user": _block({"type": "text", "text": EMPTY_USER})}
# ``json.dumps`` of {"role": r, "content": [blocks]} is this long around the blocks (", " between them).
_TURN_FRAME = {role: len(json.dumps({"role": role, "content": []})) for role in ("user", "assistant")}
_TURN_HEAD = {role: b'{"role":"' + role.encode() + b'","content":[' for role in ("user", "assistant")}


def encode_messages(forms: list[tuple[str, list[Block]]], tools: list[dict[str, Any]],
                    system: list[dict[str, Any]], minimum: int) -> bytes:
    """The ``messages`` array of :func:`to_anthropic_messages` after :func:`place_breakpoints`, as
    :func:`~mini_letta.providers.base.encode_body` writes it; the system blocks chosen for a
    breakpoint are marked in place, as ``place_breakpoints`` marks them."""
    return TurnJoiner().encode(forms, tools, system, minimum)


class _Turn:
    """One merged turn: where it starts among the forms, its blocks, its bytes without a breakpoint."""

    __slots__ = ("start", "role", "blocks", "encoded", "tokens")

    def __init__(self, start: int, role: str, blocks: list[Block]):
        self.start, self.role = start, role
        self.blocks = blocks or [_FILLERS[role]]
        self.encoded = _turn_bytes(role, self.blocks)
        # ``json.dumps`` of {"role": r, "content": [blocks]}, chars/4, as ``_tokens`` measures it.
        self.tokens = (_TURN_FRAME[role] + sum(length for _, length in self.blocks) + 2 * (len(self.blocks) - 1)) // 4


def _turn_bytes(role: str, blocks: list[Block]) -> bytes:
    return b"".join((_TURN_HEAD[role], b",".join(fragment for fragment, _ in blocks), b"]}"))


class TurnJoiner:
    """:func:`encode_messages` for a provider's successive requests, merging only what changed.

    A tool-loop step sends the request before it with two messages more. Merging every message into
    turns again and joining each turn's blocks is a Python walk over the whole conversation on every
    step (at 575 messages most of an Anthropic step's own time; the OpenAI provider joins its kept
    fragments in one call). So the turns of the last request are kept: those the new request starts
    with, form for form (each form is the wire cache's own object for an unchanged message; equal
    forms are equal bytes), are reused as they are, and merging goes on from the first turn that
    may differ. A turn is kept whole only when the form after it is kept too, so it cannot grow by
    merging. Breakpoints are placed on each request's own turns, marked on copies of the bytes.
    Thread-safe (a summary prepared in the background is encoded beside a turn's request)."""

    def __init__(self) -> None:
        self._forms: list[tuple[str, list[Block]]] = []
        # The last request's turns, and beside them their roles and bytes (joined per request in C).
        self._turns: list[_Turn] = []
        self._roles: list[str] = []
        self._encoded: list[bytes] = []
        self._lock = threading.Lock()
        self.merged = 0  # turns merged and serialised anew (not reused), for the tests

    def encode(self, forms: list[tuple[str, list[Block]]], tools: list[dict[str, Any]],
               system: list[dict[str, Any]], minimum: int) -> bytes:
        with self._lock:
            self._update(forms)
            turns, roles, encoded = self._turns, self._roles, list(self._encoded)
        marked_system, marked_turns = _choose_breakpoints(_tokens(tools) if tools else 0, system, roles,
                                                          lambda index: turns[index].tokens, minimum)
        for block in marked_system:
            block["cache_control"] = _CACHE
        for index in marked_turns:
            turn = turns[index]
            fragment, length = turn.blocks[-1]
            encoded[index] = _turn_bytes(turn.role, [*turn.blocks[:-1], (fragment[:-1] + _CACHE_FIELD, length)])
        return b"[" + b",".join(encoded) + b"]"

    def _update(self, forms: list[tuple[str, list[Block]]]) -> None:
        previous, turns = self._forms, self._turns
        same = _common_prefix(previous, forms)
        if same == len(previous) == len(forms):
            return  # the same request again
        # Kept: the turns whose forms and the form after them are all in the common prefix, that is
        # every turn before the last one starting inside it (a next form that differs, a user
        # message after a kept user turn, would merge into it).
        kept = max(0, bisect.bisect_left(turns, same, key=_start) - 1)
        new = self._merge(forms, turns[kept].start if kept < len(turns) else 0)
        self._forms = list(forms)
        self._turns = turns[:kept] + new
        self._roles = self._roles[:kept] + [turn.role for turn in new]
        self._encoded = self._encoded[:kept] + [turn.encoded for turn in new]

    def _merge(self, forms: list[tuple[str, list[Block]]], index: int) -> list[_Turn]:
        """The turns of ``forms[index:]``, ``index`` being the start of a turn."""
        grouped: list[tuple[int, str, list[Block]]] = []
        results = 0  # tool results at the start of the last (user) turn
        for at in range(index, len(forms)):
            role, blocks = forms[at]
            if role == "assistant":
                grouped.append((at, role, list(blocks)))
            elif grouped and grouped[-1][1] == "user":
                merged = grouped[-1][2]
                if role == "tool":  # results go before any text in the merged turn
                    merged[results:results] = blocks
                    results += len(blocks)
                else:
                    merged.extend(blocks)
            else:
                grouped.append((at, "user", list(blocks)))
                results = len(blocks) if role == "tool" else 0
        self.merged += len(grouped)
        return [_Turn(start, role, blocks) for start, role, blocks in grouped]


def _start(turn: _Turn) -> int:
    return turn.start


def _common_prefix(previous: list[Any], forms: list[Any]) -> int:
    """How many forms ``forms`` starts with that ``previous`` also starts with."""
    if len(forms) >= len(previous) and forms[:len(previous)] == previous:  # one C loop, identity first
        return len(previous)
    same = 0
    for old, new in zip(previous, forms):
        if old is not new and old != new:
            break
        same += 1
    return same


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text.strip() else []
    for call in message.tool_calls:
        try:
            arguments = call.parse_arguments()
        except ValueError:
            arguments = {}  # the model's broken JSON was already answered with an error; keep history sendable
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


def _user_blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id,
                 "content": message.text or EMPTY_RESULT, "is_error": message.is_error}]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text.strip() else []
    blocks += [{"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}
               for image in message.images]
    return blocks
