"""Masking secrets before anything is written to disk.

Session files, core memory, the input history and the error log outlive the terminal they were
written in and get pasted into bug reports, so a key the user typed, or one a tool printed, must
never reach them. Only the on-disk copy is masked: callers pass a serialised copy and keep their
objects untouched. What is written is also what a resumed session sends the model, so only the
secret *value* is replaced, where it was found: never a name, a reference to a secret
(``settings.OPENAI_API_KEY``, ``os.environ["TOKEN"]``, ``${VAR}``) or the code around it, and
never every other occurrence of a string that was flagged once.

Detection is Yelp's detect-secrets for key formats (AWS, Stripe, Slack, GitHub, Basic auth in
URLs, ...) and high-entropy quoted strings, imported on first use because it costs about 0.4 s.
Its keyword rule is not used: it captures to the end of the line (``password=self.pw)`` lost its
``)``) and cannot tell a value from code; ``trust/redact_rules.py`` judges assigned values instead, and
has the formats and command lines detect-secrets has no rule for. Its rules are slow over large
texts, so a cheap scan (literal searches and one regex) first picks the lines that could hold a
secret, and only those are scanned. The values of this process's credential environment variables
are masked wherever they appear. ``tests/redaction_corpus.json`` measures recall on secrets, and
that code comes back byte-identical.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from functools import lru_cache
from typing import Any, Iterable, Iterator

from mini_letta.trust import redact_rules as rules
from mini_letta.trust.redact_rules import Span
from mini_letta.trust.secret_values import MIN_SECRET_LENGTH

MASK = "[REDACTED]"

# Values shorter than this are left alone: local servers accept placeholders such as "ollama", and
# masking every occurrence of a common word would garble the transcript without protecting anything.
_MIN_LITERAL_LENGTH = 8
# Environment variables whose values are credentials: the provider keys mini-letta reads
# (OPENAI_API_KEY, ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN) and their like (*_TOKEN, *_SECRET*,
# PGPASSWORD...), matched by name component so that TIKTOKEN_CACHE_DIR is not one.
_CREDENTIAL_NAME = re.compile(r"(?:^|_)(?:API_?KEY|AUTH_?TOKEN|TOKEN|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)$"
                              r"|(?:^|_)SECRET(?:_|$)|PASS(?:WORD|WD)$", re.I)
# Public IPs are not secrets; "Private Key" matches the words `BEGIN PRIVATE KEY` (in code too), where
# our rule masks whole blocks; the npm rule runs to the end of the line (ours masks the token).
_LEFT_OUT = frozenset({"Public IP (ipv4)", "Private Key", "NPM tokens"})
# Rules whose only group is the token's prefix ("ghp"): the whole match is the secret.
_WHOLE_MATCH = frozenset({"GitHub Token", "GitLab Token"})
# Detectors whose every rule needs a credential word before the value ("cloudant_password = ...",
# "ibm_cloud_iam_key: ...") or a URL with one: lines without such a word cannot match, and these are
# the slowest rules, so they see only the lines that name a credential.
_LEADING_NAME = re.compile(r"[A-Za-z]\w*=")
_NAMED_ONLY = frozenset({"Cloudant Credentials", "IBM Cloud IAM Key", "IBM COS HMAC Credentials",
                         "SoftLayer Credentials"})


@lru_cache(maxsize=1)
def _detectors():
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    regex_plugins = [cls() for cls in get_mapping_from_secret_type_to_class().values()
                     if issubclass(cls, RegexBasedDetector) and cls.secret_type not in _LEFT_OUT]
    # detect-secrets' default limit. Its hex detector is left out: quoted hex in tool output is almost
    # always a hash (git, lock files), and hex keys are caught by their names and prefixes instead.
    return regex_plugins, Base64HighEntropyString(limit=4.5)


class _Lines:
    """Some lines of a text joined by newlines (so each rule runs once over all of them), and the way
    back from an offset in the joined text to the same character in the text."""

    def __init__(self, text: str, lines: set[Span]):
        self.origins = sorted(lines)
        self.starts: list[int] = []
        position = 0
        for start, end in self.origins:
            self.starts.append(position)
            position += end - start + 1
        self.text = "\n".join(text[start:end] for start, end in self.origins)

    def __bool__(self) -> bool:
        return bool(self.origins)

    def origin(self, span: Span) -> Span:
        index = bisect_right(self.starts, span[0]) - 1
        line_start, line_end = self.origins[index]
        offset = line_start - self.starts[index]
        return span[0] + offset, min(span[1] + offset, line_end)


def _match_spans(secret_type: str, match: re.Match) -> Iterator[Span]:
    if match.re.groups and secret_type not in _WHOLE_MATCH:
        yield from (match.span(group) for group in range(1, match.re.groups + 1) if match.group(group))
        return
    # Some rules match the delimiters around the token too ("(?:\s|=|:|"|^)AKC...(?:\s|"|$)").
    start, end = match.span()
    text = match.string
    while start < end and text[start] in " \t\r\n=:\"'":
        start += 1
    while end > start and text[end - 1] in " \t\r\n\"'":
        end -= 1
    name = _LEADING_NAME.match(text, start, end)  # "AccountKey=...": the value only
    yield (name.end() if name else start), end


def _library_spans(named: _Lines, tokens: _Lines) -> Iterator[Span]:
    from detect_secrets.filters import heuristic

    regex_plugins, entropy = _detectors()
    for plugin in regex_plugins:
        if plugin.secret_type in _NAMED_ONLY:
            sources = [named]
        elif plugin.secret_type == "Basic Auth Credentials":  # a password may be short and plain
            sources = [tokens, named]
        else:
            sources = [tokens]
        for lines in sources:
            for regex in plugin.denylist:
                for match in regex.finditer(lines.text):
                    if (plugin.secret_type == "Basic Auth Credentials"
                            and not rules.url_password_ok(match.group(0)[3:], match.group(1))):
                        continue
                    yield from (lines.origin(span) for span in _match_spans(plugin.secret_type, match))
    # Its rule (a quoted run of base64 characters) never crosses a line: one pass over all lines.
    for match in entropy.regex.finditer(tokens.text):
        secret = match.group(2)
        start, end = _line_at(tokens.text, match.start())
        line = tokens.text[start:end]
        if (entropy.calculate_shannon_entropy(secret) > entropy.entropy_limit
                and not heuristic.is_sequential_string(secret) and not heuristic.is_potential_uuid(secret)
                and not heuristic.is_likely_id_string(secret, line, entropy)
                and not rules.names_an_id(tokens.text[start:match.start()])
                and not _HASH_DIGEST.match(secret) and not _encodes_text(secret)):
            yield tokens.origin(match.span(2))


_HASH_DIGEST = re.compile(r"(?i)(?:sha\d*|md5)[-:]")


def _encodes_text(candidate: str) -> bool:
    """True for base64 of ordinary text (file contents in an API reply): it decodes to printable
    words with spaces or line breaks, where a key decodes to random bytes or one unbroken token."""
    import base64
    import binascii

    try:
        data = base64.b64decode(candidate, validate=True)
        decoded = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    text = decoded.strip()
    return all(c.isprintable() or c in "\t\r\n" for c in text) and any(c in " \t\n" for c in text)


# Only lines that could hold a secret are scanned: those that assign to a credential-sounding name
# or carry credentials in a URL or header (the keyword rules), and those holding a long token that
# looks random (the rules for key formats and high entropy). Hashes, git ids and UUIDs are plain hex,
# and identifiers and paths change between letters and digits a few times, not at every other
# character, so neither makes a line a candidate.
_KEYWORDS = {word: re.compile(r"[\w.-]*[\\\"'\]]*(?:\s*(?:[:=]|=>)| +[\"']?\w)")
             for word in ("pass", "pwd", "secret", "token", "auth", "key", "credential", "private", "contrase")}
_KEYWORDS.update({word: re.compile(r"\s") for word in ("bearer", "basic", "machine")})
_KEYWORDS["://"] = re.compile(r"[^\s/@]*:[^\s/@]*@")
_KEYWORDS["api.softlayer.com/"] = re.compile(r"soap/")
# Our assignment rules also read `setenv("API_KEY", "...")` and `<password>...</password>`; lines
# only they need do not import detect-secrets ("~481 tokens, tool schemas" is no reason to).
_OUR_FOLLOWS = re.compile(r"[\w.-]*[\\\"'\]]*\s*[,>]")
# Key formats with a fixed prefix whose body need not look random ("AKIAIOSFODNN7EXAMPLE", "xoxb-1-2").
_KEY_PREFIXES = ("AKIA", "ASIA", "xox", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-",
                 "sk_", "rk_", "hf_", "AIza", "SG.", "npm_", "pypi-", "eyJ", "sq0", "shp", "dop_v1_", "AKC",
                 "hooks.slack.com", "dckr_pat_", "hvs.", "hvb.", "hvr.", "GOCSPX-", "AGE-SECRET-KEY-", "sig=")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{16,}")
_HEX = re.compile(r"[0-9a-fA-F-]+")
_DIGIT = re.compile(r"\d")
_CLASS_CHANGE = re.compile(r"[a-z](?=[A-Z0-9])|[A-Z](?=[a-z0-9])|[0-9](?=[A-Za-z])")
_RANDOM_LOOKING = 5


def _line_at(text: str, index: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return start, len(text) if end == -1 else end


def _find_lines(text: str, words: Iterable[str], follows: dict[str, re.Pattern] | None = None) -> set[Span]:
    """The lines holding one of ``words`` (followed by what ``follows`` asks, if anything)."""
    found = set()
    # Literal searches, one word at a time: one alternation over the whole text costs ten times more.
    for word in words:
        index = text.find(word)
        while index != -1:
            if follows is None or follows[word].match(text, index + len(word)):
                found.add(_line_at(text, index))
            index = text.find(word, index + 1)
    return found


def _candidates(text: str) -> tuple[_Lines, _Lines, _Lines, _Lines]:
    """The lines naming a credential (for detect-secrets' rules, and a wider set for our assignment
    rules), those holding a random-looking token, and those running a command that can take a
    password."""
    # "İ" is the one character whose lower case is two characters long: without it every index in
    # ``lowered`` is the same index in ``text``.
    lowered = text.replace("\u0130", "I").lower()
    named = _find_lines(lowered, _KEYWORDS, _KEYWORDS)
    assigned = named | _find_lines(lowered, _KEYWORDS, dict.fromkeys(_KEYWORDS, _OUR_FOLLOWS))
    tokens = _find_lines(text, _KEY_PREFIXES)
    for match in _LONG_TOKEN.finditer(text):
        token = match.group()
        if (not _HEX.fullmatch(token) and _DIGIT.search(token)
                and len(_CLASS_CHANGE.findall(token)) >= _RANDOM_LOOKING):
            tokens.add(_line_at(text, match.start()))
    commands = _find_lines(lowered, rules.COMMAND_WORDS)
    return _Lines(text, named), _Lines(text, assigned), _Lines(text, tokens), _Lines(text, commands)


def _finding_spans(text: str) -> list[Span]:
    spans = [match.span() for match in rules.PEM_BLOCK.finditer(text)]
    # Tool-call arguments are JSON: a file the model writes is one line with "\n" in it. The rules
    # read lines, so they see a copy with those made line breaks, of the same length: every span
    # found in it is the same span in ``text``.
    text = text.replace("\\n", " \n").replace("\\r", " \r").replace("\\t", "  ")
    named, assigned, tokens, commands = _candidates(text)
    if named or tokens:  # most text: the detector is not even imported
        spans += _library_spans(named, tokens)
    for pattern in rules.TOKEN_PATTERNS:
        spans += (tokens.origin(match.span()) for match in pattern.finditer(tokens.text))
    spans += (assigned.origin(span) for span in rules.assignment_spans(assigned.text))
    spans += (named.origin(span) for span in rules.header_spans(named.text))
    spans += (commands.origin(span) for span in rules.command_spans(commands.text))
    # Too short to be a credential, or all punctuation ("********"): masking would only garble.
    return [(start, end) for start, end in spans
            if end - start >= MIN_SECRET_LENGTH and any(c.isalnum() for c in text[start:end])]


def _masked(text: str, spans: Iterable[Span]) -> str:
    """``text`` with each span (overlapping ones merged) replaced by the mask, and nothing else."""
    parts: list[str] = []
    position = 0
    for start, end in sorted(spans):
        if end <= position:
            continue
        if start >= position:
            parts += [text[position:start], MASK]
        position = end
    parts.append(text[position:])
    return "".join(parts)


def warm() -> None:
    """Import the detector now (it takes about 0.4 s), e.g. in a background thread at start-up."""
    _detectors()


def credential_values(environ=None) -> list[str]:
    """Values of this process's credential environment variables, longest first."""
    environ = os.environ if environ is None else environ
    values = {value.strip() for name, value in environ.items() if _CREDENTIAL_NAME.search(name)}
    # A path (GOOGLE_APPLICATION_CREDENTIALS=/home/me/key.json) names a secret without being one.
    return sorted((v for v in values if len(v) >= _MIN_LITERAL_LENGTH and not v.startswith(("/", "~"))),
                  key=len, reverse=True)


def redact_text(text: str, literals: list[str] | None = None) -> str:
    """``text`` with every recognised secret value replaced by ``[REDACTED]``, where it was found."""
    spans = _finding_spans(text)
    # Our own credentials (from the environment) are known exactly: masked wherever they appear.
    for literal in credential_values() if literals is None else literals:
        index = text.find(literal)
        while index != -1:
            spans.append((index, index + len(literal)))
            index = text.find(literal, index + len(literal))
    return _masked(text, spans) if spans else text


def redact(value: Any, keep: frozenset[str] = frozenset()) -> Any:
    """A copy of a JSON-like value (str, list, dict, scalars) with secrets masked in every string.

    Values under a dict key in ``keep`` are copied as they are (base64 image data, where a chance
    match would corrupt the image and no secret is readable anyway).
    """
    literals = credential_values()

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return redact_text(item, literals)
        if isinstance(item, dict):
            return {key: inner if key in keep else walk(inner) for key, inner in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(inner) for inner in item]
        return item

    return walk(value)
