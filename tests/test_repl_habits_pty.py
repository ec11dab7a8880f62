"""Habits from other agents in the REPL (issue 26): ``!command`` runs without the model and its
output reaches the next request."""

import re

from fakes import Reply

from pty_support import earlier_session, read_until, screen_after, streaming, typed_then_esc


def openai_env(server):
    return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url, "MINI_LETTA_MAX_RETRIES": "0"}


def test_bang_runs_the_command_without_the_model_and_the_next_request_carries_it(spawn, server):
    child = spawn("--model", "gpt-4o", env_extra=openai_env(server))
    screen_after(child, r"context left")
    child.send("!echo hi-$((6*7))\r")
    shown = screen_after(child, r"now in the conversation[\s\S]*context left")
    assert "hi-42" in shown and "[y]es" not in shown  # no approval: the user typed it
    assert server.requests_to("/v1/chat/completions") == []
    server.enqueue(Reply(text="You printed hi-42."))
    child.send("what did it print?\r")
    screen_after(child, r"You printed hi-42\.")
    [request] = server.requests_to("/v1/chat/completions")
    users = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
    assert "echo hi-$((6*7))" in users[-2] and "hi-42" in users[-2]
    assert users[-1] == "what did it print?"


def test_resume_without_an_id_lists_the_sessions_to_pick_from(spawn, tmp_path):
    session = earlier_session(spawn, tmp_path, "hello from the first session")
    child = spawn("-r")
    listed = screen_after(child, r"Resume which\? A number or an id")
    # The id's shortest unique prefix: how long depends on how many seconds apart the two sessions
    # started (the full timestamp was expected here, and a slow start made the prefix shorter).
    row = re.search(r"(?m)^ *1 +(\d{8}-\S+) .*hello from the first session", listed)
    assert row and session.id.startswith(row.group(1)), listed
    child.send("1\r")
    screen_after(child, r"Resumed session[\s\S]*hello from the first session[\s\S]*context left")


def test_at_completes_a_workspace_path_and_attaches_the_file(spawn, server, tmp_path):
    child = spawn("--model", "gpt-4o", env_extra=openai_env(server))
    (tmp_path / "ws" / "notes").mkdir()
    (tmp_path / "ws" / "notes" / "plan.md").write_text("Step one: ship the attachment feature.\n")
    screen_after(child, r"context left")
    child.send("summarize @notes/pl")
    screen_after(child, r"@notes/pl[\s\S]*notes/plan\.md")  # the completion menu offers it
    server.enqueue(Reply(text="It is a plan."))
    child.send("\t")  # take it: the line is now "summarize @notes/plan.md"
    screen_after(child, r"an\.md")
    child.send("\r")
    shown = screen_after(child, r"It is a plan\.")
    assert re.search(r"Attached notes/plan\.md \(~\d+ tokens\)", shown)  # said before it is sent
    [request] = server.requests_to("/v1/chat/completions")
    sent = request.body["messages"][-1]["content"]
    assert sent.startswith("summarize @notes/plan.md") and "Step one: ship the attachment feature." in sent


def test_escape_interrupts_a_streaming_reply_and_text_typed_meanwhile_waits_at_the_next_prompt(spawn):
    child = spawn()
    streaming(child)
    typed_then_esc(child, "next question")


def test_provider_without_a_key_in_the_repl_says_what_to_set_not_a_flag(spawn):
    child = spawn()
    screen_after(child, r"context left")
    child.send("/provider openai\r")
    shown = screen_after(child, r"Still\s+using demo:demo[\s\S]*context left")
    assert "set OPENAI_API_KEY in your shell" in re.sub(r"\s+", " ", shown)
    assert "--provider" not in shown


def test_a_streamed_reply_at_40_columns_never_splits_a_word_also_after_ctrl_c(spawn):
    from test_markdown_stream import _screen

    child = spawn(columns=40)
    screen_after(child, r"context left")
    child.send("fill 400 slowly\r")
    raw = ""
    while raw.count("compaction work.") < 6:  # several rows streamed, with a few wraps
        raw += read_until(child, r"compaction work\.")[0]
    child.sendcontrol("c")
    raw += read_until(child, r"Interrupted")[0]
    rows = _screen(raw[raw.index("fill 400 slowly"):], width=40)
    words = set("The demo model is filling the context so you can watch compaction work.".split())
    for row, below in zip(rows, rows[1:]):
        if row.strip() and below.strip() and not row.endswith(" "):
            assert row.split()[-1] + below.split()[0] not in words, f"split between {row!r} and {below!r}"
