"""Words for people: previews, tool result lines and compaction lines (issue 12)."""

from types import SimpleNamespace

import pytest

from mini_letta.repl.views import compaction_line, tool_result_line
from mini_letta.trust.terminal_text import preview
from mini_letta.wording import counted


@pytest.mark.parametrize("text, limit, expected", [
    ("short enough", 20, "short enough"),
    ("the quick brown fox jumps over the lazy dog", 20, "the quick brown fox…"),
    ("the quick brown fox, jumps over", 21, "the quick brown fox…"),
    ("a " + "x" * 40, 20, "a " + "x" * 17 + "…"),  # one long word is cut inside it
    ("spread\nover   lines", 40, "spread over lines"),
])
def test_previews_cut_at_a_word_boundary_and_end_with_an_ellipsis(text, limit, expected):
    shown = preview(text, limit)
    assert shown == expected and len(shown) <= limit


@pytest.mark.parametrize("number, noun, plural, expected", [
    (1, "line", None, "1 line"),
    (0, "line", None, "0 lines"),
    (2, "file", None, "2 files"),
    (1_200, "line", None, "1,200 lines"),
    (1, "older match", "older matches", "1 older match"),
    (3, "older match", "older matches", "3 older matches"),
])
def test_a_count_takes_its_noun_in_the_right_number(number, noun, plural, expected):
    assert counted(number, noun, plural) == expected


def record(layers, before=40, after=4, tokens_before=12_300, tokens_after=4_800, trigger="context_pressure"):
    return SimpleNamespace(layers=layers, messages_before=before, messages_after=after, tokens_before=tokens_before,
                           tokens_after=tokens_after, trigger=trigger, duration_ms=23)


@pytest.mark.parametrize("layers, words", [
    (["summarize"], "Summarized 37 older messages: 12.3k → 4.8k tokens, 57% left"),
    (["clear_tool_results", "summarize"],
     "Cleared old tool outputs and summarized 37 older messages: 12.3k → 4.8k tokens, 57% left"),
    (["extractive"], "Summarized 37 older messages (without the model): 12.3k → 4.8k tokens, 57% left"),
    (["clear_tool_results"], "Cleared old tool outputs: 12.3k → 4.8k tokens, 57% left"),
    (["collapse", "summarize", "drop_oldest"],
     "Shortened long tool outputs, summarized 37 older messages and dropped the oldest turns: "
     "12.3k → 4.8k tokens, 57% left"),
])
def test_compaction_lines_are_plain_words_without_triggers_layers_or_timings(layers, words):
    line = compaction_line(record(layers), 57)
    assert line == words
    for jargon in ("context_pressure", "summarize;", "ms", "_"):
        assert jargon not in line


def test_a_collapsed_tool_result_counts_the_hidden_lines_and_names_the_key():
    line = tool_result_line("first line\nsecond\nthird\n", is_error=False).plain
    assert line == "  ⎿ first line (+2 lines · Ctrl-O or /expand to see all)"
    assert tool_result_line("", is_error=False).plain == "  ⎿ (no output)"
    assert "Ctrl-O" not in tool_result_line("one line only", is_error=True).plain


def test_one_hidden_line_is_one_line():
    assert tool_result_line("first\nsecond", is_error=False).plain.endswith("(+1 line · Ctrl-O or /expand to see all)")


def test_the_demo_model_says_a_refused_call_was_not_run_and_counts_lines_in_words(tmp_path):
    from mini_letta.messages import Message
    from mini_letta.providers.base import Request
    from mini_letta.providers.demo import DemoProvider

    def reply_to(text, is_error):
        result = Message(role="tool", text=text, tool_call_id="call_1", tool_name="bash", is_error=is_error)
        request = Request(system="", messages=[Message.user("run ls"), result], tools=[], max_tokens=500)
        return DemoProvider()._describe_results(request.messages)

    assert "`bash` was not run: `The user declined" in reply_to("The user declined this bash call (run: ls).", True)
    assert "`bash` returned 1 line of output (" in reply_to("one", False)
    assert "`bash` failed 2 lines of output (exit code 1) (" in reply_to("one\ntwo\n[exit code 1]", True)


@pytest.mark.parametrize("text, is_error, line, reply", [
    # A command that printed nothing: no "+1 line" for its exit line, no "returned 2 lines".
    ("(no output)\n[exit code 0]", False, "  ⎿ (no output) [exit code 0]", "`bash` returned no output (exit code 0)."),
    ("(no output)\n[exit code 3]", True, "  ⎿ (no output) [exit code 3]", "`bash` failed no output (exit code 3)."),
    # A first line that is blank is not "First line:" followed by nothing.
    ("\n\n   \nhello\n[exit code 0]", False, "  ⎿ hello", "`bash` returned 2 lines of output (exit code 0)"),
])
def test_the_line_under_a_call_and_the_demo_s_reply_tell_a_result_alike(text, is_error, line, reply):
    from mini_letta.messages import Message
    from mini_letta.providers.demo import DemoProvider

    assert tool_result_line(text, is_error).plain.startswith(line)
    result = Message(role="tool", text=text, tool_call_id="call_1", tool_name="bash", is_error=is_error)
    said = DemoProvider()._describe_results([Message.user("run x"), result])
    assert said.startswith(reply)
    assert "the first: ``" not in said and "First line" not in said
    if "hello" in text:
        assert "the first: `hello`" in said


def test_the_demo_quotes_a_first_line_literally_so_markdown_keeps_underscores():
    from mini_letta.messages import Message
    from mini_letta.providers.demo import DemoProvider, code_span

    result = Message(role="tool", text="mini_letta/__init__.py\nmini_letta/app.py", tool_call_id="c", tool_name="glob")
    said = DemoProvider()._describe_results([Message.user("ls"), result])
    assert "the first: `mini_letta/__init__.py`" in said
    assert code_span("a`b") == "``a`b``" and code_span("`x") == "`` `x ``"


def test_the_demo_s_summary_names_the_files_worked_on_not_those_of_its_help_text():
    from mini_letta.messages import Message, ToolCall
    from mini_letta.providers.base import Request
    from mini_letta.providers.demo import HELP, DemoProvider

    call = ToolCall("c1", "read_file", '{"path": "notes.md"}')
    history = [Message.user("help"), Message.assistant(HELP), Message.user("read notes.md"),
               Message.assistant("", [call]), Message.tool_result(call, "1\tnotes")]
    summary = DemoProvider()._summarize(Request(system="", messages=[*history, Message.user("Summarize.")],
                                                tools=[], max_tokens=2000, purpose="summary"))
    files = next(line for line in summary.splitlines() if line.startswith("3. Files"))
    assert "notes.md" in files and "app.py" not in files and "README.md" not in files


def test_the_rewind_list_counts_changed_files_in_words():
    import io

    from rich.console import Console

    from mini_letta.checkpoints.rewind import RewindPoint
    from mini_letta.messages import Message
    from mini_letta.repl.commands.rewind import points_table

    points = [RewindPoint(1, Message.user("first"), None, ["a.txt", "b.txt"], has_checkpoint=True),
              RewindPoint(2, Message.user("second"), None, ["b.txt"], has_checkpoint=True)]
    out = io.StringIO()
    Console(file=out, width=120).print(points_table(points))
    assert "2 files changed since: a.txt, b.txt" in out.getvalue()
    assert "1 file changed since: b.txt" in out.getvalue()
