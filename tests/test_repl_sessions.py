"""Sessions and models inside the REPL: /sessions, /resume with its recap, -c's recap, /model and
/provider with the window following (issue 12)."""

import re

from fakes import Reply
from pty_support import assert_exits_cleanly, earlier_session, screen_after


def test_resume_picks_an_earlier_session_and_says_what_it_was(spawn):
    first = spawn()
    screen_after(first, r"context left")
    first.send("remember the parser fix\r")
    screen_after(first, r"core_memory_append[\s\S]*context left")
    first.send("the tokenizer is slow today\r")
    screen_after(first, r"You said: “the tokenizer is slow today”[\s\S]*context left")
    first.sendcontrol("d")
    first.expect("Bye")
    assert_exits_cleanly(first)  # its lock on the session goes with it
    repl = spawn()
    screen_after(repl, r"context left")
    repl.send("a new question\r")
    screen_after(repl, r"You said: “a new question”[\s\S]*context left")
    repl.send("/sessions\r")
    listed = screen_after(repl, r"First prompt[\s\S]*context left")
    assert "remember the parser fix" in listed and "a new question" in listed
    repl.send("/resume\r")
    screen_after(repl, r"Resume which\?")
    repl.send("1\r")
    recap = screen_after(repl, r"Resumed session[\s\S]*context left")
    assert re.search(r"Resumed session \d{8}-\d{6}-\w+, last active \d{4}-\d\d-\d\d \d\d:\d\d · 6 messages", recap)
    assert "You: the tokenizer is slow today" in recap
    assert "Reply: You said: “the tokenizer is slow today”" in recap
    repl.send("and now?\r")
    reply = screen_after(repl, r"You said: “and now\?”[\s\S]*context left")
    assert "carried 7 messages" in reply  # the resumed conversation goes on


def test_continue_prints_a_recap_of_the_resumed_session(spawn, tmp_path):
    earlier_session(spawn, tmp_path, "hello from yesterday")
    again = spawn("-c")
    recap = screen_after(again, r"Resumed session[\s\S]*context left")
    assert "You: hello from yesterday" in recap and "2 messages" in recap


def test_model_switches_and_the_window_and_status_bar_follow(spawn, server):
    server.models = [{"id": "big-model", "max_model_len": 32768}, {"id": "small-model", "max_model_len": 8192}]
    server.enqueue(Reply(text="hi from big"))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
    repl = spawn("--model", "big-model", env_extra=env)
    screen_after(repl, r"openai:big-model · [\d.]+k?/32\.8k tokens")
    repl.send("/model small-model\r")
    said = screen_after(repl, r"Now using[\s\S]*openai:small-model · [\d.]+k?/8\.2k tokens")
    assert re.search(r"Now using openai:small-model · window 8\.2k \(was 32\.8k\), compaction at [\d.]+k", said)
    repl.send("/model\r")
    screen_after(repl, r"Using openai:small-model · window 8,192 tokens")


def test_model_on_the_demo_provider_says_it_does_not_apply(spawn):
    repl = spawn()
    screen_after(repl, r"context left")
    repl.send("/model gpt-4o\r")
    said = screen_after(repl, r"does not apply[\s\S]*context left")
    assert "/model does not apply to the offline demo model" in said
    assert re.search(r"\d+% context left · demo:demo", said.split("does not apply")[-1])


def test_provider_without_a_key_fails_in_one_line_and_keeps_the_current_one(spawn):
    repl = spawn()
    screen_after(repl, r"context left")
    repl.send("/provider anthropic\r")
    said = screen_after(repl, r"No API key for anthropic[\s\S]*context left")
    assert "Traceback" not in said
    assert re.search(r"\d+% context left · demo:demo", said.split("No API key")[-1])


def test_resume_flag_prints_a_recap_of_that_session(spawn, tmp_path):
    session = earlier_session(spawn, tmp_path, "hello from the first session")
    again = spawn("-r", session.id[:15])  # a unique prefix is enough
    recap = screen_after(again, r"Resumed session[\s\S]*context left")
    assert f"Resumed session {session.id}" in recap
    assert "You: hello from the first session" in recap and "2 messages" in recap


def test_provider_switches_from_the_demo_model_and_the_status_bar_follows(spawn, server):
    server.models = [{"id": "big-model", "max_model_len": 32768}]
    server.enqueue(Reply(text="Hello from the real server."))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
    repl = spawn("--provider", "demo", env_extra=env)
    screen_after(repl, r"demo:demo · [\d.]+k/16\.4k tokens")
    repl.send("/provider openai big-model\r")
    said = screen_after(repl, r"Now using[\s\S]*openai:big-model · [\d.]+k?/32\.8k tokens")
    assert re.search(r"Now using openai:big-model · window 32\.8k \(was 16\.4k\)", said)
    repl.send("hi\r")
    screen_after(repl, r"Hello from the real server\.[\s\S]*\n›")
    assert len(server.requests_to("/v1/chat/completions")) == 1


def test_a_smaller_window_over_its_threshold_compacts_and_says_so(spawn, server):
    server.models = [{"id": "big-model", "max_model_len": 32768}, {"id": "small-model", "max_model_len": 8192}]
    long_reply = "The parser keeps every token it reads in one long buffer. " * 140  # about 2k tokens
    for turn in range(3):
        server.enqueue(Reply(text=f"Turn {turn}. {long_reply}", chunk_size=2000))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
    repl = spawn("--model", "big-model", env_extra=env)
    screen_after(repl, r"context left")
    for turn in range(3):
        repl.send(f"tell me about the parser, part {turn}\r")
        screen_after(repl, rf"Turn {turn}\.[\s\S]*\n›")
    # A slow summarizer: the spinner says what is happening and counts the seconds.
    server.enqueue(Reply(text="Summary: the parser keeps every token in one buffer.", stall=2.5))
    repl.send("/model small-model\r")
    compacting = screen_after(repl, r"[Cc]ompacting · [1-9]s · Ctrl-C to interrupt\n"
                                    r"\d+% context left · openai:small-model")
    assert re.search(r"Now using openai:small-model · window 8\.2k \(was 32\.8k\)", compacting)
    assert "over the new window's compaction threshold: compacting now." in compacting
    screen_after(repl, r"[Ss]ummarized \d+ older messages: [\d.]+k? → [\d.]+k? tokens, \d+% left[\s\S]*context left")
