"""Provider faults over real HTTP: error statuses, retry storms, refused connections, broken streams.

Each fault must end in one clear line (or a retry that succeeds), with the user's message kept,
the history valid and the session file intact, and the next turn must work.
"""

from __future__ import annotations

import dataclasses
import json
import socket

import pytest
from fakes import Fault, Reply, both_openai_apis, openai_provider_name
from fakes.anthropic_server import FakeAnthropicServer, anthropic_usage
from fault_support import anthropic_agent, check_history, cli, error_lines, openai_agent, session_files

from mini_letta.errors import AuthenticationError, ProviderError
from mini_letta.sessions.store import load_session

FAST_RETRY = {"retry-after-ms": "20"}


@pytest.fixture
def anthropic_server():
    with FakeAnthropicServer() as fake:
        yield fake


def fails_cleanly(agent, prompt: str, error_type=ProviderError) -> str:
    """Run a turn that must fail with one line; the next turn must still work."""
    with pytest.raises(error_type) as caught:
        agent.run_turn(prompt)
    message = str(caught.value)
    assert message and "\n" not in message and "Traceback" not in message
    check_history(agent, prompt)
    return message


def next_turn_works(agent, server, prompt="still there?"):
    server.enqueue(Reply(text="yes"))
    assert agent.run_turn(prompt).text == "yes"
    check_history(agent, prompt)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@both_openai_apis
# --- HTTP error statuses ---------------------------------------------------------------------------
@pytest.mark.parametrize("status, error_type, words", [
    (401, AuthenticationError, "OPENAI_API_KEY"),
    (403, AuthenticationError, "authentication failed"),
    (404, ProviderError, "does not know the model"),
    (400, ProviderError, "rejected the request"),
])
@pytest.mark.fault
def test_client_errors_are_not_retried_and_end_in_one_line(monkeypatch, server, workspace, status, error_type, words):
    agent = openai_agent(monkeypatch, server, workspace, retries=2)
    server.enqueue(Fault(status, "nope"))
    message = fails_cleanly(agent, f"hello {status}", error_type)
    assert words in message
    assert len(server.completions()) == 1
    next_turn_works(agent, server)


@both_openai_apis
@pytest.mark.fault
def test_rate_limit_with_retry_after_is_retried_and_the_turn_succeeds(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace, retries=2)
    server.enqueue(Fault(429, "slow down", headers=FAST_RETRY), Reply(text="after the wait"))
    assert agent.run_turn("rate limited once").text == "after the wait"
    assert len(server.completions()) == 2
    check_history(agent, "rate limited once")


@both_openai_apis
@pytest.mark.fault
def test_rate_limit_without_retry_after_backs_off_then_succeeds(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace, retries=1)
    server.enqueue(Fault(429, "slow down"), Reply(text="ok now"))
    assert agent.run_turn("no retry-after").text == "ok now"
    assert len(server.completions()) == 2
    check_history(agent, "no retry-after")


@both_openai_apis
@pytest.mark.fault
def test_rate_limit_that_outlasts_the_retries_says_to_wait(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace, retries=2)
    server.enqueue(*[Fault(429, "quota", headers=FAST_RETRY) for _ in range(3)])
    assert "rate limited" in fails_cleanly(agent, "storm of 429")
    assert len(server.completions()) == 3
    next_turn_works(agent, server)


@both_openai_apis
@pytest.mark.parametrize("status", [500, 502, 503])
@pytest.mark.fault
def test_server_error_storm_is_retried_then_reported(monkeypatch, server, workspace, status):
    agent = openai_agent(monkeypatch, server, workspace, retries=2)
    server.enqueue(*[Fault(status, "overloaded", headers=FAST_RETRY) for _ in range(3)])
    message = fails_cleanly(agent, f"storm {status}")
    assert f"HTTP {status}" in message and "try again" in message
    assert len(server.completions()) == 3
    next_turn_works(agent, server)


@both_openai_apis
@pytest.mark.fault
def test_a_short_server_error_storm_is_ridden_out(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace, retries=2)
    server.enqueue(Fault(503, headers=FAST_RETRY), Fault(500, headers=FAST_RETRY), Reply(text="recovered"))
    assert agent.run_turn("two failures then fine").text == "recovered"
    check_history(agent, "two failures then fine")


@both_openai_apis
@pytest.mark.fault
def test_connection_refused_names_the_address(monkeypatch, workspace, server):
    agent = openai_agent(monkeypatch, server, workspace, retries=1)
    dead = f"http://127.0.0.1:{free_port()}/v1"
    agent.provider.base_url = dead
    message = fails_cleanly(agent, "anyone home?")
    assert "could not reach openai" in message and dead in message


@both_openai_apis
# --- broken streams ----------------------------------------------------------------------------
@pytest.mark.parametrize("reply, words", [
    (Reply(text="a reply that is cut off in the middle", cut_after=4), "broke off"),
    (Reply(text="a reply with a broken event", malformed_after=3), "broke off"),
    (Reply(text="a reply that stalls mid-way", stall=30, stall_after=3), "timed out"),
    (Reply(text="never starts", stall=30), "timed out"),
    (Reply(text="an error event", error_after=2), "error during the reply"),
], ids=["cut", "malformed", "stall-mid-stream", "stall-before-headers", "error-event"])
@pytest.mark.fault
def test_a_broken_stream_ends_the_turn_with_one_line_and_keeps_the_prompt(monkeypatch, server, workspace,
                                                                           reply, words):
    agent = openai_agent(monkeypatch, server, workspace)
    server.enqueue(reply)
    message = fails_cleanly(agent, "tell me something")
    assert words in message
    next_turn_works(agent, server)


@both_openai_apis
@pytest.mark.fault
def test_text_streamed_before_a_stream_broke_off_stays_in_the_history(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    server.enqueue(Reply(text="the first half arrives and then the line drops", chunk_size=4, cut_after=6))
    fails_cleanly(agent, "tell me a long story")
    partial = agent.conversation.messages[-1]
    assert partial.role == "assistant" and partial.meta["interrupted"]
    assert partial.text and "the first half arrives and then the line drops".startswith(partial.text)
    check_history(agent, "tell me a long story")
    next_turn_works(agent, server)


@both_openai_apis
@pytest.mark.parametrize("usage", [None, (0, 0)], ids=["missing", "zero"])
@pytest.mark.bad_input
def test_missing_or_zero_usage_falls_back_to_local_counts(monkeypatch, server, workspace, usage):
    agent = openai_agent(monkeypatch, server, workspace)
    usage = usage and server.api_usage(*usage)
    server.enqueue(Reply(text="no usage here", usage=usage), Reply(text="again", usage=usage))
    first = agent.run_turn("count yourself")
    agent.run_turn("and again")
    assert first.text == "no usage here"
    state = agent.context_state()
    assert 0 < state.tokens < state.window
    assert agent.conversation.messages[-1].usage is None
    check_history(agent, "count yourself", "and again")


# --- Anthropic ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fault, words", [
    (Fault(401, "invalid x-api-key"), "ANTHROPIC_API_KEY"),
    (Fault(404, "model: nope"), "does not know the model"),
    (Fault(529, "Overloaded"), "HTTP 529"),
    (Reply(text="cut short here", cut_after=5), "broke off"),
    (Reply(text="bad event", malformed_after=4), "broke off"),
    (Reply(text="stalls", stall=30, stall_after=3), "timed out"),
], ids=["401", "404", "529", "cut", "malformed", "stall"])
@pytest.mark.fault
def test_anthropic_faults_end_in_one_line(monkeypatch, anthropic_server, workspace, fault, words):
    agent = anthropic_agent(monkeypatch, anthropic_server, workspace)
    anthropic_server.enqueue(fault)
    assert words in fails_cleanly(agent, "hello claude")
    anthropic_server.enqueue(Reply(text="fine"))
    assert agent.run_turn("retry please").text == "fine"
    check_history(agent, "hello claude", "retry please")


@pytest.mark.bad_input
def test_anthropic_zero_usage_is_no_anchor(monkeypatch, anthropic_server, workspace):
    agent = anthropic_agent(monkeypatch, anthropic_server, workspace)
    anthropic_server.enqueue(Reply(text="zeros", usage=anthropic_usage(0, 0)))
    assert agent.run_turn("usage zero").text == "zeros"
    assert 0 < agent.context_state().tokens
    check_history(agent, "usage zero")


# --- as the user runs it -------------------------------------------------------------------------
def print_json(server, tmp_path, workspace, prompt, *extra, env=None):
    completed = cli(["-p", prompt, "--provider", openai_provider_name(server), "--base-url", server.base_url, "--output-format", "json",
                     *extra], home=tmp_path / "cli-home", cwd=workspace, env=env)
    return completed, json.loads(completed.stdout)


@pytest.mark.fault
def test_print_mode_reports_an_auth_failure_in_one_line_and_leaves_no_session(server, tmp_path, workspace):
    server.enqueue(Reply(text="the earlier conversation"))
    completed, earlier = print_json(server, tmp_path, workspace, "earlier prompt")
    assert completed.returncode == 0
    server.enqueue(Fault(401, "Incorrect API key provided"))
    completed, result = print_json(server, tmp_path, workspace, "first prompt")
    assert completed.returncode == 1
    assert error_lines(completed.stderr) == [f"mini-letta: {result['result']}"]
    assert result["is_error"] is True and "OPENAI_API_KEY" in result["result"]
    # Failed before any reply: no session for -c to take instead of the conversation before it.
    assert result["session_id"] is None
    [path] = session_files(tmp_path / "cli-home")
    assert path.stem == earlier["session_id"]
    server.enqueue(Reply(text="continued"))
    completed, result = print_json(server, tmp_path, workspace, "second prompt", "--continue")
    assert completed.returncode == 0 and result["result"] == "continued"
    sent = server.requests_to("/v1/chat/completions")[-1].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["earlier prompt", "second prompt"]


@both_openai_apis
@pytest.mark.fault
def test_print_mode_retries_a_server_error_storm_as_configured(server, tmp_path, workspace):
    server.enqueue(Fault(503, headers=FAST_RETRY), Fault(503, headers=FAST_RETRY), Reply(text="third time"))
    completed, result = print_json(server, tmp_path, workspace, "retry me", env={"MINI_LETTA_MAX_RETRIES": "2"})
    assert completed.returncode == 0 and result["result"] == "third time"
    assert len(server.completions()) == 3


@pytest.mark.fault
def test_print_mode_with_an_unreachable_server_fails_in_one_line(tmp_path, workspace):
    url = f"http://127.0.0.1:{free_port()}/v1"
    completed = cli(["-p", "hello?", "--provider", "openai", "--base-url", url], home=tmp_path / "h", cwd=workspace)
    assert completed.returncode == 1
    [line] = error_lines(completed.stderr)
    assert line.startswith(f"mini-letta: nothing answers at {url} (connection refused)") and completed.stdout == ""
    with_model = cli(["-p", "hello?", "--provider", "openai", "--base-url", url, "--model", "m"],
                     home=tmp_path / "h", cwd=workspace)
    [line] = error_lines(with_model.stderr)
    assert line.startswith("mini-letta: could not reach openai") and "nothing is listening there" in line


@both_openai_apis
@pytest.mark.parametrize("fault", [Fault(500, "summarizer down"), Reply(text="half a summ", cut_after=3),
                                   Reply(text="")], ids=["500", "cut", "empty"])
@pytest.mark.fault
def test_a_failing_summarizer_falls_back_and_the_turn_still_runs(monkeypatch, server, workspace, fault):
    # Our own summarizer failing: the Responses API's own compaction would answer first.
    monkeypatch.setenv("MINI_LETTA_COMPACTION_NATIVE", "off")
    agent = openai_agent(monkeypatch, server, workspace)
    prompts = [f"question {turn} " + "detail " * 400 for turn in range(6)]
    for turn, prompt in enumerate(prompts):
        server.enqueue(Reply(text=f"answer {turn} " + "words " * 400, usage=None))
        agent.run_turn(prompt)
    # As if CODEAGENT_AUTO_COMPACT_WINDOW put the threshold at 70% of what is in use now.
    agent.budget.window_info = dataclasses.replace(agent.budget.window_info,
                                                   auto_compact_window=agent.context_tokens() * 7 // 8)
    server.enqueue(fault, Reply(text="answered after compacting"))
    result = agent.run_turn("the last question")
    assert result.text == "answered after compacting" and len(result.compactions) == 1
    assert "extractive" in result.compactions[0].layers and "summarize" not in result.compactions[0].layers
    loaded = check_history(agent, "the last question")
    assert set(prompts) <= {m.text for m in loaded.all_messages}  # compacted away, still on disk
