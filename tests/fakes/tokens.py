"""The fake servers' own tokenizer: deliberately not ours.

A fake that counted with our tokenizer (o200k) would agree with every estimate we make and hide
a wrong one, as real servers do not: SmolLM2's 49k-token tokenizer counts prose, code and numbers
each differently from o200k. So the fakes count like a small-vocabulary tokenizer, and the ratio
to our count depends on the text. Fitted on llama-server's ``/tokenize`` with SmolLM2-135M (3,000
characters each; o200k / this count / SmolLM2): prose 810 / 970 / 924, code 801 / 1,010 / 915,
numbers 1,471 / 2,655 / 3,054, Chinese 660 / 1,440 / 1,440, base64 1,354 / 1,500 / 1,617, tool
schemas as JSON 790 / 990 / 835. Heavier than SmolLM2 on prose, code and JSON, lighter on
numbers and base64: off in both directions, as a real tokenizer is.

- a run of ASCII letters: one token per 5 letters, rounded up; when the case is mixed inside
  it, two per 3 letters (base64, hashes: no word of the vocabulary fits);
- every digit is a token (o200k groups up to three);
- a run of non-ASCII characters: 1.5 tokens a character (o200k has one for many CJK characters);
- a run of other visible characters (punctuation, brackets): one token per 2; a newline: one;
- a chat template: 4 tokens around each message and 8 to open the conversation. Tool schemas are
  counted as their JSON (SmolLM2's own template leaves tools out; most tool-capable ones do not).
"""

from __future__ import annotations

import json
import re
from typing import Any

_PIECES = re.compile(r"[A-Za-z]+|\d|[^\x00-\x7f]+|[^\sA-Za-z\d\x80-\U0010ffff]+|\n")
PER_MESSAGE = 4
TEMPLATE = 8
# Request fields that a chat template does not put into the prompt as text.
# Images are counted by the vision encoder, not as the text of their base64 data.
_NOT_TEXT = {"role", "type", "id", "tool_call_id", "tool_use_id", "cache_control", "media_type", "is_error",
             "image_url", "source"}


def count_text(text: str) -> int:
    tokens = 0
    for piece in _PIECES.findall(text):
        if not piece.isascii():
            tokens += -(-len(piece) * 3 // 2)
        elif piece.isalpha():
            word_like = piece[1:].islower() or piece.isupper() or len(piece) == 1
            tokens += -(-len(piece) // 5) if word_like else -(-len(piece) * 2 // 3)
        elif piece.isdigit() or piece == "\n":
            tokens += 1
        else:
            tokens += -(-len(piece) // 2)
    return tokens


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for key, item in value.items() if key not in _NOT_TEXT for s in _strings(item)]
    return []


def count_reply(text: str, tool_calls: list[tuple[str, str, str]]) -> int:
    return count_text(text) + sum(count_text(name) + count_text(arguments) for _, name, arguments in tool_calls)


def longest_prefix_within(text: str, tokens: int) -> str:
    """The longest start of ``text`` that counts at most ``tokens`` (a reply cut at the window)."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count_text(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def count_request(body: dict[str, Any]) -> int:
    """The prompt tokens of a Chat Completions or Messages request, as the fake server counts them."""
    messages = body.get("messages") or []
    tokens = TEMPLATE + PER_MESSAGE * len(messages) + sum(count_text(s) for s in _strings(messages))
    system = body.get("system")
    if system:
        tokens += PER_MESSAGE + sum(count_text(s) for s in _strings(system))
    for tool in body.get("tools") or []:
        tokens += count_text(json.dumps(tool))  # templates render tool schemas as JSON
    return tokens


# Fields of Responses input items that are not text; a sealed item counts as what it seals.
_NOT_TEXT_RESPONSES = _NOT_TEXT | {"call_id", "status", "phase", "detail", "encrypted_content", "summary"}


def _item_strings(value: Any) -> list[str]:
    if isinstance(value, list):
        return [s for item in value for s in _item_strings(item)]
    if isinstance(value, dict):
        sealed = _unsealed(value.get("encrypted_content"))
        return [s for key, item in value.items() if key not in _NOT_TEXT_RESPONSES
                for s in _item_strings(item)] + ([sealed] if sealed else [])
    return [value] if isinstance(value, str) else []


def _unsealed(content: Any) -> str | None:
    from .responses_server import unseal

    sealed = unseal(content) if isinstance(content, str) else None
    return sealed[1] if sealed else None


def count_responses_request(body: dict[str, Any]) -> int:
    """The input tokens of a Responses request, as the fake server counts them: each item as a
    message of the template, the instructions as a system message."""
    items = body.get("input") or []
    tokens = TEMPLATE + PER_MESSAGE * len(items) + sum(count_text(s) for s in _item_strings(items))
    if body.get("instructions"):
        tokens += PER_MESSAGE + count_text(body["instructions"])
    for tool in body.get("tools") or []:
        tokens += count_text(json.dumps(tool))
    return tokens
