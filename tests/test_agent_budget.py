"""Context management through the real agent loop: preflight before every provider call, the floor
check, compaction on pressure and on overflow, usage anchoring, and CODEAGENT_DISABLE_COMPACT.

Scripted providers here enforce their window like a real server (``ContextOverflowError`` above it)
and report usage computed by ``request_tokens``, the same count the agent's budget makes locally.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from agent_support import make_agent, request_tokens, script, sized_text, tool_call
from fakes import Reply
from fakes.openai_server import FakeOpenAIServer, openai_usage

from mini_letta.compaction import CompactionRecord
from mini_letta.context import compaction_threshold, output_reserve
from mini_letta.conversation import Conversation
from mini_letta.errors import ContextFullError, ContextOverflowError, FloorTooHighError
from mini_letta.headless import run_print
from mini_letta.memory import CoreMemory
from mini_letta.messages import Message
from mini_letta.providers import create_provider
from mini_letta.sessions.store import load_session
from mini_letta.settings import SETTINGS

REPO = Path(__file__).resolve().parents[1]


def write_sources(workspace: Path, count: int, lines: int = 60) -> list[str]:
    names = []
    for index in range(count):
        name = f"module_{index}.py"
        body = "".join(f"def handler_{index}_{n}(request, cache):\n    return cache.get(request.key_{n}, {n})\n"
                       for n in range(lines // 2))
        (workspace / name).write_text(body, encoding="utf-8")
        names.append(name)
    return names


def chat_requests(provider):
    return [r for r in provider.requests if r.purpose == "chat"]


def preloaded(turns: int, tokens_per_message: int) -> Conversation:
    """A history of plain user/assistant turns without usage (nothing anchors the estimate)."""
    conversation = Conversation()
    for turn in range(turns):
        conversation.append(Message.user(f"question {turn}: " + sized_text(tokens_per_message, seed=turn)))
        conversation.append(Message.assistant(f"answer {turn}: " + sized_text(tokens_per_message, seed=turn + 1)))
    return conversation


def run_cli(args: list[str], cwd: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEAGENT_", "OPENAI_", "ANTHROPIC_", "OLLAMA_"))}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "mini_letta", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


# --- a long tool loop is checked before every round ---------------------------------------------

def test_tool_loop_compacts_between_rounds_and_never_sends_more_than_the_window(tmp_path):
    window = 8_192
    names = write_sources(tmp_path, 10)
    provider = script([*(tool_call("read_file", path=name) for name in names), "All ten files read."],
                      window=window, count=request_tokens)
    agent = make_agent(provider, tmp_path)
    threshold = compaction_threshold(window)

    result = agent.run_turn("Read every module and tell me what they do.")

    assert result.stopped == "done" and result.text == "All ten files read."
    assert result.steps == 11
    # The ten reads together are far more than the threshold: compaction had to act mid-turn.
    results = [m for m in agent.conversation.messages if m.role == "tool"]
    assert len(results) == 10
    assert result.compactions and all(r.trigger == "context_pressure" for r in result.compactions)
    assert provider.overflows == 0
    for request in provider.requests:
        assert request_tokens(request) <= window
    for request in chat_requests(provider):
        assert request_tokens(request) + request.max_tokens <= window
    for record in result.compactions:
        assert record.tokens_after <= threshold < record.tokens_before


def test_one_tool_output_takes_at_most_the_room_before_the_threshold_less_a_reply(tmp_path):
    window = 4_096
    (tmp_path / "big.py").write_text("".join(f"value_{n} = compute({n}, cache)\n" for n in range(3_000)))
    provider = script([tool_call("read_file", path="big.py"), "Read it."], window=window, count=request_tokens)
    agent = make_agent(provider, tmp_path, window=window, lean_system="You are a coding agent.",
                       tool_names=("read_file",))
    result = agent.run_turn("read big.py")

    assert result.stopped == "done" and result.compactions == []
    messages = agent.conversation.messages
    output = next(m for m in messages if m.role == "tool")
    before = agent.budget.calibration.request(agent.system_prompt(), agent.tool_specs(), messages[:2])
    room = compaction_threshold(window) - before - output_reserve(window)
    assert room / 2 < agent.budget.counter.count_message(output) <= room
    assert "call read_file with offset=" in output.text


# --- the floor check ------------------------------------------------------------------------------

def test_floor_error_names_ollama_context_length_and_sends_nothing(tmp_path):
    with FakeOpenAIServer() as server:
        # Even the compact floor of a small window (~600 tokens) does not fit 512.
        server.ollama_loaded = {"llama3.2:latest": 512}
        provider = create_provider("ollama", "llama3.2", base_url=server.base_url)
        agent = make_agent(provider, tmp_path, memory=CoreMemory.for_workspace(tmp_path))
        assert agent.prompt.compact_floor()
        floor = agent.budget.calibration.floor(agent.system_prompt(), agent.tool_specs())
        assert floor > compaction_threshold(512)

        with pytest.raises(FloorTooHighError) as caught:
            agent.run_turn("hi")

        assert "OLLAMA_CONTEXT_LENGTH=8192 ollama serve" in str(caught.value)
        assert f"{floor:,} tokens" in str(caught.value)
        assert server.requests_to("/api/ps")
        assert server.requests_to("/v1/chat/completions") == []


def test_floor_error_through_the_cli_is_one_line_and_exit_code_one(tmp_path):
    with FakeOpenAIServer() as server:
        server.ollama_available = {"llama3.2:latest": 512}
        completed = run_cli(["-p", "hi", "--provider", "ollama", "--base-url", server.base_url],
                            cwd=tmp_path, env_extra={"MINI_LETTA_HOME": str(tmp_path / "home")})
        assert server.requests_to("/api/generate")  # the model was loaded to learn its window
        assert server.requests_to("/v1/chat/completions") == []
    assert completed.returncode == 1
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("mini-letta: ") and "OLLAMA_CONTEXT_LENGTH=8192 ollama serve" in lines[0]
    assert "Traceback" not in completed.stderr


# --- usage anchoring ----------------------------------------------------------------------------

def test_state_after_a_compaction_is_a_fresh_estimate_not_the_old_usage(tmp_path):
    # The provider reports 1.5x the local count, so stale usage would stand out from a fresh estimate.
    provider = script([f"reply {n}: " + sized_text(150, seed=n) for n in range(6)],
                      count=lambda request: int(request_tokens(request) * 1.5))
    # A window small enough that summarising six turns clearly shrinks the context.
    agent = make_agent(provider, tmp_path, window=12_000)
    for n in range(6):
        agent.run_turn(f"prompt {n}: " + sized_text(150, seed=n + 3))
    anchored = agent.budget.size(agent.system_prompt(), agent.tool_specs(), agent.conversation)
    assert anchored.anchored

    record = agent.compact_now()

    after = agent.budget.size(agent.system_prompt(), agent.tool_specs(), agent.conversation)
    assert not after.anchored
    assert agent.context_state().tokens == record.tokens_after < record.tokens_before
    assert agent.context_state().tokens < anchored.total


def test_openai_cached_tokens_are_not_counted_twice_in_json_context(tmp_path):
    prompt_tokens, cached, completion = 5_000, 4_000, 20
    with FakeOpenAIServer() as server:
        server.enqueue(Reply(text="Hello there.", usage=openai_usage(prompt_tokens, completion, cached=cached)))
        completed = run_cli(["-p", "hi", "--provider", "openai", "--model", "gpt-4.1", "--base-url",
                             server.base_url, "--output-format", "json"],
                            cwd=tmp_path, env_extra={"MINI_LETTA_HOME": str(tmp_path / "home"),
                                                     "OPENAI_API_KEY": "test-key"})
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert result["context"]["tokens"] == prompt_tokens + completion
    assert result["usage"]["input_tokens"] + result["usage"]["cache_read_tokens"] == prompt_tokens
    assert result["usage"]["cache_read_tokens"] == cached


def test_memory_edit_moves_the_estimate_at_once_although_usage_predates_it(tmp_path):
    memory = CoreMemory.for_workspace(tmp_path)
    provider = script(["Noted."], count=request_tokens)
    agent = make_agent(provider, tmp_path, window=200_000, memory=memory)
    agent.run_turn("Hello.")
    before = agent.budget.size(agent.system_prompt(), agent.tool_specs(), agent.conversation)
    floor_before = before.floor
    assert before.anchored

    fact = sized_text(600, seed=5)[:2_000]  # 2,000 chars: the block's whole limit
    outcome = agent.toolbox.run(tool_call("core_memory_append", label="human", content=fact).tool_calls[0])
    assert not outcome.is_error, outcome.text

    after = agent.budget.size(agent.system_prompt(), agent.tool_specs(), agent.conversation)
    assert after.anchored  # still the same reply's usage, corrected by the floor's change
    growth = after.floor - floor_before
    fact_tokens = agent.budget.counter.count_text(fact)
    assert len(fact) == 2_000 and fact_tokens <= growth <= fact_tokens + 10  # plus the new size label
    assert agent.context_state().tokens - before.total == growth


# --- CODEAGENT_DISABLE_COMPACT ------------------------------------------------------------------

def _agent_with_request_of(tmp_path, target_tokens: int, provider, window: int):
    """An agent whose next request (after the user's prompt) is ``target_tokens``, locally counted."""
    agent = make_agent(provider, tmp_path, window=window)
    floor = agent.budget.calibration.floor(agent.system_prompt(), agent.tool_specs())
    prompt_message_overhead = agent.budget.counter.count_message(Message.user("x")) - \
        agent.budget.counter.count_text("x")
    return agent, sized_text(target_tokens - floor - prompt_message_overhead)


# The design says "any non-empty value": "0", "false" and "off" disable it as "1" does.
@pytest.mark.parametrize("value", ["1", "0", "false", "off", "no"])
def test_disabled_compaction_sends_a_request_over_the_threshold_without_compacting(tmp_path, monkeypatch, value):
    monkeypatch.setenv("CODEAGENT_DISABLE_COMPACT", value)
    window = 4_096
    provider = script(["Fine."], count=request_tokens, window=window)
    target = compaction_threshold(window) + 60  # over the threshold, under the 5%-left stop
    agent, prompt = _agent_with_request_of(tmp_path, target, provider, window)
    assert not agent.budget.auto_compact

    result = agent.run_turn(prompt)

    assert result.text == "Fine." and agent.compactions == []
    assert request_tokens(provider.requests[0]) > compaction_threshold(window)


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_disable_compact_leaves_compaction_on(tmp_path, monkeypatch, value):
    monkeypatch.setenv("CODEAGENT_DISABLE_COMPACT", value)
    window = 4_096
    agent = make_agent(script([], count=request_tokens, window=window), tmp_path, window=window)
    assert agent.budget.auto_compact


def test_disabled_compaction_blocks_a_full_context_and_sends_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEAGENT_DISABLE_COMPACT", "1")
    window = 4_096
    provider = script([], count=request_tokens, window=window)
    agent, prompt = _agent_with_request_of(tmp_path, window - output_reserve(window) - 20, provider, window)

    with pytest.raises(ContextFullError) as caught:
        agent.run_turn(prompt)

    message = str(caught.value)
    assert "/compact" in message and "/clear" in message and "CODEAGENT_DISABLE_COMPACT" in message
    assert provider.requests == [] and agent.compactions == []
    # Refused, so it must not block every later message: out of the context, and out of a resumed one.
    assert prompt not in [m.text for m in agent.conversation.messages]
    if agent.session is not None:
        assert prompt not in [m.text for m in load_session(agent.session.path).messages_in_context]


def test_disabled_compaction_is_honoured_on_provider_overflow(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEAGENT_DISABLE_COMPACT", "1")
    overflow = ContextOverflowError("prompt is too long", provider="scripted", status=400, limit=4_096, actual=5_000)
    provider = script([overflow])
    agent = make_agent(provider, tmp_path, window=200_000, conversation=preloaded(14, 100))
    messages_before = len(agent.conversation.messages)

    with pytest.raises(ContextFullError) as caught:
        agent.run_turn("one more question")

    assert "automatic compaction is off" in str(caught.value) and "/compact" in str(caught.value)
    assert agent.compactions == []
    # The window the server named is learned and the context no longer fits it: the message that
    # could not be answered is withdrawn rather than left to block every later turn.
    assert agent.budget.window == 4_096
    assert len(agent.conversation.messages) == messages_before
    assert [r.purpose for r in provider.requests] == ["chat"]


def test_with_compaction_disabled_a_rejection_is_answered_by_a_smaller_request_not_a_compaction(tmp_path, monkeypatch):
    """The learned window brings the compact floor: the same history, sent again with it and a reply
    sized to the window, fits; nothing is compacted."""
    monkeypatch.setenv("CODEAGENT_DISABLE_COMPACT", "1")
    overflow = ContextOverflowError("prompt is too long", provider="scripted", status=400, limit=4_096, actual=5_000)
    provider = script([overflow, "Here is the answer."])
    agent = make_agent(provider, tmp_path, window=200_000, conversation=preloaded(8, 100))
    assert agent.run_turn("one more question").text == "Here is the answer."
    assert agent.compactions == [] and agent.budget.window == 4_096
    first, retry = provider.requests
    assert len(retry.system) < len(first.system) and retry.max_tokens < first.max_tokens
    assert retry.messages[-1].text == "one more question"


def test_manual_compact_works_while_automatic_compaction_is_disabled(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEAGENT_DISABLE_COMPACT", "1")
    provider = script([])
    agent = make_agent(provider, tmp_path, window=200_000, conversation=preloaded(12, 200))

    record = agent.compact_now("keep the parser details")

    assert record.trigger == "manual" and record.focus == "keep the parser details"
    assert "summarize" in record.layers and record.tokens_after < record.tokens_before
    assert agent.conversation.messages[0].kind == "summary"
    summary_requests = [r for r in provider.requests if r.purpose == "summary"]
    assert len(summary_requests) == 1 and "keep the parser details" in summary_requests[0].messages[-1].text


# --- the overflow path --------------------------------------------------------------------------

def test_provider_overflow_compacts_and_the_retry_succeeds(tmp_path):
    window = 8_192
    # The provider's tokenizer counts 1.6x ours: our estimate says "fits", the server disagrees.
    provider = script(["Answered after compaction."], window=window,
                      count=lambda request: int(request_tokens(request) * 1.6))
    agent = make_agent(provider, tmp_path, window=window, conversation=preloaded(14, 150))
    # Under the threshold by our count with the new message too (so no compaction before the
    # request), far over it by the server's.
    local = agent.context_tokens() + agent.budget.calibration.count_message(Message.user("and now?"))
    assert local <= compaction_threshold(window) < local * 1.6

    result = agent.run_turn("and now?")

    assert result.text == "Answered after compaction." and result.stopped == "done"
    assert provider.overflows >= 1
    assert result.compactions and all(r.trigger == "context_overflow" for r in result.compactions)
    assert len(result.compactions) <= SETTINGS.max_overflow_retries
    last = chat_requests(provider)[-1]
    assert int(request_tokens(last) * 1.6) <= window


def test_overflow_retries_stop_after_three_compactions_in_a_turn(tmp_path):
    names = write_sources(tmp_path, 3)

    def overflow():
        return ContextOverflowError("request too large", provider="scripted", status=413)

    # Every other call is rejected: each retry succeeds, then the tool loop's next call is rejected again.
    replies = []
    for name in names:
        replies += [overflow(), tool_call("read_file", path=name)]
    provider = script([*replies, overflow(), "never sent"])
    # A window roomy enough that each compaction keeps some turns verbatim, so every retry finds
    # something left to compact (in a small window the first one keeps only the newest step).
    agent = make_agent(provider, tmp_path, window=16_000, conversation=preloaded(40, 100))

    with pytest.raises(ContextFullError) as caught:
        agent.run_turn("read the modules")

    assert f"after {SETTINGS.max_overflow_retries} compactions" in str(caught.value)
    assert [r.trigger for r in agent.compactions] == ["context_overflow"] * SETTINGS.max_overflow_retries
    assert len(chat_requests(provider)) == 2 * SETTINGS.max_overflow_retries + 1


# --- compaction records in -p JSON --------------------------------------------------------------

def test_print_mode_json_lists_compactions_with_every_field(tmp_path):
    window = 8_192
    names = write_sources(tmp_path, 8)
    provider = script([*(tool_call("read_file", path=name) for name in names), "Done reading."],
                      window=window, count=request_tokens)
    # Earlier prose that clearing tool results cannot shrink, so the compaction also summarises.
    agent = make_agent(provider, tmp_path, conversation=preloaded(10, 140))
    stdout, stderr = io.StringIO(), io.StringIO()

    code = run_print(agent, "Read all modules.", "json", "session-1", stdout=stdout, stderr=stderr)

    assert code == 0, stderr.getvalue()
    result = json.loads(stdout.getvalue())
    fields = {f.name for f in dataclasses.fields(CompactionRecord)}
    assert result["compactions"]
    for record in result["compactions"]:
        assert set(record) == fields
        assert record["trigger"] == "context_pressure"
        assert record["tokens_after"] < record["tokens_before"]
        assert record["messages_after"] <= record["messages_before"]
        assert record["layers"] and record["duration_ms"] >= 0
    summarized = [r for r in result["compactions"] if "summarize" in r["layers"]]
    assert summarized and all(r["files_read"] and set(r["files_read"]) <= set(names) for r in summarized)
    assert all(r["summary_chars"] > 0 for r in summarized)
    assert re.search(r"[Ss]ummarized \d+ older messages: [\d.]+k? → [\d.]+k? tokens, \d+% left", stderr.getvalue())
    assert "context_pressure" not in stderr.getvalue()  # the jargon stays in the JSON
