"""A fast renderer for the Markdown that model replies are made of, laid out as Rich's Markdown.

Rich's ``Markdown`` parses with markdown-it, builds renderables, and highlights code with
Pygments; for a long reply that is about ten times the cost of printing the text. This module
renders the common block kinds straight to lines of Rich segments: paragraphs with inline
``code``, ``**bold**``, ``*italic*`` and ``[links](url)``; ATX headings; bullet and numbered lists
(nested by indentation); block quotes; horizontal rules; fenced code. ``render_markdown`` returns
``None`` for any text it does not recognise with certainty (tables, HTML, entities, backslash
escapes, reference links, setext headings, ``_`` emphasis, indented code, lazy quote lines...), and
the caller renders that block with Rich's ``Markdown`` instead.

Text blocks come out as Rich lays them out: same wrapping, indentation, bullets and styles. Code is
coloured by a small line-based highlighter (keywords, strings, numbers, comments, operators,
definitions) with the Monokai theme's token colours, on Rich's code block padding and background;
a language it does not know is coloured by Pygments if Pygments knows it, and shown plain if not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import Token, _TokenType
from pygments.util import ClassNotFound
from rich.console import Console
from rich.rule import Rule
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text

Lines = list[list[Segment]]

CODE_THEME = "monokai"  # Rich's Markdown default


class Unsupported(Exception):
    """The text holds Markdown this renderer does not reproduce exactly."""


# Block structure

_BLANK = re.compile(r"^[ \t]*$")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_QUOTE = re.compile(r"^ {0,3}> ?")
_ITEM = re.compile(r"^( {0,3})([-+*]|(\d{1,9})[.)])(?:( {1,4})(.*))?$")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_TABLE_DELIMITER = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-*:?[ \t]*)*$")
# Lines that start constructs this renderer leaves to Rich: HTML blocks, link reference
# definitions, indented code at the top of a block, tabs (whose column arithmetic differs).
_FOREIGN_START = re.compile(r"^ {0,3}(?:<|\[[^\]]*\]:)|^ {4}|\t")


@dataclass
class _Paragraph:
    lines: list[str]


@dataclass
class _Heading:
    level: int
    text: str


@dataclass
class _Rule:
    pass


@dataclass
class _Code:
    lexer: str
    lines: list[str]


@dataclass
class _Quote:
    blocks: list[object]


@dataclass
class _List:
    ordered: bool
    marker: str  # the bullet character or the number's delimiter; a change starts a new list
    start: int
    items: list[list[object]] = field(default_factory=list)


def _interrupts_paragraph(line: str) -> bool:
    if _HEADING.match(line) or _RULE.match(line) or _FENCE.match(line) or _QUOTE.match(line):
        return True
    item = _ITEM.match(line)
    # CommonMark: only a non-empty bullet or a numbered item starting at 1 interrupts a paragraph.
    return bool(item and item.group(5) and item.group(5).strip() and item.group(3) in (None, "1"))


def _starts_block(line: str) -> bool:
    """Whether the line starts something other than a paragraph a lazy line could continue."""
    return bool(_interrupts_paragraph(line) or _ITEM.match(line))


def _parse_blocks(lines: list[str]) -> list[object]:
    blocks: list[object] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _BLANK.match(line):
            index += 1
            continue
        if _FOREIGN_START.search(line):
            raise Unsupported
        if fence := _FENCE.match(line):
            index = _parse_fence(lines, index, fence, blocks)
        elif heading := _HEADING.match(line):
            if not heading.group(2) or not heading.group(2).strip("#"):
                raise Unsupported  # Rich lays out an empty heading differently
            blocks.append(_Heading(len(heading.group(1)), (heading.group(2) or "").strip()))
            index += 1
        elif _RULE.match(line):
            blocks.append(_Rule())
            index += 1
        elif _QUOTE.match(line):
            quoted = []
            while index < len(lines) and (quote := _QUOTE.match(lines[index])):
                quoted.append(lines[index][quote.end() :])
                index += 1
            if index < len(lines) and not _BLANK.match(lines[index]):
                raise Unsupported  # a lazy continuation line
            inner = _parse_blocks(quoted)
            if not inner:
                raise Unsupported  # Rich lays out an empty quote differently
            blocks.append(_Quote(inner))
        elif item := _ITEM.match(line):
            index = _parse_list_item(lines, index, item, blocks)
        else:
            paragraph = [line]
            index += 1
            while index < len(lines) and not _BLANK.match(lines[index]):
                line = lines[index]
                if _SETEXT.match(line) or _TABLE_DELIMITER.match(line):
                    raise Unsupported
                if _interrupts_paragraph(line):
                    break
                if _FOREIGN_START.search(line) and not line.startswith("    "):
                    raise Unsupported
                paragraph.append(line)
                index += 1
            blocks.append(_Paragraph(paragraph))
    return blocks


def _parse_fence(lines: list[str], index: int, fence: re.Match[str], blocks: list[object]) -> int:
    indent, marker, info = fence.groups()
    if indent or (marker[0] == "`" and "`" in info):
        raise Unsupported
    body = []
    index += 1
    while index < len(lines):
        closing = _FENCE.match(lines[index])
        if (
            closing
            and closing.group(2)[0] == marker[0]
            and len(closing.group(2)) >= len(marker)
            and not closing.group(3).strip()
        ):
            index += 1
            break
        body.append(lines[index])
        index += 1
    blocks.append(_Code(info.strip().partition(" ")[0] or "text", body))
    return index


def _parse_list_item(lines: list[str], index: int, item: re.Match[str], blocks: list[object]) -> int:
    indent, marker, number, spacing, content = item.groups()
    if not spacing or not content.strip() or content[0] in " \t":
        raise Unsupported  # empty items and items starting with indented code
    ordered = number is not None
    delimiter = marker[-1]
    current = blocks[-1] if blocks else None
    if not (isinstance(current, _List) and current.ordered == ordered and current.marker == delimiter):
        current = _List(ordered, delimiter, int(number) if ordered else 1)
        blocks.append(current)
    width = len(indent) + len(marker) + len(spacing)
    body = [content]
    index += 1
    in_paragraph = not _starts_block(content)
    while index < len(lines):
        line = lines[index]
        if _BLANK.match(line):
            body.append("")
            in_paragraph = False
        elif len(line) - len(line.lstrip(" ")) >= width:
            body.append(line[width:])
            in_paragraph = not _starts_block(line[width:])
        elif in_paragraph and not _interrupts_paragraph(line) and not _ITEM.match(line):
            if _SETEXT.match(line) or _FOREIGN_START.search(line):
                raise Unsupported
            body.append(line.lstrip())  # a lazy continuation of the item's paragraph
        elif not _BLANK.match(body[-1]) and not _starts_block(line):
            raise Unsupported  # a lazy line after a nested block: which paragraph it joins varies
        else:
            break
        index += 1
    current.items.append(_parse_blocks(body))
    return index


# Inline content

_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_LINK = re.compile(r"\[([^\[\]]+)\]\(([^\s()<>]+)\)")
_LINE_END = re.compile(r" *\n")
_PLACEHOLDER = "\ue000"  # stands for a code span while emphasis is matched; counts as punctuation
_DELIMITER = re.compile(r"(?<!\*)(\*\*|\*)(?!\*)")
# Characters whose meaning depends on rules not reproduced here.
_FOREIGN_INLINE = re.compile(r"[\\<\[\]`]|&(?:#\d+|#[xX][0-9a-fA-F]+|\w+);|~~|!\[|\*{3}|(?<!\w)_|_(?!\w)")
_PUNCTUATION = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" + _PLACEHOLDER)


def _flanking(text: str, start: int, end: int) -> tuple[bool, bool]:
    """Whether the delimiter run text[start:end] can open and can close emphasis (CommonMark)."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    left = not after.isspace() and (
        after not in _PUNCTUATION or before.isspace() or before in _PUNCTUATION
    )
    right = not before.isspace() and (
        before not in _PUNCTUATION or after.isspace() or after in _PUNCTUATION
    )
    return left, right


@dataclass
class _InlineStyles:
    base: Style
    strong: Style
    em: Style
    code: Style
    link: Style


def _inline_styles(console: Console, base: Style) -> _InlineStyles:
    def style(name: str) -> Style:
        return console.get_style(name, default="none")

    return _InlineStyles(
        base=base,
        strong=style("markdown.strong"),
        em=style("markdown.em"),
        code=style("markdown.code"),
        link=style("markdown.link_url"),
    )


def _inline(source: str, styles: _InlineStyles) -> Text:
    """Inline Markdown as the Text Rich's Markdown builds from it."""
    codes: list[str] = []

    def hold_code(match: re.Match[str]) -> str:
        content = match.group(2)
        if "\n" in content:
            raise Unsupported  # markdown-it keeps a continuation line's indent inside code
        if content.startswith(" ") and content.endswith(" ") and content.strip():
            content = content[1:-1]
        codes.append(content)
        return _PLACEHOLDER

    if _PLACEHOLDER in source or "![" in source:
        raise Unsupported
    held = _LINE_END.sub(_breaks, _CODE_SPAN.sub(hold_code, source))
    text = Text(justify="left")
    _emphasis(held, 0, len(held), styles.base, text, codes, styles)
    return text


def _emphasis(
    held: str,
    start: int,
    end: int,
    style: Style,
    text: Text,
    codes: list[str],
    styles: _InlineStyles,
) -> None:
    """Append held[start:end] to text, matching ``*``/``**`` pairs and links by CommonMark rules."""
    position = start
    while position < end:
        opener = _DELIMITER.search(held, position, end)
        link = _LINK.search(held, position, end)
        if link and (opener is None or link.start() < opener.start()):
            _plain(held[position : link.start()], style, text, codes, styles)
            inner = style + styles.link + Style(link=link.group(2))
            _emphasis(held, link.start(1), link.end(1), inner, text, codes, styles)
            position = link.end()
            continue
        if opener is None:
            _plain(held[position:end], style, text, codes, styles)
            return
        run = opener.group(1)
        can_open, _ = _flanking(held, opener.start(), opener.end())
        if not can_open:
            raise Unsupported
        closer = None
        for candidate in _DELIMITER.finditer(held, opener.end(), end):
            if candidate.group(1) == run and _flanking(held, candidate.start(), candidate.end())[1]:
                closer = candidate
                break
        if closer is None or (link and link.start() < closer.start()):
            raise Unsupported
        _plain(held[position : opener.start()], style, text, codes, styles)
        inner = style + (styles.strong if len(run) == 2 else styles.em)
        _emphasis(held, opener.end(), closer.start(), inner, text, codes, styles)
        position = closer.end()


def _plain(part: str, style: Style, text: Text, codes: list[str], styles: _InlineStyles) -> None:
    pieces = part.split(_PLACEHOLDER)
    for number, piece in enumerate(pieces):
        if piece:
            if _FOREIGN_INLINE.search(piece) or "*" in piece:
                raise Unsupported
            text.append(piece, style)
        if number < len(pieces) - 1:
            text.append(codes.pop(0), style + styles.code)


def _paragraph_source(lines: list[str]) -> str:
    """A paragraph's lines as its inline content: leading spaces and the final trailing ones go."""
    return "\n".join(line.lstrip(" ") for line in lines).rstrip(" ")


def _breaks(match: re.Match[str]) -> str:
    # Two trailing spaces make a hard break, which Rich keeps as a newline; else a space.
    return "\n" if len(match.group()) >= 3 else " "


# Code


@lru_cache(maxsize=1)
def _theme_styles() -> tuple[Style, dict[_TokenType, Style]]:
    theme = Syntax.get_theme(CODE_THEME)
    background = theme.get_background_style()
    cache: dict[_TokenType, Style] = {}
    for token in (
        Token.Text,
        Token.Keyword,
        Token.Keyword.Constant,
        Token.Keyword.Namespace,
        Token.Operator,
        Token.Operator.Word,
        Token.Name,
        Token.Name.Builtin,
        Token.Name.Function,
        Token.Name.Class,
        Token.Name.Decorator,
        Token.Literal.String,
        Token.Literal.Number,
        Token.Comment,
        Token.Punctuation,
    ):
        cache[token] = background + theme.get_style_for_token(token)
    return background, cache


@dataclass(frozen=True)
class _Language:
    keywords: frozenset[str]
    constants: frozenset[str]
    word_operators: frozenset[str]
    namespace: frozenset[str]
    line_comment: str  # a regex
    block_comments: tuple[tuple[str, str], ...]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PYTHON = _Language(
    keywords=_words(
        "def class return if elif else for while try except finally with as pass break "
        "continue raise yield lambda global nonlocal assert del async await match case"
    ),
    constants=_words("True False None"),
    word_operators=_words("and or not in is"),
    namespace=_words("import from"),
    line_comment=r"#.*",
    block_comments=(('"""', '"""'), ("'''", "'''")),
)
_C_LIKE = _Language(
    keywords=_words(
        "function return if else for while do switch case break continue default try catch "
        "finally throw new delete class struct enum interface type const let var static public "
        "private protected void int long char float double bool boolean string fn pub mut impl "
        "trait use mod match loop func go defer chan select package range async await yield of "
        "extends implements typeof instanceof this self super where unsafe move ref as"
    ),
    constants=_words("true false null nil None undefined NULL"),
    word_operators=frozenset(),
    namespace=_words("import export from package using namespace include"),
    line_comment=r"//.*",
    block_comments=(("/*", "*/"),),
)
_SHELL = _Language(
    keywords=_words(
        "if then else elif fi for while until do done case esac function in return export "
        "local set unset source"
    ),
    constants=frozenset(),
    word_operators=frozenset(),
    namespace=frozenset(),
    line_comment=r"(?<![^\s])#.*",
    block_comments=(),
)
_DATA = _Language(
    keywords=frozenset(),
    constants=_words("true false null"),
    word_operators=frozenset(),
    namespace=frozenset(),
    line_comment=r"#.*",
    block_comments=(),
)
_LANGUAGES = {
    **dict.fromkeys(("python", "py", "python3", "py3"), _PYTHON),
    **dict.fromkeys(
        (
            "javascript", "js", "jsx", "typescript", "ts", "tsx", "java", "c", "cpp", "c++",
            "h", "hpp", "cs", "csharp", "go", "golang", "rust", "rs", "kotlin", "swift",
            "scala", "php", "dart",
        ),
        _C_LIKE,
    ),
    **dict.fromkeys(("bash", "sh", "shell", "zsh", "console", "shell-session"), _SHELL),
    **dict.fromkeys(("json", "yaml", "yml", "toml", "ini"), _DATA),
}


@lru_cache(maxsize=32)
def _token_pattern(language: _Language) -> re.Pattern[str]:
    return re.compile(
        "|".join(
            (
                rf"(?P<comment>{language.line_comment})",
                r"(?P<string>\"(?:[^\"\\]|\\.)*\"?|'(?:[^'\\]|\\.)*'?|`[^`]*`?)",
                r"(?P<number>\b\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?\b|\b0[xX][0-9a-fA-F]+\b)",
                r"(?P<decorator>@[\w.]+)",
                r"(?P<word>[A-Za-z_]\w*)",
                r"(?P<operator>[-+*/%=<>!&|^~]+)",
            )
        )
    )


@lru_cache(maxsize=32)
def _pygments_lexer(name: str) -> Lexer | None:
    if name in ("text", "plain", "txt", ""):
        return None
    try:
        return get_lexer_by_name(name)
    except ClassNotFound:
        return None


@lru_cache(maxsize=4096)
def _highlight_line(
    language: _Language, block_end: str | None, line: str
) -> tuple[tuple[Segment, ...], str | None]:
    """One line's segments and the block left open after it; cached, as a live window redraws
    the same few lines many times."""
    highlighter = CodeHighlighter("text")
    highlighter.language = language
    highlighter._block_end = block_end
    segments = highlighter._line(line, _theme_styles()[1])
    return tuple(segments), highlighter._block_end


class CodeHighlighter:
    """Colours code line by line; multi-line strings and comments carry over to later lines."""

    def __init__(self, lexer: str) -> None:
        self.language = _LANGUAGES.get(lexer.lower())
        self._pygments = None if self.language else _pygments_lexer(lexer.lower())
        self._block_end: str | None = None  # the closing of a comment or string left open

    def lines(self, code_lines: list[str]) -> list[list[Segment]]:
        """Styled segments for each line (tabs expanded), without padding."""
        _, styles = _theme_styles()
        if self.language is not None:
            out = []
            for line in code_lines:
                segments, self._block_end = _highlight_line(
                    self.language, self._block_end, line.expandtabs(4)
                )
                out.append(list(segments))
            return out
        if self._pygments is not None:
            return self._pygments_lines(code_lines, styles)
        plain = styles[Token.Text]
        return [[Segment(line.expandtabs(4), plain)] if line else [] for line in code_lines]

    def _pygments_lines(self, code_lines: list[str], styles: dict) -> Lines:
        background, _ = _theme_styles()
        theme = Syntax.get_theme(CODE_THEME)
        out: Lines = [[]]
        code = "\n".join(line.expandtabs(4) for line in code_lines) + "\n"
        for token_type, value in self._pygments.get_tokens(code):
            style = styles.get(token_type)
            if style is None:
                style = styles[token_type] = background + theme.get_style_for_token(token_type)
            for number, part in enumerate(value.split("\n")):
                if number:
                    out.append([])
                if part:
                    out[-1].append(Segment(part, style))
        return out[: len(code_lines)]

    def _line(self, line: str, styles: dict[_TokenType, Style]) -> list[Segment]:
        language = self.language
        out: list[Segment] = []
        position = 0
        if self._block_end is not None:
            end = line.find(self._block_end)
            if end < 0:
                return [Segment(line, self._block_style(styles))] if line else []
            position = end + len(self._block_end)
            out.append(Segment(line[:position], self._block_style(styles)))
            self._block_end = None
        plain = styles[Token.Text]
        pattern = _token_pattern(language)
        previous_word = ""
        while position < len(line):
            opened = self._opens_block(line, position)
            match = pattern.search(line, position)
            if opened is not None and (match is None or opened[0] <= match.start()):
                start, opening, closing = opened
                if start > position:
                    out.append(Segment(line[position:start], plain))
                end = line.find(closing, start + len(opening))
                self._block_end = closing
                stop = len(line) if end < 0 else end + len(closing)
                out.append(Segment(line[start:stop], self._block_style(styles)))
                if end >= 0:
                    self._block_end = None
                position = stop
                continue
            if match is None:
                out.append(Segment(line[position:], plain))
                break
            if match.start() > position:
                out.append(Segment(line[position : match.start()], plain))
            kind = match.lastgroup
            value = match.group()
            if kind == "word":
                token = self._word_token(value, previous_word)
                previous_word = value
            else:
                token = {
                    "comment": Token.Comment,
                    "string": Token.Literal.String,
                    "number": Token.Literal.Number,
                    "decorator": Token.Name.Decorator,
                    "operator": Token.Operator,
                }[kind]
            out.append(Segment(value, styles[token]))
            position = match.end()
        return out

    def _block_style(self, styles: dict[_TokenType, Style]) -> Style:
        comment = self._block_end in ("*/",)
        return styles[Token.Comment if comment else Token.Literal.String]

    def _opens_block(self, line: str, position: int) -> tuple[int, str, str] | None:
        best = None
        for opening, closing in self.language.block_comments:
            start = line.find(opening, position)
            if start >= 0 and (best is None or start < best[0]):
                best = (start, opening, closing)
        if best is not None:
            # An opening inside a one-line string or comment found first does not count.
            match = _token_pattern(self.language).search(line, position)
            if match and match.start() < best[0] and match.lastgroup in ("string", "comment"):
                if match.end() > best[0]:
                    return None
        return best

    def _word_token(self, word: str, previous: str) -> _TokenType:
        language = self.language
        if previous in ("def", "fn", "func", "function"):
            return Token.Name.Function
        if previous in ("class", "struct", "enum", "trait", "interface"):
            return Token.Name.Class
        if word in language.keywords:
            return Token.Keyword
        if word in language.constants:
            return Token.Keyword.Constant
        if word in language.word_operators:
            return Token.Operator.Word
        if word in language.namespace:
            return Token.Keyword.Namespace
        return Token.Name


def code_lines(
    highlighter: CodeHighlighter,
    code_lines_: list[str],
    width: int,
    *,
    top: bool,
    bottom: bool,
) -> Lines:
    """Lines laid out as Rich's code block (Syntax with padding 1 and word wrap) lays them out."""
    background, _ = _theme_styles()
    pad = Segment(" ", background)
    inner = max(1, width - 2)
    out: Lines = []
    if top:
        out.append([Segment(" " * width, background)])
    for segments in highlighter.lines(code_lines_):
        length = sum(len(segment.text) for segment in segments)
        if length <= inner and all(segment.text.isascii() for segment in segments):
            filler = Segment(" " * (inner - length), background)
            out.append([pad, *segments, filler, pad])
        else:
            out.extend([pad, *line, pad] for line in _wrap_code(segments, inner, background))
    if bottom:
        out.append([Segment(" " * width, background)])
    return out


def _wrap_code(segments: list[Segment], width: int, background: Style) -> Lines:
    text = Text(style=background, end="")
    for segment in segments:
        text.append(segment.text, segment.style)
    console = _measuring_console(width)
    return [
        Segment.adjust_line_length(list(line.render(console)), width, background)
        for line in text.wrap(console, width, justify="default", overflow="fold")
    ]


@lru_cache(maxsize=8)
def _measuring_console(width: int) -> Console:
    return Console(width=width, color_system=None, force_terminal=False)


# Text blocks


def render_markdown(text: str, console: Console, width: int | None = None) -> Lines | None:
    """Render ``text`` as Rich's ``Markdown(text)`` would, or return None if it cannot."""
    try:
        blocks = _parse_blocks(text.split("\n"))
    except Unsupported:
        return None
    width = width or console.width
    try:
        return _Renderer(console).top_level(blocks, width)
    except Unsupported:
        return None


class _Renderer:
    def __init__(self, console: Console) -> None:
        self.console = console

    def style(self, name: str) -> Style:
        return self.console.get_style(name, default="none")

    def top_level(self, blocks: list[object], width: int) -> Lines:
        blanks = []
        previous = None
        for block in blocks:
            # Rich puts an empty line before a top-level block when the last element it closed
            # asks for one: for a list or quote that is the last element inside it (all but a
            # rule ask), for any other block the previous top-level block (all but a rule ask).
            if isinstance(block, (_List, _Quote)):
                blank = _closes_with_flag(block)
            else:
                blank = previous is not None and not isinstance(previous, _Rule)
            blanks.append(blank)
            previous = block
        rendered: list[Lines] = []
        for block, blank in zip(blocks, blanks, strict=True):
            lines = self.block(block, width, Style.null())
            rendered.append([[], *lines] if blank else lines)
        return [line for lines in rendered for line in lines]

    def block(self, block: object, width: int, style: Style) -> Lines:
        if isinstance(block, _Paragraph):
            base = style + self.style("markdown.paragraph")
            text = _inline(_paragraph_source(block.lines), _inline_styles(self.console, base))
            return self.wrap(text, width, "left")
        if isinstance(block, _Heading):
            base = style + self.style(f"markdown.h{block.level}")
            text = _inline(block.text, _inline_styles(self.console, base))
            return self.wrap(text, width, "center" if block.level == 1 else "left")
        if isinstance(block, _Rule):
            return [*_rule(self.console, width), []]
        if isinstance(block, _Code):
            highlighter = CodeHighlighter(block.lexer)
            lines = block.lines
            while lines and not lines[-1].strip():
                lines = lines[:-1]  # Rich strips the code's trailing whitespace
            if not lines:
                lines = [""]  # Syntax shows an empty block as one empty line
            return code_lines(highlighter, lines, width, top=True, bottom=True)
        if isinstance(block, _Quote):
            quote_style = self.style("markdown.block_quote")
            inner = self.nested(block.blocks, width - 4, style + quote_style, quote_style)
            prefix = Segment("▌ ", quote_style)
            return [[prefix, *line] for line in inner]
        if isinstance(block, _List):
            return self.list(block, width, style)
        raise Unsupported

    def nested(self, blocks: list[object], width: int, style: Style, apply: Style) -> Lines:
        """Blocks inside a container: no blank lines between them, padded and styled as Rich does."""
        if width < 1:
            raise Unsupported
        out: Lines = []
        for block in blocks:
            lines = self.block(block, width, style)
            if isinstance(block, _Quote) and not apply:
                # Other blocks fill the width already; a quote leaves room for its marker.
                lines = [Segment.adjust_line_length(line, width) for line in lines]
            out.extend(lines)
        if not apply:
            return out
        return [
            Segment.adjust_line_length(list(Segment.apply_style(line, apply)), width, apply)
            for line in out
        ]

    def list(self, block: _List, width: int, style: Style) -> Lines:
        item_style = self.style("markdown.item")
        if block.ordered:
            last_number = block.start + len(block.items)
            marker_width = len(str(last_number)) + 2
            marker_style = self.style("markdown.item.number")
        else:
            marker_width = 3
            marker_style = self.style("markdown.item.bullet")
        padding = Segment(" " * marker_width, marker_style)
        rendered: list[Lines] = []
        for index in range(len(block.items)):
            if block.ordered:
                number = f"{block.start + index}".rjust(marker_width - 1) + " "
                marker = Segment(number, marker_style)
            else:
                marker = Segment(" • ", marker_style)
            lines = self.nested(
                block.items[index], width - marker_width, style + item_style, item_style
            )
            rendered.append([[marker if n == 0 else padding, *line] for n, line in enumerate(lines)])
        return [line for lines in rendered for line in lines]

    def wrap(self, text: Text, width: int, justify: str) -> Lines:
        console = self.console
        return [
            list(line.render(console))
            for line in text.wrap(console, width, justify=justify, overflow="fold")
        ]


def _closes_with_flag(block: object) -> bool:
    if isinstance(block, _List):
        return True
    return isinstance(block, _Quote) and not isinstance(block.blocks[-1], _Rule)


def _rule(console: Console, width: int) -> Lines:
    style = console.get_style("markdown.hr", default="none")
    return console.render_lines(
        Rule(style=style, characters="-"), console.options.update_width(width), pad=False
    )
