"""The fast Markdown renderer: Rich's layout and styles for the blocks it accepts, None otherwise."""

import io
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from pygments.token import Token
from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment
from rich.syntax import Syntax

from mini_letta.repl.markdown_fast import CODE_THEME, CodeHighlighter, code_lines, render_markdown

WIDTH = 60


def _console() -> Console:
    return Console(
        file=io.StringIO(), force_terminal=True, color_system="truecolor", width=WIDTH, height=40
    )


_LINK_ID = re.compile(r"\x1b\]8;id=\d+;")


def _ansi(lines: list[list[Segment]]) -> str:
    """Terminal output of the lines, adjacent same-style segments merged; link ids blanked."""
    console = _console()
    for line in lines:
        console.print(_Line(list(Segment.simplify(line))), end="")
    return _LINK_ID.sub("\x1b]8;id=;", console.file.getvalue())


class _Line:
    def __init__(self, segments: list[Segment]) -> None:
        self.segments = segments

    def __rich_console__(self, console, options):
        yield from self.segments
        yield Segment.line()


def _rich(text: str) -> list[list[Segment]]:
    console = _console()
    return console.render_lines(Markdown(text), console.options, pad=False)


def _styled_chars(lines: list[list[Segment]]) -> list[list[tuple[str, object]]]:
    """Each line as (character, style) pairs, trailing unstyled spaces dropped."""
    out = []
    for line in lines:
        chars = [(char, segment.style or None) for segment in line for char in segment.text]
        while chars and chars[-1][0] == " ":
            chars.pop()
        out.append(chars)
    return out


def _same_as_rich(text: str) -> bool:
    fast = render_markdown(text, _console())
    assert fast is not None, f"fell back on {text!r}"
    return _styled_chars(fast) == _styled_chars(_rich(text))


SUPPORTED = [
    "Intro paragraph with **bold**, `code` and a [link](https://example.com).\n"
    "It continues on a second source line, long enough to wrap at sixty columns.",
    "# Title with *emphasis*",
    "## Step 2: the `budget()` call",
    "###### Smallest heading ##",
    "- first\n- second\n  continued\n- third",
    "- outer\n  - inner one\n  - inner two\n- outer again",
    "* star bullets\n* work too",
    "1. one\n2. two\n3. three",
    "1. loose one\n\n2. loose two\n   with more\n\n3. loose three",
    "7. starts at seven\n8. eight\n9. nine\n10. ten",
    "Intro line:\n- a list right after\n- without a blank line",
    "> a quote\n> that wraps across a line and goes on for long enough to wrap twice",
    "> quoted\n>\n> - with a list",
    "---\n\nAfter the rule.",
    "Text with a hard  \nbreak.",
    "A *b **c** d* e and **`code` in bold** and snake_case_names.",
    "```python\ndef add(x):\n    return x + 1\n```",
    "```\nno language\n```",
    "- item\n\n  ```python\n  inside()\n  ```\n- next",
    "Paragraph one.\n\n## Heading\n\nParagraph two.",
]


def test_supported_blocks_match_rich_character_and_style():
    for text in SUPPORTED:
        if "```" in text:
            # Code colours come from a different highlighter; the characters must match.
            assert _characters(render_markdown(text, _console())) == _characters(_rich(text)), text
        else:
            assert _same_as_rich(text), text


def test_text_blocks_produce_the_same_terminal_output_as_rich():
    text = "\n\n".join(block for block in SUPPORTED if "```" not in block and "[" not in block)
    fast = render_markdown(text, _console())
    assert fast is not None
    assert _ansi(fast) == _ansi(_rich(text))


UNSUPPORTED = [
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "<div>html</div>",
    "Setext heading\n==============",
    "Setext two\n---",
    "Fish &amp; chips",
    "An escaped \\*star\\*",
    "A [reference][ref] link",
    "[ref]: https://example.com",
    "_underscore emphasis_",
    "    indented code",
    "~~struck~~",
    "![image](x.png)",
    "Unclosed **bold",
    "> quote\nlazy continuation",
    "-\n  empty item",
    "Autolink <https://example.com>",
]


def test_constructs_it_does_not_reproduce_are_left_to_rich():
    for text in UNSUPPORTED:
        assert render_markdown(text, _console()) is None, text


_PARTS = st.sampled_from(
    ["word", "two words", " ", "  ", "    ", "\t", "\n", "  \n", "\n\n", "*", "**", "`", "_",
     "x_y", "(", ")", ".", "[", "]", "(u)", "!", "#", "`code`", "**b**", "*i*", "[t](http://u.v)",
     "# ", "- ", "+ ", "1. ", "2) ", "10. ", "> ", "---", "```", "```py\n"]
)


def _characters(lines):
    return [[char for char, _ in line] for line in _styled_chars(lines)]


@settings(max_examples=300, deadline=None)
@given(st.lists(_PARTS, min_size=1, max_size=16).map("".join))
def test_any_text_it_accepts_renders_as_rich_does(text):
    """Fuzzes block and inline structure together; code colours are the one allowed difference."""
    fast = render_markdown(text, _console())
    if fast is not None:
        if "```" in text:
            assert _characters(fast) == _characters(_rich(text))
        else:
            assert _styled_chars(fast) == _styled_chars(_rich(text))


def _segment_style(lines, text):
    for line in lines:
        for segment in line:
            if segment.text == text:
                return segment.style
    raise AssertionError(f"{text!r} not found")


def test_code_is_coloured_with_the_monokai_token_colours():
    theme = Syntax.get_theme(CODE_THEME)
    lines = code_lines(
        CodeHighlighter("python"),
        ["def run(x):", "    return 'done'  # finished", "value = 42"],
        WIDTH,
        top=True,
        bottom=True,
    )
    assert _segment_style(lines, "return").color == theme.get_style_for_token(Token.Keyword).color
    assert _segment_style(lines, "run").color == theme.get_style_for_token(Token.Name.Function).color
    assert _segment_style(lines, "'done'").color == theme.get_style_for_token(Token.String).color
    assert _segment_style(lines, "# finished").color == theme.get_style_for_token(Token.Comment).color
    assert _segment_style(lines, "42").color == theme.get_style_for_token(Token.Number).color
    background = theme.get_background_style().bgcolor
    assert all(segment.style.bgcolor == background for line in lines for segment in line)
    assert all(sum(len(s.text) for s in line) == WIDTH for line in lines)


def test_a_string_opened_on_one_line_stays_a_string_on_the_next():
    highlighter = CodeHighlighter("python")
    string = Syntax.get_theme(CODE_THEME).get_style_for_token(Token.String).color
    first = code_lines(highlighter, ['doc = """Starts here'], WIDTH, top=True, bottom=False)
    # A later call continues the state, as when a long fence is printed in pieces.
    later = code_lines(highlighter, ["return inside", 'ends"""', "return x"], WIDTH, top=False, bottom=True)
    assert _segment_style(first, '"""Starts here').color == string
    assert _segment_style(later, "return inside").color == string
    assert _segment_style(later, "return").color != string


def test_unknown_language_is_plain_and_pygments_languages_are_coloured():
    plain = code_lines(CodeHighlighter("no-such-language"), ["let x = 1 -- hi"], WIDTH, top=False, bottom=False)
    assert len({segment.style.color for segment in plain[0] if segment.text.strip()}) == 1
    haskell = code_lines(CodeHighlighter("haskell"), ["main = putStrLn \"hi\" -- hi"], WIDTH, top=False, bottom=False)
    assert len({segment.style for segment in haskell[0]}) > 2


def test_long_and_wide_code_lines_wrap_as_rich_does():
    code = "x = '" + "wide 漢字 " * 12 + "'\nshort = 1"
    text = f"```python\n{code}\n```"
    assert _characters(render_markdown(text, _console())) == _characters(_rich(text))
