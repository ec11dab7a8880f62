"""As the user runs it, against the fake servers over real HTTP (both wire formats, streaming): a reply
cut by the reply limit, a tool call cut mid-JSON, a refusal and a summary cut at its limit each
give their named outcome in ``-p`` JSON (and a non-zero exit where the answer is incomplete) and in
the REPL (a pseudo-terminal), never "done". Headless slash commands: ``-p "/compact [focus]"``,
``-p /context``, ``-p /cost``."""

from __future__ import annotations

import json

import pexpect
import pytest
from fakes import Reply
from fakes.anthropic_server import FakeAnthropicServer
from fakes.openai_server import FakeOpenAIServer
from fault_support import cli, error_lines, session_files
from pty_support import screen_after

from mini_letta.headless import INCOMPLETE_EXIT
from mini_letta.sessions.store import load_session
from mini_letta.settings import SETTINGS

CUT_CALL = ("c1", "write_file", '{"path": "big.txt", "content": "line one\\nline tw')
LONG_ANSWER = "The importer reads each row, splits it on the separator and checks the column count. " * 40


@pytest.fixture(params=["openai", "anthropic"])
def fake(request):
    server = FakeOpenAIServer() if request.param == "openai" else FakeAnthropicServer()
    with server:
        server.provider = request.param
        yield server


def run_p(fake, tmp_path, workspace, prompt, *extra, env=None):
    """``mini-letta -p PROMPT --output-format json`` against ``fake``: (completed, the JSON object)."""
    completed = cli(["-p", prompt, "--provider", fake.provider, "--model", "model-test", "--base-url",
                     fake.base_url, "--output-format", "json", *extra],
                    home=tmp_path / "home", cwd=workspace, env={"ANTHROPIC_API_KEY": "sk-ant-test", **(env or {})})
    return completed, json.loads(completed.stdout)


def completions(fake) -> list[dict]:
    """The bodies of the completion requests the server received."""
    path = "/v1/chat/completions" if isinstance(fake, FakeOpenAIServer) else "/v1/messages"
    return [recorded.body for recorded in fake.requests_to(path)]


def sent_texts(fake) -> list[str]:
    """Every message text of the latest completion request, as the server received it."""
    texts = []
    for message in completions(fake)[-1]["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        for block in content if isinstance(content, list) else []:
            texts.append(block.get("text") or json.dumps(block.get("content", "")))
    return texts


# --- -p JSON ----------------------------------------------------------------------------------------
def test_print_mode_reports_a_reply_cut_by_the_limit_and_exits_non_zero(fake, tmp_path, workspace):
    fake.enqueue(Reply(text="It was the best of times, it was", stop_reason=fake.length_stop))
    completed, result = run_p(fake, tmp_path, workspace, "tell me a long story")
    assert completed.returncode == INCOMPLETE_EXIT != 0
    assert result["stopped"] == "max_tokens" and result["is_error"] is True
    assert result["result"] == "It was the best of times, it was"
    assert "reply limit" in result["stop_detail"] and "incomplete" in result["stop_detail"]
    assert any("Reply cut at the" in line for line in error_lines(completed.stderr))


def test_print_mode_reports_a_refusal_as_a_refusal(fake, tmp_path, workspace):
    if isinstance(fake, FakeOpenAIServer):
        fake.enqueue(Reply(refusal="I can't help with that."))
    else:
        fake.enqueue(Reply(text="I can't help with that.", stop_reason="refusal"))
    completed, result = run_p(fake, tmp_path, workspace, "do the forbidden thing")
    assert completed.returncode == INCOMPLETE_EXIT
    assert result["stopped"] == "refusal" and result["result"] == "I can't help with that."
    assert "empty reply" not in completed.stderr and "refused" in completed.stderr


@pytest.mark.parametrize("reply", [Reply(text="what arrived before the line dropped", chunk_size=4, cut_after=6),
                                   Reply(text="what arrived before the stream ended", finish=False)],
                         ids=["connection-dropped", "no-finish"])
def test_print_mode_names_a_reply_cut_off_mid_stream_as_cut(fake, tmp_path, workspace, reply):
    fake.enqueue(reply)
    completed, result = run_p(fake, tmp_path, workspace, "tell me something")
    assert completed.returncode != 0 and result["stopped"] == "cut" and result["is_error"] is True
    [path] = session_files(tmp_path / "home")
    kept = load_session(path).all_messages[-1]
    assert kept.role == "assistant" and kept.meta["stop_reason"] == "cut" and kept.text


def test_print_mode_sends_a_call_cut_mid_json_back_and_the_retry_runs(fake, tmp_path, workspace):
    fake.enqueue(Reply(tool_calls=[CUT_CALL], stop_reason=fake.length_stop),
                 Reply(tool_calls=[("c2", "write_file", json.dumps({"path": "big.txt", "content": "line one\n"}))]),
                 Reply(text="Wrote the first part."))
    completed, result = run_p(fake, tmp_path, workspace, "write big.txt", "--yolo")
    assert completed.returncode == 0 and result["stopped"] == "done"
    assert (workspace / "big.txt").read_text() == "line one\n"
    told = " ".join(sent_texts(fake))
    assert "cut mid-JSON" in told and "again, smaller" in told
    assert "was cut at the" in completed.stderr


def test_print_mode_stops_as_max_tokens_when_every_retry_is_cut_too(fake, tmp_path, workspace):
    fake.enqueue(*[Reply(tool_calls=[CUT_CALL], stop_reason=fake.length_stop)
                   for _ in range(SETTINGS.loop.cut_call_retries + 1)])
    completed, result = run_p(fake, tmp_path, workspace, "write big.txt", "--yolo")
    assert completed.returncode == INCOMPLETE_EXIT
    assert result["stopped"] == "max_tokens" and not (workspace / "big.txt").exists()
    [path] = session_files(tmp_path / "home")
    assert load_session(path).warnings == []


def _history(fake, tmp_path, workspace, turns: int = 3):
    for turn in range(turns):
        fake.enqueue(Reply(text=f"Answer {turn}: " + LONG_ANSWER, chunk_size=400))
        completed, result = run_p(fake, tmp_path, workspace, f"Question {turn}: how does the CSV importer work?",
                                  *(["-c"] if turn else []))
        assert result["stopped"] == "done", completed.stderr


def test_print_mode_compact_with_a_summary_cut_at_its_limit_installs_the_extractive_one(fake, tmp_path, workspace):
    """Cut, then cut again when asked once more with more room: the extractive summary is installed."""
    _history(fake, tmp_path, workspace)
    fake.enqueue(*[Reply(text="## Primary request and intent\nThe user asked how the CSV imp",
                         stop_reason=fake.length_stop)] * 2)
    completed, result = run_p(fake, tmp_path, workspace, "/compact", "-c")
    assert completed.returncode == 0, completed.stderr
    assert result["command"] == "compact" and result["stopped"] == "summary_max_tokens"
    compaction = result["compaction"]
    assert compaction["summary_rejected"] == "max_tokens" and "extractive" in compaction["layers"]
    assert "summarize" not in compaction["layers"] and "token limit" in result["result"]
    [path] = session_files(tmp_path / "home")
    head = load_session(path).messages_in_context[0]
    assert head.kind == "summary" and "how the CSV imp" not in head.text


def test_a_summary_cut_at_its_limit_is_asked_for_again_with_more_room(fake, tmp_path, workspace):
    _history(fake, tmp_path, workspace)
    fake.enqueue(Reply(text="## Primary request and intent\nThe user asked how the CSV imp", stop_reason=fake.length_stop),
                 Reply(text="## 1. Primary request and intent\nThe user asked how the CSV importer works; rows are "
                            "checked for their column count."))
    completed, result = run_p(fake, tmp_path, workspace, "/compact", "-c")
    assert completed.returncode == 0 and result["stopped"] == "compacted", completed.stderr
    assert "summarize" in result["compaction"]["layers"] and not result["compaction"].get("summary_rejected")
    first, again = completions(fake)[-2:]
    limit = lambda body: body.get("max_completion_tokens") or body.get("max_tokens")  # noqa: E731
    assert limit(first) < limit(again) <= 2 * limit(first)
    # Each request tells the model its limit, in words it can aim for.
    assert f"cut off at {limit(again):,} tokens" in sent_texts(fake)[-1]
    [path] = session_files(tmp_path / "home")
    assert "rows are checked for their column count" in load_session(path).messages_in_context[0].text


# --- headless slash commands -------------------------------------------------------------------------
def test_continue_and_compact_with_a_focus_sends_the_focus_to_the_summarizer(fake, tmp_path, workspace):
    _history(fake, tmp_path, workspace)
    fake.enqueue(Reply(text="## Primary request and intent\nThe user is learning how the CSV importer works; "
                            "the API notes say rows are checked for their column count."))
    completed, result = run_p(fake, tmp_path, workspace, "/compact keep the API notes", "-c")
    assert completed.returncode == 0 and result["stopped"] == "compacted", completed.stderr
    assert result["compaction"]["focus"] == "keep the API notes" and "summarize" in result["compaction"]["layers"]
    assert "keep the API notes" in sent_texts(fake)[-1]
    # Nothing went to the model as a prompt, and the session holds the compaction.
    [path] = session_files(tmp_path / "home")
    loaded = load_session(path)
    assert loaded.messages_in_context[0].kind == "summary"
    assert "/compact keep the API notes" not in [m.text for m in loaded.all_messages]


def test_compact_in_text_mode_prints_what_it_did(server, tmp_path, workspace):
    server.provider = "openai"
    _history(server, tmp_path, workspace)
    server.enqueue(Reply(text="## Primary request and intent\nHow the CSV importer checks each row."))
    completed = cli(["-c", "-p", "/compact", "--provider", "openai", "--model", "model-test", "--base-url",
                     server.base_url], home=tmp_path / "home", cwd=workspace)
    assert completed.returncode == 0 and completed.stdout.startswith("Summarized ") and "→" in completed.stdout


def test_context_and_cost_run_as_commands_in_print_mode(server, tmp_path, workspace):
    server.provider = "openai"
    _history(server, tmp_path, workspace, turns=1)
    completed, result = run_p(server, tmp_path, workspace, "/context", "-c")
    assert completed.returncode == 0 and result["command"] == "context"
    assert result["breakdown"]["system prompt"] > 0 and result["breakdown"]["messages"] > 0
    assert "system prompt" in result["result"] and "tool schemas" in result["result"]
    completed, result = run_p(server, tmp_path, workspace, "/cost", "-c")
    assert completed.returncode == 0 and result["command"] == "cost" and "input" in result["result"]
    assert len(server.requests_to("/v1/chat/completions")) == 1  # neither command asked the model
    text = cli(["-c", "-p", "/context", "--provider", "openai", "--model", "model-test", "--base-url",
                server.base_url], home=tmp_path / "home", cwd=workspace)
    assert text.returncode == 0 and "system prompt" in text.stdout and "\x1b[" not in text.stdout


def test_a_prompt_that_only_starts_like_a_command_goes_to_the_model(server, tmp_path, workspace):
    server.provider = "openai"
    server.enqueue(Reply(text="Your context is fine."))
    completed, result = run_p(server, tmp_path, workspace, "/context please explain")
    assert result["stopped"] == "done" and result["result"] == "Your context is fine."


def test_with_automatic_compaction_off_a_full_context_names_compact_in_print_mode(server, tmp_path, workspace):
    server.provider = "openai"
    _history(server, tmp_path, workspace, turns=2)
    env = {"CODEAGENT_DISABLE_COMPACT": "1", "CODEAGENT_MAX_CONTEXT_TOKENS": "3000"}
    completed, result = run_p(server, tmp_path, workspace, "and one more question", "-c", env=env)
    assert completed.returncode == 1 and result["is_error"] is True
    assert '-p "/compact"' in result["result"] and "automatic compaction off" in result["result"]


# --- the REPL --------------------------------------------------------------------------------------
@pytest.fixture
def repl_on(spawn):
    def start(fake):
        return spawn("--provider", fake.provider, "--model", "model-test", "--base-url", fake.base_url,
                     env_extra={"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test",
                                "MINI_LETTA_MAX_RETRIES": "0", "MINI_LETTA_TIMEOUT": "10"})

    return start


def test_the_repl_names_each_incomplete_ending_next_to_the_reply(fake, repl_on):
    child = repl_on(fake)
    screen_after(child, r"context left")
    fake.enqueue(Reply(text="Answer: " + LONG_ANSWER, chunk_size=400, stop_reason=fake.length_stop))
    child.send("tell me about the importer\r")
    screen_after(child, r"Reply cut at the [\d,]+-token reply limit: the answer is incomplete")

    if isinstance(fake, FakeOpenAIServer):
        fake.enqueue(Reply(refusal="I can't help with that."))
    else:
        fake.enqueue(Reply(stop_reason="refusal"))
    child.send("do the forbidden thing\r")
    refused = screen_after(child, r"The model refused to answer\.")
    assert "empty reply" not in refused

    fake.enqueue(*[Reply(tool_calls=[CUT_CALL], stop_reason=fake.length_stop)
                   for _ in range(SETTINGS.loop.cut_call_retries + 1)])
    child.send("write big.txt\r")
    screen_after(child, r"was cut at the [\d,]+-token reply limit; it was asked to send it again")
    screen_after(child, r"Stopped: the model's tool call was cut at the [\d,]+-token reply limit")

    # Cut, and cut again when asked once more with more room.
    fake.enqueue(*[Reply(text="## Primary request and intent\nThe user asked about the imp",
                         stop_reason=fake.length_stop)] * 2)
    child.send("/compact\r")
    screen = screen_after(child, r"summary was cut at its [\d,]+-token\s+limit")
    assert "extractive" in screen or "without a model" in screen
    child.send("/exit\r")
    child.expect(pexpect.EOF)
