"""What the REPL shows while nothing else moves: the spinner line with its seconds, the status bar
during a turn, and every retry of a failed request (issue 12), in a pseudo-terminal."""

import io
import re

from fakes import Fault, Reply
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from mini_letta.repl.activity import Activity
from pty_support import AT_THE_PROMPT_AFTER_A_REPLY, screen_after


def openai_env(server):
    return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url, "MINI_LETTA_MAX_RETRIES": "2"}


def test_a_slow_reply_shows_the_spinner_with_seconds_and_the_status_bar_stays(spawn, server):
    server.enqueue(Reply(text="Finally here.", stall=5))
    child = spawn("--model", "gpt-test", env_extra=openai_env(server))
    screen_after(child, r"context left")
    child.send("are you there?\r")
    waiting = screen_after(child, r"Waiting for the model · [1-9]\d*s · Ctrl-C to interrupt")
    # The status bar is drawn under the spinner line while the turn runs.
    after_spinner = waiting[waiting.rindex("Waiting for the model"):]
    assert re.search(r"\d+% context left · openai:gpt-test · [\d.]+k?/~?[\d.]+[kM]?\?? tokens", after_spinner)
    reply = screen_after(child, r"Finally here\.[\s\S]*context left")
    assert "Waiting for the model" not in reply.split("Finally here.")[-1]


def test_the_status_bar_stays_on_screen_while_the_reply_streams(spawn, server):
    first = "The first paragraph streams at once.\n\n"
    # The role event, then the first paragraph; then a pause in the middle of the reply.
    server.enqueue(Reply(text=first + "LATER-PART arrives after the pause.", chunk_size=len(first),
                         stall=6, stall_after=2))
    child = spawn("--model", "gpt-test", env_extra=openai_env(server))
    screen_after(child, r"context left")
    child.send("stream slowly\r")
    streaming = screen_after(child, r"The first paragraph streams at once\.[\s\S]*"
                                    r"Receiving the reply · [1-9]\d*s · \d+ tokens received · Ctrl-C to interrupt"
                                    r"[\s\S]*context left", timeout=5)
    assert "LATER-PART" not in streaming  # mid-turn: the rest of the reply has not arrived
    footer = streaming[streaming.rindex("Receiving the reply"):]
    assert re.search(r"\d+% context left · openai:gpt-test · [\d.]+k?/~?[\d.]+[kM]?\?? tokens", footer)
    done = screen_after(child, r"LATER-PART arrives after the pause\.[\s\S]*context left")
    assert "Receiving the reply" not in done.split("LATER-PART arrives")[-1]


def test_server_errors_are_retried_aloud_before_the_reply(spawn, server):
    retry = {"retry-after-ms": "1000"}
    server.enqueue(Fault(500, "boom", headers=retry), Fault(500, "boom", headers=retry), Reply(text="Third time lucky."))
    child = spawn("--model", "gpt-test", env_extra=openai_env(server))
    screen_after(child, r"context left")
    child.send("hello\r")
    shown = screen_after(child, r"Third time lucky\.")
    assert "Server error 500, retrying in 1 s (1/2)." in shown
    assert "Server error 500, retrying in 1 s (2/2)." in shown
    assert len(server.requests_to("/v1/chat/completions")) == 3


def test_a_long_tool_output_says_how_to_see_it_and_ctrl_o_shows_it_whole(spawn, tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "long.txt").write_text("".join(f"line number {n}\n" for n in range(1, 121)))
    child = spawn(env_extra={"PAGER": "cat"})
    screen_after(child, r"context left")
    child.send("read long.txt\r")
    collapsed = screen_after(child, r"now sits in the context[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    assert re.search(r"⎿ 1 line number 1 \(\+119 lines · Ctrl-O or /expand to see all\)", collapsed)
    assert "line number 120" not in collapsed
    child.sendcontrol("o")  # at the prompt: during the turn nothing reads Ctrl-O
    expanded = screen_after(child, r"line number 120")
    assert "read_file long.txt" in expanded and "line number 77" in expanded
    child.send("/expand\r")  # the command does the same
    screen_after(child, r"/expand[\s\S]*line number 120")


def test_the_footer_drawn_under_a_streamed_reply_obeys_no_escape_sequence_from_its_text():
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=100)
    activity = Activity(console)
    # A tool name is model text: it may hold escapes, newlines and markup.
    activity.label = "The model is writing a \x1b[2Jevil\nname[bold] call"
    activity.tokens = 1234
    activity.status = Text("88% context left · demo:demo · 1.7k/16.4k tokens")
    lines = activity.footer_lines(80)
    assert len(lines) == 2
    # Only colour and style codes (SGR) are written; each line is narrower than the screen.
    assert all(re.fullmatch(r"(?:\x1b\[[\d;]*m|[^\x1b\r\n])*", line) for line in lines)
    shown = [re.sub(r"\x1b\[[\d;]*m", "", line) for line in lines]
    assert "␛[2Jevil ⏎ name[bold] call" in shown[0] and all(cell_len(line) < 80 for line in shown)
    assert shown[1].startswith("88% context left")
    # On a narrow terminal the lines are cut, never wrapped onto a row the stream did not count.
    narrow = [re.sub(r"\x1b\[[\d;]*m", "", line) for line in activity.footer_lines(30)]
    assert len(narrow) == 2 and all(cell_len(line) < 30 and line.endswith("…") for line in narrow)


def test_a_running_command_shows_the_spinner_with_its_seconds_and_the_status_bar(spawn):
    child = spawn()
    screen_after(child, r"context left")
    child.send("run sleep 3 && echo slept-$((6*7))\r")
    screen_after(child, r"\[n\]o \(Esc\)")
    child.send("y")
    running = screen_after(child, r"Running [^\n]*sleep 3[^\n]* · [1-9]s · Ctrl-C to interrupt[\s\S]*context left")
    assert "slept-42" not in running  # the spinner counts while the command runs, before its output
    screen_after(child, r"⎿ slept-42")


def test_a_flag_that_does_not_apply_to_the_repl_says_so_at_once(spawn):
    child = spawn("--output-format", "json")
    shown = screen_after(child, r"context left")
    assert "--output-format json applies only with -p" in shown


def test_the_demo_models_slow_fill_streams_paragraphs_under_the_footer(spawn):
    child = spawn()
    screen_after(child, r"context left")
    child.send("fill 300 slowly\r")
    streaming = screen_after(child, r"Receiving the reply · [1-9]s · [\d,]+ tokens received[^\n]*\n"
                                    r"\d+% context left · demo:demo")
    # The footer is drawn again under the text between chunks: without its draws, the text reads on.
    text = re.sub(r"\n?\S Receiving the reply · [^\n]*\n\d+% context left · demo:demo[^\n]*?window: served", "",
                  streaming)
    assert "The demo model is filling the context so you can watch compaction work." in text
    assert not re.search(r"[\d.]+k? in · [\d.]+k? out", streaming)  # the turn is not over yet
    done = screen_after(child, r"[\d.]+k? in · [\d.]+k? out[\s\S]*context left")
    assert "Receiving the reply" not in done.split(" out")[-1]


def test_the_spinner_line_names_the_lines_queued_during_the_turn():
    activity = Activity(Console(file=io.StringIO(), width=200))
    activity.label = "Receiving the reply"
    assert "queued" not in activity.line().plain
    queued = ["fix the test", "then run it\x1b[2J"]
    activity.queued = lambda: queued
    line = activity.line().plain
    assert "2 messages queued: “then run it␛[2J”" in line  # the latest, made visible
    queued.append(None)  # Ctrl-D on an empty line
    assert "exits after this reply (Ctrl-D)" in activity.line().plain
