"""Judging a value found where a secret could be: a placeholder (``changeme``, ``test-key-1234``),
a template (``${VAR}``), a name (``refresh_token``), code (``settings.X``), or a plausible literal.
Used by ``redact_rules.py``; no rule here finds anything by itself."""

from __future__ import annotations

import re

MIN_SECRET_LENGTH = 6
PLACEHOLDER_WORDS = frozenset("""
    test tests testing dummy fake example examples sample placeholder changeme change changeit me
    secret secrets password passwd pass pwd passphrase token key keys api apikey your my our here
    foo bar baz qux quux value values redacted mock mocked demo dev development local localhost
    default insecure unsafe not a an the real todo fixme none null nil user username admin root
    postgres mysql guest invalid wrong bad good valid correct new old other another some stub
    fixture xxx xxxx xxxxx xxxxxx xxxxxxxx abc xyz s3cret enter put insert replace with goes
    auth credential credentials client access private public sk pk rk jwt app db session signing
    webhook hunter
""".split())
STOP_VALUES = frozenset("""
    none null nil true false undefined required optional str string bytes int integer bool float
    any object dict list tuple bearer basic token lambda self this new await yield function
    secretstr
""".split())
TEMPLATE = re.compile(r"\$\{|\$\(|\{\{|\{%|%\(|%[-0-9.]*[sdifx]\b|#\{|<%|\{\w*\}|^\$\w|^%\w+%$|^<[^>]*>$|^\*+$")
WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
DOUBLED = re.compile(r"(.{4,}?)\1+")
# `settings.X`, `cfg.password_hash`, `this->token`, `Config::SECRET`: code that looks a value up.
ATTRIBUTE = re.compile(r"[A-Za-z_$][\w$]*\s*(?:\.|->|::)\s*[A-Za-z_$]")
# A module path or host name (`django.contrib.auth.hashers.PBKDF2PasswordHasher`, `db.internal`),
# not a password with a dot in it (`Adm1n.Passw0rd`).
DOTTED = re.compile(r"[A-Za-z_][A-Za-z_-]*(?:\.[A-Za-z_][A-Za-z_-]*)+|[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*){2,}")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}")
NAME_LIKE = re.compile(r"_?[A-Za-z]+(?:[-_.:/][A-Za-z]+)*[-_:]?")
# A regular expression (`r"(?:key|token)"`, `"[^\\W\\d]\\w*"`), not a password.
REGEX = re.compile(r"\(\?|\\[wdsbWDSB]|\[\^?[^\]]*\][*+?{]")


def sequential_digits(digits: str) -> bool:
    return digits in "01234567890" or digits in "98765432109" or len(set(digits)) == 1


def is_placeholder(value: str) -> bool:
    """``test-key-1234``, ``changeme``, ``your-api-key-here``, ``xxxxxxxx``, ``hunter2``: words from
    fixtures and examples, short or sequential numbers, nothing else, and not said twice over."""
    value = re.sub(r"\\[nrt]", "", value)
    if len(set(value.lower()) - set("-_. ")) <= 2:
        return True
    words = WORDS.findall(value)
    if not words:
        return False
    if len(value) >= 12 and DOUBLED.fullmatch(value) and any(c.isdigit() for c in value):
        return False  # a word said twice to reach a length rule (`hunter2hunter2`) is someone's password
    for word in words:
        if word.isdigit():
            if len(word) > 4 and not sequential_digits(word):
                return False
        elif word.lower() not in PLACEHOLDER_WORDS:
            return False
    return True


def name_like(value: str) -> bool:
    """Words joined as names are (``refresh_token``, ``minItems``, ``current-span``,
    ``TYPER_RICH_MARKUP_MODE``, ``setuptools``): in code such a string is a key, a label or an
    option, not a credential. Random-looking ones (``pVkOyRkunyBH``) are not names."""
    return NAME_LIKE.fullmatch(value) is not None and not any(
        looks_random(part) for part in re.split(r"[-_.:/]+", value) if part)


def plausible_literal(value: str) -> bool:
    """A literal string (quoted, or on a command line) that could be a credential."""
    return (len(value) >= MIN_SECRET_LENGTH and any(c.isalnum() for c in value) and not value.startswith("-")
            and not any(c.isspace() for c in value) and not TEMPLATE.search(value)
            and not is_placeholder(value) and not value.startswith(("/", "./", "../", "~/"))
            and "://" not in value and not DOTTED.fullmatch(value) and not COLOUR.fullmatch(value))


def normalised(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def random_enough(value: str) -> bool:
    """For a name that is only maybe a credential (``<x>_key``): a long value that is not a word."""
    return len(value) >= 16 and not IDENTIFIER.fullmatch(value) or looks_random(value) and len(value) >= 12


def looks_random(identifier: str) -> bool:
    """``pVkOyRkunyBH``, ``hunter2pass``: no one names a variable like that; ``dbPassword``,
    ``user_token``, ``password2`` are names."""
    if "_" in identifier:
        return False
    words = WORDS.findall(identifier)
    short = sum(1 for word in words if len(word) <= 2 and not word.isdigit())
    return short >= 2 or re.search(r"[A-Za-z]\d+[A-Za-z]", identifier) is not None
