"""YAML front matter: a ``---`` line, YAML, a ``---`` line, then the body (Markdown).

The format of Agent Skills' ``SKILL.md`` and of Claude Code's agent files. The YAML is read by
PyYAML's ``safe_load`` (a regular expression misreads quoting, folded scalars and comments); every
problem is a :class:`FrontMatterError` carrying the file's line, so a caller can name it.
"""

from __future__ import annotations

from dataclasses import dataclass

DELIMITER = "---"


class FrontMatterError(ValueError):
    def __init__(self, line: int, text: str):
        super().__init__(text)
        self.line = line
        self.text = text


@dataclass(frozen=True)
class FrontMatter:
    fields: dict
    body: str
    body_line: int  # the body's first line in the file, from 1
    key_lines: dict[str, int]  # the line of each top-level key, from 1


def read_front_matter(text: str) -> FrontMatter:
    """The front matter and body of ``text``; raises :class:`FrontMatterError`."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != DELIMITER:
        raise FrontMatterError(1, "it does not start with front matter (a --- line, then name: and description:, "
                                  "then a --- line)")
    for index in range(1, len(lines)):
        if lines[index].strip() == DELIMITER:
            return _parsed("".join(lines[1:index]), "".join(lines[index + 1:]), index + 2)
    raise FrontMatterError(1, "the front matter opened here is never closed by a --- line")


def _parsed(front: str, body: str, body_line: int) -> FrontMatter:
    import yaml  # here, not with the module: a start-up with no skill or agent file never needs it

    try:
        node = yaml.compose(front, Loader=yaml.SafeLoader)
        fields = yaml.safe_load(front)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        # The YAML starts on the file's second line; marks count from 0.
        line = mark.line + 2 if mark is not None else 2
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        hint = " (quote a value that holds \": \")" if "mapping values are not allowed" in problem else ""
        raise FrontMatterError(line, f"the front matter is not valid YAML: {problem}{hint}") from None
    if not isinstance(fields, dict) or not isinstance(node, yaml.MappingNode):
        raise FrontMatterError(2, "the front matter must be key: value lines")
    key_lines = {key.value: key.start_mark.line + 2 for key, _ in node.value if isinstance(key, yaml.ScalarNode)}
    return FrontMatter(fields, body, body_line, key_lines)
