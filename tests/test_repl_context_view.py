"""/context adds up and marks every compaction; `sessions` fits the terminal (issue 12)."""

import io
import re

import pytest
from rich.console import Console

from mini_letta.app import Options, build_agent
from mini_letta.messages import Message
from mini_letta.repl.views import context_view
from mini_letta.sessions.store import SessionWriter
from mini_letta.sessions.listing import find_session, list_sessions, session_table, short_ids
from mini_letta.toolbox import approve_all


def rendered(renderable, width=120) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def numbers(text: str, label: str) -> int:
    match = re.search(rf"│ {label} +│ +([\d,]+) │", text)
    assert match, f"no row {label!r} in:\n{text}"
    return int(match.group(1).replace(",", ""))


@pytest.fixture
def demo_agent(workspace):
    return build_agent(Options(provider="demo", workspace=workspace), approve_all)


def test_context_rows_add_up_to_the_headline_and_fill_the_window(demo_agent, workspace):
    (workspace / "notes.md").write_text("a fairly long line of notes\n" * 60)
    for text in ("hello", "read notes.md", "fill 300", "ls"):
        demo_agent.run_turn(text)
    shown = rendered(context_view(demo_agent))
    tokens, window = (int(n.replace(",", "")) for n in re.search(r"([\d,]+) of ([\d,]+) tokens in use", shown).groups())
    in_context = sum(numbers(shown, label) for label in ("system prompt", "core memory", "tool schemas",
                                                         "messages", "summary"))
    assert in_context == tokens == demo_agent.context_state().tokens
    assert in_context + numbers(shown, "reserved output") + numbers(shown, re.escape("free (raw share of the window)")) == window


def test_every_compaction_is_marked_in_recent_turns_the_manual_one_too(demo_agent, workspace):
    (workspace / "notes.md").write_text("a fairly long line of notes\n" * 60)
    for text in ("read notes.md", "fill 200", "read notes.md", "fill 200"):
        demo_agent.run_turn(text)
    demo_agent.compact_now("keep the notes")
    demo_agent.run_turn("hello again")
    shown = rendered(context_view(demo_agent))
    marks = shown.count("◆ compacted")
    assert marks == len(demo_agent.compactions) >= 1
    assert "/compact after 4" in shown


def test_short_ids_are_the_shortest_unique_prefixes_and_resume_accepts_them(home, workspace):
    writers = [SessionWriter.create(home, workspace, "demo", "demo") for _ in range(3)]
    ids = [w.id for w in writers]
    shortest = short_ids(ids)
    for session_id, short in shortest.items():
        assert session_id.startswith(short) and len(short) >= 8
        assert find_session(home, short).stem == session_id
        assert sum(other.startswith(short) for other in ids) == 1


@pytest.mark.parametrize("width, columns", [
    (120, ["ID", "Started", "Msgs", "Tokens", "Cost", "First prompt"]),
    (80, ["ID", "Started", "Msgs", "Tokens", "Cost", "First prompt"]),
    (45, ["ID", "Started", "Msgs", "Tokens", "Cost"]),
    (30, ["ID", "Msgs", "Tokens"]),
])
def test_the_sessions_table_drops_the_prompt_before_anything_and_never_cuts_ids(home, workspace, width, columns):
    writer = SessionWriter.create(home, workspace, "demo", "demo")
    writer.append_message(Message.user("please look at the flaky parser test in the tokenizer module " * 3, seq=1))
    shown = rendered(session_table(list_sessions(home), width=width, home=home), width=width)
    header = shown.splitlines()[0].split()
    assert [name for name in header if name != "prompt"] == [c.split()[0] for c in columns]
    short = short_ids([writer.id])[writer.id]
    assert short in shown and all(len(line) <= width for line in shown.splitlines())


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def test_the_status_bar_and_context_say_the_same_percent_in_the_same_words_and_what_0_means(demo_agent, workspace):
    from mini_letta.repl.views import status_fields

    (workspace / "notes.md").write_text("a fairly long line of notes\n" * 200)
    for text in ("read notes.md", "fill 2000"):
        demo_agent.run_turn(text)
    bar = status_fields(demo_agent)[0][1]
    shown = rendered(context_view(demo_agent))
    assert re.fullmatch(r"\d+% context left", bar) and bar != "100% context left"
    assert shown.startswith(bar + " · ")  # the same figure, the same words, first
    assert "at 0% (" in shown and "the older conversation is summarized" in shown
    assert "free (raw share of the window)" in shown and "% left" not in shown.replace("% context left", "")
