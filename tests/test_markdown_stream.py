"""MarkdownStream: streamed replies show the same text as one Markdown render, at linear cost."""

import io
import itertools
import re
import time

import pytest
from pygments.token import Token
from rich.cells import get_character_cell_size
from rich.console import Console
from rich.syntax import Syntax

from mini_letta.repl.markdown_links import LinkTargetMarkdown
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


def _console(terminal: bool, height: int = 40) -> Console:
    return Console(
        file=io.StringIO(),
        force_terminal=terminal,
        color_system="truecolor" if terminal else None,
        width=WIDTH,
        height=height,
    )


def _ticking_clock(step: float = 0.01):
    ticks = itertools.count()
    return lambda: next(ticks) * step


_TOKEN = re.compile(
    r"\x1b\]8;[^\x1b]*\x1b\\|\x1b\[([\d;]*)([A-Za-z])|\x1b\[\?\d+[hl]|\r|\n|[^\x1b\r\n]+"
)
WIDTH = 80


def _screen(output: str, width: int = WIDTH, height: int = 40) -> list[str]:
    """What a terminal shows after ``output`` (scrollback and screen): cursor moves, erases and
    autowrap applied, styles dropped. A character that would pass the last column goes to the
    next row (a full row keeps the cursor on it until the next character); a wide character
    takes two cells; the cursor cannot move up past the screen's top row into scrollback."""
    lines: list[list[str]] = [[]]
    row = col = top = 0
    for match in _TOKEN.finditer(output):
        token = match.group(0)
        if token == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append([])
        elif token == "\r":
            col = 0
        elif match.group(2) == "A":
            row = max(top, row - int(match.group(1) or 1))
            col = min(col, width - 1)
        elif match.group(2) == "C":
            col = min(col + int(match.group(1) or 1), width - 1)
        elif match.group(2) == "K":
            lines[row] = []
        elif match.group(2) == "J":
            del lines[row][col:]
            del lines[row + 1 :]
        elif not token.startswith("\x1b"):
            for char in token:
                cells = get_character_cell_size(char)
                if cells and col + cells > width:
                    row, col = row + 1, 0
                    if row == len(lines):
                        lines.append([])
                line = lines[row]
                line.extend(" " * (col - len(line)))
                # A wide character's second cell holds "" so the row joins back to its text.
                line[col : col + max(cells, 1)] = [char] + [""] * (cells - 1)
                col += cells
        top = max(top, row - height + 1)
    text = ["".join(line).rstrip() for line in lines]
    while text and not text[-1]:
        text.pop()
    return text


def _max_rows_up(output: str) -> int:
    return max((int(n or 1) for n in re.findall(r"\x1b\[(\d*)A", output)), default=0)


def _single_render(text: str, terminal: bool) -> list[str]:
    console = _console(terminal)
    console.print(LinkTargetMarkdown(text))
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


def _stream_on(console: Console, text: str, step: int, **options) -> MarkdownStream:
    stream = MarkdownStream(console, **options)
    for start in range(0, len(text), step):
        stream.feed(text[start : start + step])
    stream.finish()
    return stream


@pytest.mark.parametrize("height", [40, 12])
def test_raw_tail_is_redrawn_within_the_screen_and_the_result_is_one_render(height):
    console = _console(True, height=height)
    stream = _stream_on(console, REPLY, 3, clock=_ticking_clock())
    output = console.file.getvalue()
    assert stream.frames > 10, "the raw tail was hardly redrawn"
    # The cursor can only reach rows on the screen: the erased region is the raw tail only.
    assert 0 < _max_rows_up(output) <= stream.max_raw_rows < height - 1
    assert _screen(output, height=height) == _single_render(REPLY, terminal=True)


def test_unsettled_text_is_shown_raw_as_soon_as_it_arrives():
    console = _console(True)
    # The clock stands still: after the first chunk no check for settled blocks happens.
    stream = MarkdownStream(console, clock=lambda: 0.0)
    stream.feed("# Title\n\nSome **bold")
    stream.feed(" words")
    heading = _single_render("# Title\n", terminal=True)
    # A word is written once it ends: until then the terminal could split it at the right edge.
    assert _screen(console.file.getvalue()) == [*heading, "", "Some **bold"]
    stream.feed("** here.\n")
    assert _screen(console.file.getvalue())[:3] == [*heading, "", "Some **bold words** here."]
    stream.finish()
    assert _screen(console.file.getvalue()) == _single_render(
        "# Title\n\nSome **bold words** here.\n", terminal=True
    )


WRAPPING = (
    "Wide 漢字と全角の文字が続く段落です。" * 6
    + "\n\n"
    + "A long plain line that wraps " * 9
    + "\n\n- item with 漢字漢字漢字 " + "x" * 120
    + "\n- another " + "word " * 40
    + "\n\nEnd.\n"
)


@pytest.mark.parametrize("step", [1, 7, 50])
def test_raw_rows_are_counted_right_when_long_and_wide_lines_wrap(step):
    console = _console(True, height=10)
    stream = _stream_on(console, WRAPPING, step, clock=_ticking_clock())
    output = console.file.getvalue()
    assert _max_rows_up(output) <= stream.max_raw_rows
    assert _screen(output, height=10) == _single_render(WRAPPING, terminal=True)


def test_tabs_and_control_characters_in_the_raw_tail_do_not_leave_garbage():
    text = "Col\tumn\ttabs\there " * 8 + "\x07bell\rreturn\x1b[2J\n\nNext paragraph.\n"
    console = _console(True)
    stream = MarkdownStream(console, clock=lambda: 0.0)
    for start in range(0, len(text), 5):
        stream.feed(text[start : start + 5])
    raw = console.file.getvalue()
    assert "\x07" not in raw and "\x1b[2J" not in raw
    assert _screen(raw)[0].startswith("Col     umn     tabs    here")
    stream.finish()
    assert _screen(console.file.getvalue()) == _single_render(text, terminal=True)


def test_a_block_taller_than_the_screen_is_held_back_then_printed_whole():
    items = "".join(f"- list item number {n}\n" for n in range(30))
    text = "Intro.\n\n" + items + "\nAfter.\n"
    console = _console(True, height=10)
    stream = _stream_on(console, text, 4, clock=_ticking_clock())
    output = console.file.getvalue()
    assert _max_rows_up(output) <= stream.max_raw_rows == 8
    screen = _screen(output, height=10)
    assert screen == _single_render(text, terminal=True)
    for n in range(30):
        assert sum(line.endswith(f"list item number {n}") for line in screen) == 1


def test_without_a_terminal_no_raw_text_is_written():
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
    assert large_stream.frames >= 3 * 15, "the raw tail was hardly redrawn"


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


def test_abort_keeps_the_settled_blocks_rendered_and_the_rest_raw():
    settled = REPLY[: REPLY.index("```python\ndef add")]
    partial = REPLY[: REPLY.index("Right after a fence.")]
    console = _console(True)
    stream = MarkdownStream(console, clock=_ticking_clock())
    for start in range(0, len(partial), 3):
        stream.feed(partial[start : start + 3])
    stream.abort()
    console.print("next prompt")
    screen = _screen(console.file.getvalue())
    rendered = _single_render(settled, terminal=True)
    assert screen[: len(rendered)] == rendered
    # The open fence stays as received, markers and all, on rows of its own.
    assert screen[len(rendered) :] == [*partial[len(settled) :].splitlines(), "next prompt"]


def test_abort_writes_text_held_back_from_a_tall_tail():
    items = "".join(f"- item {n}\n" for n in range(30))
    console = _console(True, height=10)
    stream = MarkdownStream(console, clock=_ticking_clock())
    for start in range(0, len(items), 4):
        stream.feed(items[start : start + 4])
    stream.abort()
    console.print("next prompt")
    assert _screen(console.file.getvalue(), height=10) == [*items.splitlines(), "next prompt"]


def test_interrupt_inside_the_context_manager_aborts_and_keeps_the_text():
    console = _console(True)
    with pytest.raises(KeyboardInterrupt):
        with MarkdownStream(console, clock=_ticking_clock()) as stream:
            for char in "- one\n- two\n- thr":
                stream.feed(char)
            raise KeyboardInterrupt
    assert _screen(console.file.getvalue()) == ["- one", "- two", "- thr"]


ODD_REPLY = """Setext title
============

| name | tokens | share |
|:-----|-------:|:-----:|
| system prompt | 1,024 | 12% |
| `tools` | **512** | 6% |

A paragraph with _underscores_, ~~strike~~, an &amp; entity, \\*escaped\\* stars,
<b>inline html</b> and a ![picture](https://example.com/p.png).

* outer item
    * nested item with `code`
* second outer

> quoted list:
> - one
> - two

| lone | table |
|---|---|
| at | the end |
"""


@pytest.mark.parametrize("step", [1, 5, len(ODD_REPLY)])
def test_tables_and_less_common_markdown_stream_as_one_render(step):
    screen, stream = _stream(ODD_REPLY, terminal=False, step=step, min_interval=0)
    assert screen == _single_render(ODD_REPLY, terminal=False)
    assert any("system prompt" in line and "1,024" in line for line in screen), "the table was not laid out"
    terminal_screen, _ = _stream(ODD_REPLY, terminal=True, step=step, clock=_ticking_clock())
    assert terminal_screen == _single_render(ODD_REPLY, terminal=True)


def test_each_settled_block_is_rendered_once_and_timed():
    _, stream = _stream(_sections(5), terminal=False, step=7, min_interval=0)
    # A section is a heading, a paragraph, a list and a fence: four blocks, each rendered once.
    assert stream.renders == 4 * 5
    assert len(stream.render_seconds) == stream.renders
    assert all(seconds >= 0 for seconds in stream.render_seconds)


def test_a_long_fence_settled_in_pieces_has_the_colours_of_one_render():
    # A string spanning many pieces: each piece is lexed with the code before it, so the code
    # after the closing quotes is coloured as code again, not as the start of another string.
    code = ["```python", 'TEXT = """'] + [f"inside the string, line {n}" for n in range(60)] + ['"""']
    code += [f"def f_{n}(x):  # comment\n    return x + {n}" for n in range(150)]
    reply = "\n".join(code + ["```", ""])
    console = _console(True)
    stream = _stream_on(console, reply, 4, clock=_ticking_clock())
    assert stream.renders > 10, "the fence was not settled in pieces"
    single = _console(True)
    single.print(LinkTargetMarkdown(reply))
    printed = console.file.getvalue()
    # Every styled line of one render, padding rows included, was printed as it is.
    missing = [line for line in single.file.getvalue().split("\n") if line not in printed]
    assert missing == []
    string = Syntax.get_theme("monokai").get_style_for_token(Token.String).color.triplet
    assert "\x1b[38;2;{};{};{};".format(*string) in printed


# The footer: the REPL's spinner line and status bar kept under the raw tail (issue 12).

FOOTER = ["\x1b[1m⠋ Receiving the reply\x1b[0m · 3s", "\x1b[32m88% context left\x1b[0m · demo:demo"]
FOOTER_SHOWN = ["⠋ Receiving the reply · 3s", "88% context left · demo:demo"]


@pytest.mark.parametrize(("text", "height", "step"), [
    (REPLY, 40, 1), (REPLY, 40, 3), (REPLY, 12, 7), (WRAPPING, 10, 1), (WRAPPING, 10, 7),
    ("x" * WIDTH + "\n" + "y" * 2 * WIDTH + "\n\n" + "z" * (WIDTH - 1) + "\n\nEnd.\n", 10, 1),
])
def test_the_footer_stays_under_the_streamed_text_and_leaves_one_render(text, height, step):
    console = _console(True, height=height)
    stream = MarkdownStream(console, clock=_ticking_clock(), footer=lambda width: FOOTER, footer_interval=60)
    for index, start in enumerate(range(0, len(text), step)):
        stream.feed(text[start : start + step])
        if index % 11 == 0:
            screen = _screen(console.file.getvalue(), height=height)
            assert screen[-2:] == FOOTER_SHOWN, f"no footer after {start + step} characters"
            assert FOOTER_SHOWN[0] not in screen[:-2], "an old footer was left in the text"
    stream.finish()
    output = console.file.getvalue()
    assert _screen(output, height=height) == _single_render(text, terminal=True)
    # The cursor never goes above the screen: the raw text's first row and the footer fit on it.
    assert _max_rows_up(output) < height - len(FOOTER)


def test_the_footer_is_redrawn_while_the_model_pauses_and_the_thread_stops_at_the_end():
    console = _console(True)
    drawn = itertools.count(1)
    stream = MarkdownStream(console, clock=_ticking_clock(),
                            footer=lambda width: [f"frame {next(drawn)}"], footer_interval=0.01)
    stream.feed("Some text, then a pause ")

    def frame() -> int:
        return int(_screen(console.file.getvalue())[-1].split()[-1])

    deadline = time.monotonic() + 10
    while frame() < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    # No new text arrived, yet the footer was drawn again under it, and only one footer is shown.
    assert _screen(console.file.getvalue()) == ["Some text, then a pause", f"frame {frame()}"]
    assert frame() >= 5
    stream.finish()
    assert stream._ticker is not None and not stream._ticker.is_alive()
    assert _screen(console.file.getvalue()) == ["Some text, then a pause"]


def test_abort_erases_the_footer_and_keeps_the_text():
    console = _console(True)
    stream = MarkdownStream(console, clock=lambda: 0.0, footer=lambda width: FOOTER, footer_interval=60)
    stream.feed("- one\n- two\n- thr")
    stream.abort()
    console.print("next prompt")
    assert _screen(console.file.getvalue()) == ["- one", "- two", "- thr", "next prompt"]


def test_no_footer_is_drawn_without_a_terminal():
    console = _console(False)
    stream = MarkdownStream(console, min_interval=0, footer=lambda width: FOOTER, footer_interval=0.01)
    stream.feed("Some text.\n\nMore.")
    stream.finish()
    assert "context left" not in console.file.getvalue()
    assert stream._ticker is None


# --- links show where they go (issue 22) -----------------------------------------------------------
def test_a_link_whose_text_is_another_url_prints_its_real_target_and_no_hyperlink():
    console = _console(True)
    stream = MarkdownStream(console)
    stream.feed("See [https://github.com/acme/app/pull/12](https://evil.example/login) for the fix.\n\nDone.\n")
    stream.finish()
    output = console.file.getvalue()
    assert "\x1b]8;" not in output
    screen = "\n".join(_screen(output))
    assert "https://github.com/acme/app/pull/12 (https://evil.example/login)" in screen


def test_a_link_that_shows_its_own_target_is_printed_once():
    console = _console(True)
    console.print(LinkTargetMarkdown("Docs: <https://docs.example.com/start> and [site](https://example.com)."))
    screen = "\n".join(_screen(console.file.getvalue()))
    assert screen.count("https://docs.example.com/start") == 1
    assert "site (https://example.com)" in screen and "\x1b]8;" not in console.file.getvalue()


def _words_split(rows: list[str], words: set[str]) -> list[str]:
    """Row ends and starts that are pieces of one word: a word split at the right edge."""
    return [f"{a!r} / {b!r}" for a, b in zip(rows, rows[1:])
            if a and b and not a.endswith(" ") and (a.split()[-1] + b.split()[0]) in words]


@pytest.mark.parametrize("interrupted", [False, True])
def test_streamed_text_wraps_at_word_boundaries_at_40_columns_while_it_arrives_and_after_ctrl_c(interrupted):
    text = ("The demo model is filling the context so you can watch compaction work, "
            "with words of uneven lengths: internationalization, a, an, the, supercalifragilistic, "
            "context window, threshold, summarization and the quick brown fox. ") * 3
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=40, height=40)
    stream = MarkdownStream(console, clock=lambda: 0.0)  # no settling: all of it stays raw
    words = set(re.findall(r"[^ ]+", text))
    for start in range(0, len(text), 3):  # chunks that end mid-word, as tokens do
        stream.feed(text[start:start + 3])
        rows = _screen(console.file.getvalue(), width=40)
        assert not _words_split(rows, words), _words_split(rows, words)
    if interrupted:
        stream.abort()
        rows = _screen(console.file.getvalue(), width=40)
        assert not _words_split(rows, words)
        assert " ".join(" ".join(rows).split()) == " ".join(text.split())  # nothing lost
    assert all(len(row) <= 40 for row in rows)
