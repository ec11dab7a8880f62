"""Long plain sessions against llama-server with a real model, as a new user runs them: only the
server's address, no key, no --model, ~300-word prompts with ``-p`` then ``-c``, until the context
has been compacted at least twice.

What is checked is what the server and the agent did: the server rejected nothing, every turn
succeeded, the window used is the one the server serves, compactions ran by pressure and shrank the
context, and every request (the summarizer's included) fitted prompt + max_tokens in the window.
"""

from __future__ import annotations

import pytest

from real_server_support import REPLY_CAP, CliSession, CountingProxy, session_prompt, user_environment

pytestmark = pytest.mark.real_server

# Enough turns for two compactions at -c 4096 with room to spare; the loop stops once it has them.
MAX_TURNS = 16
COMPACTIONS_WANTED = 2


SETUPS = {"openai-c4096": ("openai", 4096), "openai-c2048": ("openai", 2048),
          "anthropic-c4096": ("anthropic", 4096)}


class LongSession:
    def __init__(self, session: CliSession, proxy: CountingProxy, server):
        self.session, self.proxy, self.server = session, proxy, server
        self.served_ctx = server.served_ctx()


@pytest.fixture(scope="module", params=list(SETUPS))
def long_session(request, llama_servers, tmp_path_factory):
    provider, ctx = SETUPS[request.param]
    server = llama_servers(ctx)
    with CountingProxy(server.url, reply_cap=REPLY_CAP) as proxy:
        env, args = user_environment(provider, proxy.url)
        session = CliSession.create(tmp_path_factory.mktemp(request.param), env, args)
        for number in range(1, MAX_TURNS + 1):
            session.say(session_prompt(number))
            if len(session.compactions()) >= COMPACTIONS_WANTED:
                session.say(session_prompt(number + 1))  # and one turn after the last compaction
                break
        yield LongSession(session, proxy, server)


def test_every_turn_succeeds(long_session):
    failed = [(n, t.describe()) for n, t in enumerate(long_session.session.turns, 1) if not t.ok]
    assert not failed


def test_the_server_rejects_no_request(long_session):
    rejections = [(e.status, e.error()) for e in long_session.proxy.rejections()]
    assert rejections == []
    assert len(long_session.proxy.completions()) >= len(long_session.session.turns)


def test_window_is_the_served_context(long_session):
    windows = {turn.window for turn in long_session.session.turns}
    assert windows == {long_session.served_ctx}


def test_compactions_run_by_pressure_and_shrink_the_context(long_session):
    records = long_session.session.compactions()
    assert len(records) >= COMPACTIONS_WANTED, f"{len(long_session.session.turns)} turns made {len(records)} compactions"
    assert {record["trigger"] for record in records} == {"context_pressure"}
    grew = [r for r in records if r["tokens_after"] >= r["tokens_before"]]
    assert grew == []


def test_every_request_fits_prompt_plus_reply_budget(long_session):
    """The server's own count of each prompt, plus the max_tokens the agent asked for, is within the
    served window: the reply budget always fits what is left."""
    over = []
    for exchange in long_session.proxy.completions():
        if exchange.rejected:
            continue  # counted by test_the_server_rejects_no_request
        prompt = exchange.prompt_tokens()
        assert prompt is not None, f"no usage in a {exchange.status} reply to {exchange.path}"
        if prompt + (exchange.max_tokens or 0) > long_session.served_ctx:
            over.append((prompt, exchange.max_tokens, exchange.has_tools))
    assert over == []


def test_summarizer_requests_near_the_limit_fit(long_session):
    """Pressure compaction summarises a history close to the threshold: the summarizer's own request
    (the one without tools) reaches the server and fits with its max_tokens. SmolLM2 writes until
    its limit, and a summary cut there is not installed as if whole: the extractive summary stands
    in, and the record says why (never a request the server refused)."""
    records = long_session.session.compactions()
    summarising = [r for r in records if {"summarize", "extractive"} & set(r["layers"])]
    assert summarising, f"no compaction summarised the history: {records}"
    assert [r["layers"] for r in records if "extractive" in r["layers"] and not r.get("summary_rejected")] == []
    summaries = [e for e in long_session.proxy.completions() if e.is_summary]
    assert len(summaries) >= len(summarising)
    assert [(e.status, e.error()) for e in summaries if e.rejected] == []
    for exchange in summaries:
        assert exchange.prompt_tokens() + (exchange.max_tokens or 0) <= long_session.served_ctx


def test_no_model_means_the_served_model(long_session):
    """With no --model, requests name the model the server lists, not a hosted model's name."""
    served = long_session.server.model_id()
    assert {e.model for e in long_session.proxy.completions()} == {served}
