"""Masking secrets before anything is written to disk.

Session files, core memory, the input history and the error log outlive the terminal they were
written in and get pasted into bug reports, so a key the user typed, or one a tool printed, must
never reach them. Only the on-disk copy is masked: callers pass a serialised copy and keep their
objects untouched.

Detection is Yelp's detect-secrets (maintained rule sets for AWS, Stripe, Slack, GitHub, JWT,
Basic auth, private keys, keyword assignments, high-entropy strings and more), imported on first
use because it costs about 0.4 s. Its rules are slow over large texts, so a cheap scan (literal
searches and one regex) first picks the lines that could hold a secret: those assigning to a
credential-sounding name, and those holding a known key prefix or a long token that looks random;
only those lines are given to it. A few rules of ours cover what it has no detector for (Google and
Hugging Face keys, current OpenAI and Anthropic keys, env-style ``*_TOKEN=`` assignments, whole PEM
blocks, netrc), and the values of this process's credential environment variables are masked
wherever they appear. ``tests/redaction_corpus.json`` measures recall and false positives.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any

MASK = "[REDACTED]"

# Values shorter than this are left alone: local servers accept placeholders such as "ollama", and
# masking every occurrence of a common word would garble the transcript without protecting anything.
_MIN_LITERAL_LENGTH = 8
# Environment variables whose values are credentials: the provider keys mini-letta reads
# (OPENAI_API_KEY, ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN) and their like (*_TOKEN, *_SECRET*,
# PGPASSWORD...), matched by name component so that TIKTOKEN_CACHE_DIR is not one.
_CREDENTIAL_NAME = re.compile(r"(?:^|_)(?:API_?KEY|AUTH_?TOKEN|TOKEN|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)$"
                              r"|(?:^|_)SECRET(?:_|$)|PASS(?:WORD|WD)$", re.I)

# Whole blocks: detect-secrets flags only the BEGIN line of a private key.
_PEM_BLOCK = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----", re.S)
_NOT_TOKEN = r"(?<![A-Za-z0-9_-])"
_EXTRA_PATTERNS = [
    re.compile(_NOT_TOKEN + r"sk-(?:ant-|proj-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
    re.compile(_NOT_TOKEN + r"AIza[0-9A-Za-z_-]{35}"),
    re.compile(_NOT_TOKEN + r"hf_[A-Za-z0-9]{30,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    # Shorter than detect-secrets' GitHub rule accepts (older and test tokens).
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(_NOT_TOKEN + r"(?:glpat|shpat|shpss|dop_v1|sq0atp|sq0csp)[-_][A-Za-z0-9_-]{16,}"),
]
# name=value where the name says credential (`env | grep TOKEN`, `.env` files, JSON, YAML):
# detect-secrets' keyword list has no "token" or "auth". A value that goes on into "[" or "(" is
# code that looks a secret up, not a secret.
_CREDENTIAL_ASSIGNMENT = re.compile(
    r"\b[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|AUTH|CREDENTIALS?|_KEY)"
    r"\b[\"']?\s*[=:]\s*[\"']?([^\s\"'$<{\[\](),;]{8,}+)(?![\[(])", re.I)
_NETRC = re.compile(r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(\S+)")
_HEADER = re.compile(r"(?i)\b(?:authorization\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+|x-api-key\s*[:=]\s*[\"']?)"
                     r"([^\s\"'\\,;]{8,})")


@lru_cache(maxsize=1)
def _detectors():
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
    from detect_secrets.plugins.ip_public import IPPublicDetector
    from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, KeywordDetector

    regex_plugins = [cls() for cls in get_mapping_from_secret_type_to_class().values()
                     if issubclass(cls, RegexBasedDetector) and cls is not IPPublicDetector]
    # detect-secrets' default limit. Its hex detector is left out: quoted hex in tool output is almost
    # always a hash (git, lock files), and hex keys are caught by their names and prefixes instead.
    entropy = [Base64HighEntropyString(limit=4.5)]
    return regex_plugins, KeywordDetector(), CONFIG_DENYLIST_REGEX_TO_GROUP, entropy


# Detectors whose every rule needs a credential word before the value ("cloudant_password = ...",
# "ibm_cloud_iam_key: ...") or a URL with one: lines without such a word cannot match, and these are
# the slowest rules, so they see only the lines that name a credential.
_NAMED_ONLY = frozenset({"Cloudant Credentials", "IBM Cloud IAM Key", "IBM COS HMAC Credentials",
                         "SoftLayer Credentials"})


def _library_findings(named: str, tokens: str) -> set[str]:
    from detect_secrets.filters import heuristic

    regex_plugins, keyword, keyword_rules, entropy = _detectors()
    found: set[str] = set()
    for plugin in regex_plugins:
        if plugin.secret_type in _NAMED_ONLY:
            found.update(plugin.analyze_string(named))
            continue
        found.update(plugin.analyze_string(tokens))
        if plugin.secret_type == "Basic Auth Credentials":  # a password may be short and plain
            found.update(plugin.analyze_string(named))
    for line in named.splitlines():
        if heuristic.is_indirect_reference(line):
            continue
        for secret in keyword.analyze_string(line, keyword_rules):
            # Rules written for config files also match code ("secret: str) -> bool:").
            if not (heuristic.is_templated_secret(secret) or heuristic.is_prefixed_with_dollar_sign(secret)
                    or any(c.isspace() for c in secret)):
                found.add(secret)
    for plugin in entropy:
        # Its rule (a quoted run of base64 characters) never crosses a line: one pass over all lines.
        for secret in set(plugin.analyze_string(tokens)):
            start, end = _line_at(tokens, tokens.find(secret))
            line = tokens[start:end]
            if (plugin.calculate_shannon_entropy(secret) > plugin.entropy_limit
                    and not heuristic.is_sequential_string(secret) and not heuristic.is_potential_uuid(secret)
                    and not heuristic.is_likely_id_string(secret, line, plugin)
                    and not _HASH_DIGEST.match(secret) and not _encodes_text(secret)):
                found.add(secret)
    return found


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
_KEYWORDS = {word: re.compile(r"[\w.-]*[\"'\]]*(?:\s*(?:[:=]|=>)| +[\"']?\w)")
             for word in ("pass", "pwd", "secret", "token", "auth", "key", "credential", "private", "contrase")}
_KEYWORDS.update({word: re.compile(r"\s") for word in ("bearer", "basic", "machine")})
_KEYWORDS["://"] = re.compile(r"[^\s/@]*:[^\s/@]*@")
_KEYWORDS["api.softlayer.com/"] = re.compile(r"soap/")
# Key formats with a fixed prefix whose body need not look random ("AKIAIOSFODNN7EXAMPLE", "xoxb-1-2").
_KEY_PREFIXES = ("AKIA", "ASIA", "xox", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-", "sk_", "rk_", "hf_", "AIza", "SG.", "npm_", "pypi-",
                 "eyJ", "sq0", "shp", "dop_v1_", "AKC", "hooks.slack.com", "-----BEGIN")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{16,}")
_HEX = re.compile(r"[0-9a-fA-F-]+")
_DIGIT = re.compile(r"\d")
_CLASS_CHANGE = re.compile(r"[a-z](?=[A-Z0-9])|[A-Z](?=[a-z0-9])|[0-9](?=[A-Za-z])")
_RANDOM_LOOKING = 5


def _line_at(text: str, index: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return start, len(text) if end == -1 else end


def _join(text: str, spans: set[tuple[int, int]]) -> str:
    return "\n".join(text[start:end] for start, end in sorted(spans))


def _candidates(text: str) -> tuple[str, str]:
    """(lines naming a credential, lines holding a random-looking token), each joined by newlines."""
    # "İ" is the one character whose lower case is two characters long: without it every index in
    # ``lowered`` is the same index in ``text``.
    lowered = text.replace("\u0130", "I").lower()
    named = set()
    # Literal searches, one keyword at a time: one case-insensitive alternation over the whole text
    # costs ten times more.
    for word, follows in _KEYWORDS.items():
        index = lowered.find(word)
        while index != -1:
            if follows.match(lowered, index + len(word)):
                named.add(_line_at(text, index))
            index = lowered.find(word, index + 1)
    tokens = set()
    for prefix in _KEY_PREFIXES:
        index = text.find(prefix)
        while index != -1:
            tokens.add(_line_at(text, index))
            index = text.find(prefix, index + 1)
    for match in _LONG_TOKEN.finditer(text):
        token = match.group()
        if (not _HEX.fullmatch(token) and _DIGIT.search(token)
                and len(_CLASS_CHANGE.findall(token)) >= _RANDOM_LOOKING):
            tokens.add(_line_at(text, match.start()))
    return _join(text, named), _join(text, tokens)


def _findings(text: str) -> set[str]:
    found = {match.group() for match in _PEM_BLOCK.finditer(text)}
    named, tokens = _candidates(text)
    if not (named or tokens):
        return found  # most text: the detector is not even imported
    found |= _library_findings(named, tokens)
    for pattern in _EXTRA_PATTERNS:
        found.update(match.group() for match in pattern.finditer(tokens))
    for pattern in (_CREDENTIAL_ASSIGNMENT, _HEADER, _NETRC):
        found.update(match.group(1) for match in pattern.finditer(named))
    # Too short to be a credential, or all punctuation ("********"): masking would only garble.
    return {s for s in found if len(s) >= 6 and any(c.isalnum() for c in s)}


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
    """``text`` with every recognised secret replaced by ``[REDACTED]``."""
    for literal in credential_values() if literals is None else literals:
        text = text.replace(literal, MASK)
    for secret in sorted(_findings(text), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


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
