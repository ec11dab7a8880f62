"""MarkdownStream: streamed replies show the same text as one Markdown render, at linear cost."""

import io
import itertools
import re

import pytest
from pygments.token import Token
from rich.console import Console
from rich.markdown import Markdown
from rich.syntax import Syntax

from mini_letta.repl.markdown_stream import MarkdownStream

LONG_FENCE = "\n".join(
    ["```python"]
    + [f"    value_{n} = compute({n})  # line {n}" if n % 9 else "" for n in range(1, 61)]
    + ["```"]
)

REPLY = f"""# Plan

Intro paragraph with **bold**, `code` and a [link](https://example.com).
It continues on a second source line.

## Steps

- first item
- second item
  continued under the item
- third item

1. loose one

2. loose two
   with more

3. loose three

---

After the rule.

```python
def add(x):
    return x + 1
```
Right after a fence.
### Small heading
Right after a heading.

{LONG_FENCE}

Closing words.

> a quote
> that wraps

    indented code

    more indented code

Last line.
"""

FENCE_WITH_TRAPS = """Before.

```text
first

# not a heading

- not a list

last
```

After.
"""


def _console(terminal: bool) -> Console:
    return Console(
        file=io.StringIO(),
        force_terminal=terminal,
        color_system="truecolor" if terminal else None,
        width=80,
        height=40,
    )


def _ticking_clock(step: float = 0.01):
    ticks = itertools.count()
    return lambda: next(ticks) * step


_TOKEN = re.compile(
    r"\x1b\]8;[^\x1b]*\x1b\\|\x1b\[([\d;]*)([A-Za-z])|\x1b\[\?\d+[hl]|\r|\n|[^\x1b\r\n]+"
)


def _screen(output: str) -> list[str]:
    """What a terminal shows after ``output``: cursor moves and erases applied, styles dropped."""
    lines: list[list[str]] = [[]]
    row = col = 0
    for match in _TOKEN.finditer(output):
        token = match.group(0)
        if token == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append([])
        elif token == "\r":
            col = 0
        elif match.group(2) == "A":
            row = max(0, row - int(match.group(1) or 1))
        elif match.group(2) == "K":
            lines[row] = []
        elif not token.startswith("\x1b"):
            line = lines[row]
            line.extend(" " * (col - len(line)))
            line[col : col + len(token)] = token
            col += len(token)
    text = ["".join(line).rstrip() for line in lines]
    while text and not text[-1]:
        text.pop()
    return text


def _single_render(text: str, terminal: bool) -> list[str]:
    console = _console(terminal)
    console.print(Markdown(text))
    return _screen(console.file.getvalue())


def _stream(text: str, *, terminal: bool, step: int, **options) -> tuple[list[str], MarkdownStream]:
    console = _console(terminal)
    stream = MarkdownStream(console, **options)
    for start in range(0, len(text), step):
        stream.feed(text[start : start + step])
    stream.finish()
    return _screen(console.file.getvalue()), stream


def test_char_by_char_output_equals_a_single_render_without_a_terminal():
    screen, _ = _stream(REPLY, terminal=False, step=1, min_interval=0)
    assert screen == _single_render(REPLY, terminal=False)


def test_streamed_terminal_screen_equals_a_single_render():
    screen, _ = _stream(REPLY, terminal=True, step=3, clock=_ticking_clock())
    assert screen == _single_render(REPLY, terminal=True)


def test_whole_reply_in_one_chunk_equals_a_single_render():
    screen, _ = _stream(REPLY, terminal=True, step=len(REPLY))
    assert screen == _single_render(REPLY, terminal=True)


def test_long_fence_lines_appear_once_as_a_code_block():
    screen, stream = _stream(LONG_FENCE + "\n", terminal=True, step=2, clock=_ticking_clock())
    assert not any("```" in line for line in screen)
    for n in range(1, 61):
        if n % 9:
            assert sum(f"value_{n} = compute({n})" in line for line in screen) == 1
    # Rich pads a code block by one column: every code line is indented, unlike a paragraph.
    assert all(line.startswith(" ") for line in screen if "compute" in line)


def test_blank_lines_inside_a_fence_never_split_it():
    screen, _ = _stream(FENCE_WITH_TRAPS, terminal=False, step=1, min_interval=0)
    assert screen == _single_render(FENCE_WITH_TRAPS, terminal=False)
    assert not any("```" in line for line in screen)


def test_live_window_never_exceeds_live_lines():
    console = _console(True)
    stream = MarkdownStream(console, live_lines=4, clock=_ticking_clock())
    for start in range(0, len(REPLY), 3):
        stream.feed(REPLY[start : start + 3])
    stream.finish()
    # Before each repaint Rich erases the previous frame: one erase, then (height - 1) times
    # cursor-up-and-erase.
    repaints = re.findall(r"\r\x1b\[2K((?:\x1b\[1A\x1b\[2K)*)", console.file.getvalue())
    assert len(repaints) > 10, "the live window was hardly drawn"
    assert max(run.count("\x1b[1A") + 1 for run in repaints) == 4


def test_without_a_terminal_no_live_window_is_drawn():
    console = _console(False)
    stream = MarkdownStream(console, min_interval=0)
    for char in REPLY:
        stream.feed(char)
    stream.finish()
    assert "\x1b" not in console.file.getvalue()


def _sections(count: int) -> str:
    section = (
        "## Section\n\nA paragraph of prose that goes on for a while, as replies do.\n"
        "It has a second line.\n\n- one\n- two\n- three\n\n```python\n"
        + "\n".join(f"x_{n} = {n}" for n in range(12))
        + "\n```\n\n"
    )
    return section * count


def test_rendered_characters_grow_linearly_with_the_reply():
    small, large = _sections(15), _sections(30)
    _, small_stream = _stream(small, terminal=True, step=6, clock=_ticking_clock())
    _, large_stream = _stream(large, terminal=True, step=6, clock=_ticking_clock())
    # Re-rendering the whole reply each frame would quadruple the work when the reply doubles.
    assert large_stream.rendered_chars / small_stream.rendered_chars < 2.4
    assert large_stream.rendered_chars < 20 * len(large)
    assert large_stream.renders >= len(large) // 6 // 5, "the live window was hardly drawn"


def test_throttle_limits_renders_to_the_frame_rate():
    _, stream = _stream(_sections(5), terminal=True, step=1, min_interval=0.05, clock=_ticking_clock(0.01))
    chunks = len(_sections(5))
    assert stream.renders < chunks / 5 + 30


def test_finish_is_idempotent_and_later_chunks_are_ignored():
    console = _console(True)
    stream = MarkdownStream(console, clock=_ticking_clock())
    stream.feed("# Title\n\nSome text.\n")
    stream.finish()
    shown = console.file.getvalue()
    stream.finish()
    stream.feed("more text")
    stream.abort()
    assert console.file.getvalue() == shown
    assert _screen(shown) == _single_render("# Title\n\nSome text.\n", terminal=True)


def test_abort_after_a_partial_reply_keeps_everything_received():
    partial = REPLY[: REPLY.index("Closing words.") + 5]
    console = _console(True)
    stream = MarkdownStream(console, clock=_ticking_clock())
    for start in range(0, len(partial), 3):
        stream.feed(partial[start : start + 3])
    stream.abort()
    console.print("next prompt")
    screen = _screen(console.file.getvalue())
    assert screen[:-1] == _single_render(partial, terminal=True)
    assert screen[-1] == "next prompt"


def test_interrupt_inside_the_context_manager_aborts_and_keeps_the_text():
    console = _console(True)
    with pytest.raises(KeyboardInterrupt):
        with MarkdownStream(console, clock=_ticking_clock()) as stream:
            for char in "- one\n- two\n- thr":
                stream.feed(char)
            raise KeyboardInterrupt
    assert _screen(console.file.getvalue()) == _single_render("- one\n- two\n- thr", terminal=True)


def test_common_reply_blocks_skip_rich_markdown_and_odd_ones_use_it():
    # Without a terminal only settled blocks are rendered: a live frame's half-received line
    # ("- " or "#") is rightly left to Rich.
    _, stream = _stream(_sections(5), terminal=False, step=7, min_interval=0)
    assert stream.renders > 10
    assert stream.fallback_renders == 0
    table = "Intro.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nAfter.\n"
    screen, stream = _stream(table, terminal=False, step=len(table))
    assert stream.fallback_renders == 1
    assert screen == _single_render(table, terminal=False)


def test_a_string_spanning_fence_pieces_keeps_its_colour():
    code = ["```python", 'TEXT = """'] + [f"inside the string, line {n}" for n in range(60)]
    reply = "\n".join(code + ['"""', "```", ""])
    console = _console(True)
    stream = MarkdownStream(console, clock=_ticking_clock())
    for start in range(0, len(reply), 4):
        stream.feed(reply[start : start + 4])
    stream.finish()
    string = Syntax.get_theme("monokai").get_style_for_token(Token.String).color.triplet
    colour = "\x1b[38;2;{};{};{};".format(*string)
    printed = console.file.getvalue()
    # The last copy is the one printed to scrollback, in a piece well after the one with the
    # opening quotes; the live window's transient copies come before it.
    last = printed.rindex("inside the string, line 59")
    assert printed[printed.rindex("\x1b[", 0, last) : last].startswith(colour)
