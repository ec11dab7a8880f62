"""What the REPL shows while nothing else moves: the spinner line with its seconds, the status bar
during a turn, and every retry of a failed request (issue 12), in a pseudo-terminal."""

import re

from fakes import Fault, Reply
from test_repl_pty import screen_after, spawn  # noqa: F401 - the fixture


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
    collapsed = screen_after(child, r"now sits in the context[\s\S]*context left")
    assert re.search(r"⎿ 1 line number 1 \(\+119 lines · Ctrl-O or /expand to see all\)", collapsed)
    assert "line number 120" not in collapsed
    child.sendcontrol("o")
    expanded = screen_after(child, r"line number 120")
    assert "read_file long.txt" in expanded and "line number 77" in expanded
    child.send("/expand\r")  # the command does the same
    screen_after(child, r"/expand[\s\S]*line number 120")
