"""Our redaction rules: where a secret *value* is, as a span, for what detect-secrets has no rule for.

Each rule returns the ``(start, end)`` of the value only, never of the name that holds it nor the
code around it: ``api_key = settings.OPENAI_API_KEY`` and ``password=self.password_hash)`` are code
that looks a secret up, and must reach the session file (and, after ``-c``, the model) as written.

- Key formats with a fixed prefix (Docker, npm, Vault, Google OAuth, JWT with its signature, ...).
- Command lines that carry a password (``mysql -pS3cr3t``, ``sshpass -p``, ``redis-cli -a``,
  ``htpasswd -b``, ``docker login -p``, ``--password=...``, ``curl -u user:pass``).
- Assignments to a credential-sounding name (``.env``, YAML, JSON, INI, code), whose value is
  judged before it is masked: a quoted literal is a secret unless it is a template
  (``${VAR}``, ``{{ x }}``, ``<your key>``), a placeholder (``test-key-1234``, ``changeme``) or a
  path; an unquoted value is code (``settings.X``, ``os.environ[...]``, ``cfg.password_hash``,
  ``get_token()``) unless it stands where only a literal can (``DB_PASSWORD=...``, ``password: ...``
  alone on its line).
- Headers (``Authorization: Bearer ...``), netrc, URLs with a password (judged like a value).
"""

from __future__ import annotations

import re
from typing import Iterator

from mini_letta.trust.secret_values import (
    ATTRIBUTE, IDENTIFIER, REGEX, STOP_VALUES, looks_random, name_like, normalised, plausible_literal, random_enough,
)

Span = tuple[int, int]

_NOT_TOKEN = r"(?<![A-Za-z0-9_-])"
# Key formats: the whole token is the secret.
TOKEN_PATTERNS = [
    re.compile(_NOT_TOKEN + r"sk-(?:ant-|proj-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
    re.compile(_NOT_TOKEN + r"AIza[0-9A-Za-z_-]{35}"),
    re.compile(_NOT_TOKEN + r"hf_[A-Za-z0-9]{30,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    # Shorter than detect-secrets' GitHub rule accepts (older and test tokens).
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(_NOT_TOKEN + r"(?:glpat|shpat|shpss|dop_v1|sq0atp|sq0csp)[-_][A-Za-z0-9_-]{16,}"),
    re.compile(_NOT_TOKEN + r"dckr_pat_[A-Za-z0-9_-]{20,}"),
    re.compile(_NOT_TOKEN + r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    re.compile(_NOT_TOKEN + r"hv[sbr]\.[A-Za-z0-9_-]{24,}"),
    re.compile(_NOT_TOKEN + r"GOCSPX-[A-Za-z0-9_-]{24,}"),
    # An age identity: Bech32 after its prefix (age-encryption.org/v1).
    re.compile(r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b"),
    # The signature of an Azure shared access signature (`?sv=…&sig=…`): the value is the secret.
    re.compile(r"(?<=[?&]sig=)[A-Za-z0-9%+/=_-]{16,}"),
    # A JWT with its signature (detect-secrets' rule stops before it); "alg: none" has none.
    re.compile(_NOT_TOKEN + r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
]
# A whole key block, also inside JSON (escaped line breaks); only base64 and the two PEM headers may
# stand between the markers: code that names both markers (`_SK_START = b"-----BEGIN ..."`) is no key.
PEM_BLOCK = re.compile(r"-----BEGIN (?P<kind>[A-Z0-9 ]*)PRIVATE KEY-----"
                       r"(?:[A-Za-z0-9+/=\s]|\\[nr]|(?:Proc-Type|DEK-Info):[^\n\\]*)*?"
                       r"[A-Za-z0-9+/]{16}"
                       r"(?:[A-Za-z0-9+/=\s]|\\[nr]|(?:Proc-Type|DEK-Info):[^\n\\]*)*?"
                       r"-----END (?P=kind)PRIVATE KEY-----")

# --- credential names ----------------------------------------------------------------------------
_CREDENTIAL_PARTS = frozenset("""password passwd pwd pass passphrase secret token auth credential credentials
    creds apikey contraseña contrasena""".split())
# "<x>_key" is a credential unless <x> says it is another kind of key.
_OTHER_KEYS = frozenset("""primary foreign cache sort partition idempotency lookup dict map hash range group
    row object s3 redis unique composite natural surrogate translation i18n message setting settings config
    field column index react list item query next prev page cursor public routing shard dedupe dedup bucket
    event state registry context metadata label env key sub parent child ssh
    """.split())
# detect-secrets' keyword list, less what _CREDENTIAL_PARTS has already.
_CREDENTIAL_KEYS = frozenset("api auth service account db database priv private client access secret signing "
                             "encryption master license consumer app stripe".split())
_NOT_CREDENTIAL_AFTER = frozenset("""
    timeout ttl age expiry expires expiration exp length len min max count size limit file files
    path dir name names field fields id ids url urls uri endpoint header headers prefix suffix type
    types format env var policy validators validator regex pattern hashers hasher rounds iterations
    label placeholder help hint required enabled reset changed backend backends class mode scheme
    algorithm alg location source provider model input prompt display column param params at date
    time version usage budget counter index idx offset position pos list kind manager store helper
    strength score reminder question rotation lifetime duration method methods view views form
    forms serializer template templates widget error errors message messages status flow grant log""".split())
_NOT_CREDENTIAL_BEFORE = frozenset("max min num total count is has use show hide validate verify check "
                                   "public n forgot".split())


def credential_name(name: str) -> str:
    """``"strong"`` for ``DB_PASSWORD``, ``apiKey``, ``client_secret``, ``_authToken``,
    ``spring.datasource.password``; ``"weak"`` for other ``<x>_key`` names (``SIGNING_KEY``, but
    also ``payload_key``); ``""`` for ``max_tokens``, ``author``, ``primary_key``,
    ``PASSWORD_RESET_TIMEOUT``, ``token_url``."""
    # `token.markup` is an attribute of a token, `spring.datasource.password` a password.
    parts = [p for p in re.split(r"[^a-z0-9ñ]+", normalised(name.rstrip(".").rsplit(".", 1)[-1])) if p]
    for index, part in enumerate(parts):
        strength = ""
        if part in _CREDENTIAL_PARTS or part.endswith(("password", "passwd", "secret", "apikey")):
            strength = "strong"
        elif part == "key" and index > 0 and parts[index - 1] not in _OTHER_KEYS:
            strength = "strong" if parts[index - 1] in _CREDENTIAL_KEYS else "weak"
        if strength:
            after, before = parts[index + 1:], parts[:index]
            if any(p in _NOT_CREDENTIAL_AFTER for p in after) or any(p in _NOT_CREDENTIAL_BEFORE for p in before):
                return ""
            return strength
    return ""


def is_credential_name(name: str) -> bool:
    return credential_name(name) != ""


# name, closing quote or bracket, operator; the value starts where the match ends. A name after
# `::` is part of a type's (`AWS::IAM::AccessKey`), not a variable.
_ASSIGNMENT = re.compile(
    r"(?<![\w.$-])(?<!::)(?P<name>[A-Za-z_][\w.-]*)(?P<close>[\\\"'\]]{0,3})"
    r"(?P<op>[ \t]*(?::=|=>|===?|!==?|=|:(?![:=])|,)[ \t]*)")
_XML_ELEMENT = re.compile(r"<(?P<name>[\w.-]+)>(?P<value>[^<\n]{6,200})</(?P=name)>")
# .NET's web.config / app.config: <add key="ApiKey" value="..." />
_KEY_VALUE_ATTRIBUTES = re.compile(r"\bkey\s*=\s*\\?([\"'])(?P<name>[^\"'\n\\]+)\\?\1\s+value\s*=\s*\\?([\"'])"
                                   r"(?P<value>[^\"'\n\\]*)\\?\3")
_QUOTES = "\"'`"
_STRING_PREFIX = re.compile(r"(?:[rRbBuUfF]{1,2})?(?=[\"'`])")


def _quoted_value(line: str, start: int) -> Span | None:
    """The inside of a string literal starting at ``start`` (with a prefix like ``b`` or a JSON
    escape ``\\"``), or None when there is none there. An f-string is built from code and a raw
    string is a pattern or a path: neither is a value to judge, so both give an empty span."""
    prefix = _STRING_PREFIX.match(line, start)
    escaped = line.startswith('\\"', start) or line.startswith("\\'", start)
    if escaped:
        quote, inner = line[start:start + 2], start + 2
    elif prefix:
        quote, inner = line[prefix.end()], prefix.end() + 1
        if set(prefix.group().lower()) & {"f", "r"}:
            return start, start
    else:
        return None
    end = line.find(quote, inner)
    while end > 0 and not escaped and line[end - 1] == "\\" and quote != "`":
        end = line.find(quote, end + 1)
    return None if end == -1 else (inner, end)


def _unquoted_value(line: str, start: int) -> Span:
    """Up to a space, a quote, a comma, or a bracket the value did not open (the end of an argument
    list: ``password=self.pw)``); without a trailing ``:`` or ``.`` (``token: string):``)."""
    end, depth = start, 0
    while end < len(line) and not (line[end].isspace() or line[end] in "\"'`\\,;"):
        if line[end] in "([{":
            depth += 1
        elif line[end] in ")]}":
            if depth == 0:
                break
            depth -= 1
        end += 1
    while end > start and line[end - 1] in ":.":
        end -= 1
    return start, end


def _before_name(line: str, name_start: int) -> str:
    """What stands before the name on its line; nothing, when the line is the start of a JSON string
    (`{"path": ".env", "content": "DB_PASSWORD=...`: the first line of a file the model writes)."""
    before = line[:name_start].strip()
    return "" if before.endswith(('": "', '":"')) else before


def _literal_only_here(line: str, match: re.Match, value: Span, name_start: int) -> bool:
    """Does the unquoted value stand where code would not put an expression? ``NAME=value`` in a
    .env or shell line, or ``name: value`` / ``name = value`` alone on its line (YAML, INI)."""
    name, op = match.group("name"), match.group("op")
    before = _before_name(line, name_start)
    after = line[value[1]:].strip()
    # Shell syntax has no spaces around `=`; `NAME = value` is code.
    if op == "=" and not match.group("close") and name.upper() == name and (
            before in ("", "export", "set", "ENV", "-e", "--env") or before.endswith(("export", " -e", "--env"))):
        return True
    whole_line = before in ("", "-") and (not after or after.startswith("#"))
    text = line[value[0]:value[1]]
    if whole_line and op.strip() == ":":
        return True
    # `password = hunter` alone on its line is INI or Python (a variable): taken for code, unless
    # the word looks random (see looks_random).
    return whole_line and op.strip() == "=" and not IDENTIFIER.fullmatch(text)


def _judge_unquoted(line: str, match: re.Match, value: Span, name_start: int) -> bool:
    """Is the unquoted value after a credential name a secret, or code?"""
    text = line[value[0]:value[1]]
    if (text.lower() in STOP_VALUES or text.startswith(("@", "&", "*", "!", "%", "$"))
            or "(" in text or "[" in text or ATTRIBUTE.match(text)  # a call, an index, an attribute
            or line[value[1]:value[1] + 1] in ("(", "[", ".")):
        return False
    name = re.sub(r"[^a-z0-9]", "", normalised(match.group("name")))
    if name and name in re.sub(r"[^a-z0-9]", "", text.lower()):
        return False  # `api_key=api_key`, `password=db_password`
    if not plausible_literal(text):
        return False
    if IDENTIFIER.fullmatch(text):
        if re.fullmatch(r"(?:[A-Z][a-z]+){2,}", text):
            return False  # a type: `password: SecretBytes` in a class body
        return looks_random(text) or _literal_only_here(line, match, value, name_start)
    return True


def _literal_context(line: str, match: re.Match, value: Span, name_start: int) -> bool:
    """Does a quoted value stand where a configuration file holds literals? ``NAME="..."`` in a
    .env or shell line, ``"name": "..."`` or ``name: "..."`` as a line of its own (JSON, YAML)."""
    before = _before_name(line, name_start)
    after = line[value[1] + 1:].strip()
    name = match.group("name")
    op = match.group("op").strip()
    shell_line = before in ("", "export", "ENV") or before.endswith(" -e")
    if match.group("op") == "=" and name.upper() == name and shell_line:
        return True
    # JSON quotes its keys; YAML does not, and ends no line with a comma, as a Python dict does.
    quoted_key = any(q in match.group("close") for q in "\"'")
    return (op == ":" and before in ("", "-", '"', "'", "{", '{"', "- \"")
            and (after in ("", "}") or after.startswith("#") or quoted_key and after in (",", "},")))


def _assigned_value(text: str, match: re.Match) -> Span | None:
    """Where the secret value assigned by ``match`` is, if it holds one."""
    strength = credential_name(match.group("name"))
    if not strength:
        return None
    op = match.group("op").strip()
    line_start = text.rfind("\n", 0, match.start()) + 1
    line_end = text.find("\n", match.end())
    line = text[line_start:len(text) if line_end == -1 else line_end]
    name_start = match.start() - line_start
    if op == "," and not (match.group("close") and match.group("name").upper() == match.group("name")
                          and line[:name_start].rstrip("\"' ").endswith("(")):
        return None  # only `setenv("API_KEY", "...")`: a quoted variable name, then its value
    start = match.end() - line_start
    quoted = _quoted_value(line, start)
    if quoted:
        literal = line[quoted[0]:quoted[1]]
        if not plausible_literal(literal) or REGEX.search(literal):
            return None
        # In a configuration file one word may be a password; words joined (`next_token`) are a name.
        if name_like(literal) and (strength == "weak" or re.search(r"[a-z][-_][a-z]", literal, re.I)
                                   or not _literal_context(line, match, quoted, name_start)):
            return None
        if strength == "weak" and not random_enough(literal):
            return None  # `dest_key='Ec2KeyName'`: a key into a table
        return quoted[0] + line_start, quoted[1] + line_start
    if op in (",", "==", "===", "!=", "!=="):
        return None
    value = _unquoted_value(line, start)
    if strength == "weak" and not random_enough(line[value[0]:value[1]]):
        return None
    if value[0] < value[1] and not (line[value[0]].isalnum() or line[value[0]] in "_+"):
        return None  # a dict, list or tuple, a reST role (`:py:class:`), a pointer
    return (value[0] + line_start, value[1] + line_start) if _judge_unquoted(line, match, value, name_start) else None


def assignment_spans(text: str) -> Iterator[Span]:
    """Values assigned to credential names, in ``text`` (candidate lines, joined by newlines)."""
    for match in _ASSIGNMENT.finditer(text):
        span = _assigned_value(text, match)
        if span:
            yield span
    for pattern in (_XML_ELEMENT, _KEY_VALUE_ATTRIBUTES):
        for match in pattern.finditer(text):
            if is_credential_name(match.group("name")) and plausible_literal(match.group("value").strip()):
                yield match.span("value")


# --- command lines -------------------------------------------------------------------------------
_ARG = r"(?!-)(?P<value>'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"|;&]+)"
_SAME_COMMAND = r"[^\n|;&]*?"
COMMAND_PATTERNS = [
    # MySQL and MariaDB take the password glued to -p: `-p value` would be a database name.
    re.compile(r"\b(?:mysql\w*|mariadb[\w-]*)\b" + _SAME_COMMAND + r"(?<=\s)-p" + _ARG),
    re.compile(r"\b(?:(?:docker|podman|buildah|skopeo|nerdctl)\s+login|mongo(?:sh|dump|restore|import|export)?)\b"
               + _SAME_COMMAND + r"(?<=\s)-p\s*" + _ARG),
    re.compile(r"\bsshpass\s+(?:-\w+\s+)*?-p\s*" + _ARG),
    re.compile(r"\bredis-cli\b" + _SAME_COMMAND + r"(?<=\s)-a\s*" + _ARG),
    re.compile(r"(?<![\w-])--(?:[\w-]*-)?(?:password|passwd|pass|passphrase|token|api-?key|secret|client-secret)"
               r"(?:=|\s+(?![a-z]+(?:\b[^=]|$)))" + _ARG),
    re.compile(r"\bcurl\b" + _SAME_COMMAND + r"(?<=\s)(?:-u|--user)\s*['\"]?[^\s:'\"]+:(?P<value>[^\s'\"]+)"),
    re.compile(r"(?<=\s)-pass(?:in|out)?\s+['\"]?pass:(?P<value>[^\s'\"]+)"),
]
_HTPASSWD = re.compile(r"\bhtpasswd\s+(?P<args>[^\n|;&]*)")
HEADER = re.compile(r"(?i)\b(?:authorization\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+|x-api-key\s*[:=]\s*[\"']?)"
                    r"(?P<value>[^\s\"'\\,;]{8,})")
NETRC = re.compile(r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<value>\S+)")
# A URL with a password and no user name (`redis://:PASSWORD@host`), which detect-secrets' rule
# for Basic auth does not read.
URL_PASSWORD_ONLY = re.compile(r"://:(?P<value>[^\s/@:?#]+)@")
# `--secret id=npm,src=...` names a secret for docker build, it does not hold one.
_OPTION_LIST = re.compile(r"\w+=")
COMMAND_WORDS = ("mysql", "mariadb", "login", "mongo", "sshpass", "redis-cli", "--", "curl", "-pass", "htpasswd")


def _inner(text: str, span: Span) -> Span:
    start, end = span
    if end - start >= 2 and text[start] in "'\"" and text[end - 1] == text[start]:
        return start + 1, end - 1
    return start, end


def command_spans(text: str) -> Iterator[Span]:
    """Passwords on command lines in ``text`` (candidate lines, joined by newlines)."""
    for pattern in COMMAND_PATTERNS:
        for match in pattern.finditer(text):
            span = _inner(text, match.span("value"))
            value = text[span[0]:span[1]]
            if plausible_literal(value) and not _OPTION_LIST.match(value):
                yield span
    for match in _HTPASSWD.finditer(text):
        # htpasswd -b[cBmsp...] FILE USER PASSWORD, or -nb USER PASSWORD (no file).
        args = [(m.start(), m.end()) for m in re.finditer(r"'[^']*'|\"[^\"]*\"|\S+", match.group("args"))]
        flags = "".join(match.group("args")[s + 1:e] for s, e in args if match.group("args")[s] == "-")
        words = [span for span in args if match.group("args")[span[0]] != "-"]
        position = 1 if "n" in flags else 2
        if "b" in flags and len(words) > position:
            offset = match.start("args")
            span = _inner(text, (words[position][0] + offset, words[position][1] + offset))
            if plausible_literal(text[span[0]:span[1]]):
                yield span


def header_spans(text: str) -> Iterator[Span]:
    from urllib.parse import unquote

    for pattern in (HEADER, NETRC, URL_PASSWORD_ONLY):
        for match in pattern.finditer(text):
            if plausible_literal(unquote(match.group("value"))):
                yield match.span("value")


_ID_KEY = re.compile(r"(?:\bid|_id|[a-z]Id|\bID|uuid|sha\d*|digest|etag|nonce|checksum|hash)[\"']?\s*[:=]\s*$")


def names_an_id(before: str) -> bool:
    """Is a quoted string (which looks random) the value of an ``"id"`` or a digest? ``before`` is
    its line up to the opening quote: ``"id": "toolu_01D7FLrfh4GYq7yT1ULFeyMV"`` is no secret."""
    return _ID_KEY.search(before) is not None


def url_password_ok(user_and_password: str, password: str) -> bool:
    """A URL's password worth masking: not ``postgres:postgres``, ``:password``, ``${DB_PASSWORD}``."""
    from urllib.parse import unquote

    user = user_and_password.split(":", 1)[0].rsplit("/", 1)[-1]
    return password != user and plausible_literal(unquote(password))
