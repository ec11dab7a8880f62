"""What a bash command runs, read with tree-sitter's bash grammar before allow rules are matched.

``shlex`` is not bash: it reads ``#`` as a comment wherever it appears (``npm test a#b; touch X``
hid the second command), and ``>|``, ``&>`` and here-docs are words to it. tree-sitter-bash is the
grammar Codex and Claude Code read commands with. :func:`read` gives the simple commands of a
command line and their words as the shell will see them, or why no prefix rule can be trusted to
say what runs: the parse is incomplete (an ERROR or MISSING node), or something in it runs code or
writes a file that the words do not show (a comment, ``>|``, a here-doc, ``$(…)``, a function
definition, a subshell, ``&``, a redirection into a file...).

The grammar is imported on first use (about 12 ms); a parse costs tens of microseconds.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass

# Nodes that hide what runs or where output goes, wherever they appear in the tree.
_NEVER = {
    "comment": "a comment",
    "command_substitution": "a command substitution ($(…) or backticks)",
    "process_substitution": "a process substitution (<(…) or >(…))",
    "heredoc_redirect": "a here-document",
    "herestring_redirect": "a here-string",
    "function_definition": "a function definition",
    "subshell": "a subshell",
    "compound_statement": "a { … } group",
    "variable_assignment": "a variable assignment",
    "declaration_command": "a declaration (export, declare, local...)",
    "unset_command": "unset",
    "negated_command": "a negated command (!)",
    "test_command": "a [[ … ]] test",
    "arithmetic_expansion": "an arithmetic expansion",
    "c_style_for_statement": "a for loop",
    "for_statement": "a for loop",
    "while_statement": "a while loop",
    "if_statement": "an if statement",
    "case_statement": "a case statement",
}
# Redirections that write no file.
_DUPLICATIONS = (">&", "<&")
_TO_NULL = (">", ">>", "&>", "&>>")
_GLOB = re.compile(r"[*?\[]|\{[^}]*(,|\.\.)[^}]*\}")
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPE_IN_QUOTES = re.compile(r"\\([\\\"$`])")
# A tree-sitter parser is not to be used by two threads at once.
_PARSING = threading.Lock()


@dataclass(frozen=True)
class Reading:
    """``parts``: the words of each simple command, in order; a word the shell decides at run time
    (a glob, ``$VAR``) is None. ``hidden``: why no prefix rule may cover the command, or None.
    ``outline``: the parse, compactly (``command(npm test) ; command(touch X)``)."""

    parts: tuple[tuple[str | None, ...], ...]
    hidden: str | None
    outline: str


@functools.lru_cache(maxsize=1)
def _parser():
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


@functools.lru_cache(maxsize=256)
def read(command: str) -> Reading:
    """How bash will read ``command`` (see :class:`Reading`)."""
    with _PARSING:
        root = _parser().parse(command.encode("utf-8", "surrogatepass")).root_node
    outline = _outline(root)
    if root.has_error:
        return Reading((), "a command the parser cannot read completely", outline)
    if "\\\n" in command:  # tree-sitter and bash join continued lines differently
        return Reading((), "a line continuation (\\ at the end of a line)", outline)
    hidden = _never(root)
    parts: list[tuple[str | None, ...]] = []
    if hidden is None:
        hidden = _statements(root, parts)
    if hidden is None and not parts:
        hidden = "no command"
    return Reading(tuple(parts) if hidden is None else (), hidden, outline)


def _never(node) -> str | None:
    stack = [node]
    while stack:
        node = stack.pop()
        if node.type in _NEVER:
            return _NEVER[node.type]
        stack.extend(node.children)
    return None


def _statements(node, parts: list) -> str | None:
    """Every statement of ``node`` as simple commands into ``parts``; why not, if one is not."""
    kind = node.type
    if kind in ("program", "list", "pipeline"):
        for child in node.children:
            if child.type == "&":
                return "a command sent to the background (&)"
            if child.type in (";", "&&", "||", "|", "|&", "\n"):
                continue
            reason = _statements(child, parts)
            if reason:
                return reason
        return None
    if kind == "redirected_statement":
        for redirect in node.children_by_field_name("redirect"):
            reason = _redirect(redirect)
            if reason:
                return reason
        body = node.child_by_field_name("body")
        return _statements(body, parts) if body is not None else "a redirection without a command"
    if kind == "command":
        return _command(node, parts)
    return f"a {kind.replace('_', ' ')}"


def _command(node, parts: list) -> str | None:
    words: list[str | None] = []
    for child in node.children:
        if child.type in ("file_redirect",):
            reason = _redirect(child)
            if reason:
                return reason
            continue
        target = child.named_children[0] if child.type == "command_name" and child.named_children else child
        value = _value(target)
        if value is _UNREADABLE:
            return f"a word the parser does not know ({target.type})"
        if child.type == "command_name" and value is None:
            return "a command name the shell decides when it runs ($VAR, a glob)"
        words.append(value)
    if not words:
        return "no command"
    parts.append(tuple(words))
    return None


def _redirect(node) -> str | None:
    """None for a redirection that writes no file (``2>&1``, ``> /dev/null``, ``< input``)."""
    if node.type != "file_redirect":
        return _NEVER.get(node.type, "a redirection")
    operator = next((c.type for c in node.children if not c.is_named), "")
    destinations = node.children_by_field_name("destination")
    target = _value(destinations[0]) if len(destinations) == 1 else _UNREADABLE
    if operator == ">|":
        return "a redirection that overwrites a file even under noclobber (>|)"
    if operator in _DUPLICATIONS and (not destinations or (isinstance(target, str) and target.isdigit())):
        return None  # `2>&1`, `>&2`, `2>&-`
    if operator in _TO_NULL and target == "/dev/null":
        return None
    if operator == "<" and isinstance(target, str) and not target.startswith(("/dev/tcp/", "/dev/udp/")):
        return None  # reads a file, as cat would (bash opens a connection for /dev/tcp/HOST/PORT)
    return "a redirection into a file"


_UNREADABLE = object()


def _value(node):
    """The word as the shell passes it on: a string, None when it is only known at run time (a
    glob, an expansion), ``_UNREADABLE`` for a node this reading does not handle."""
    kind = node.type
    text = node.text.decode("utf-8", "surrogatepass")
    if kind == "word":
        return None if _GLOB.search(text) else _ESCAPE.sub(r"\1", text)
    if kind == "number":
        return text
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        pieces = []
        for child in node.named_children:
            if child.type != "string_content":
                return None  # "$HOME/x": known only when it runs
            pieces.append(_ESCAPE_IN_QUOTES.sub(r"\1", child.text.decode("utf-8", "surrogatepass")))
        return "".join(pieces)
    if kind in ("simple_expansion", "expansion", "ansi_c_string", "translated_string", "brace_expression"):
        return None
    if kind == "concatenation":
        values = [_value(child) for child in node.named_children]
        if any(value is _UNREADABLE for value in values):
            return _UNREADABLE
        if any(value is None for value in values) or _GLOB.search(text):
            return None
        return "".join(values)
    return _UNREADABLE


def _outline(node) -> str:
    """The parse, compactly: ``command(…)`` with a simple command's source words, other nodes as
    ``type(children)``, operators as themselves."""
    if node.type == "command":
        return f"command({' '.join(c.text.decode('utf-8', 'replace') for c in node.children)})"
    if not node.is_named:
        return node.type
    if not node.children:
        return node.type
    inner = " ".join(_outline(child) for child in node.children)
    return inner if node.type == "program" else f"{node.type}({inner})"
