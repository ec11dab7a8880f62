"""Servers started the ways users start them: with no key and no --model, and with two slots
(``-np 2``), where each request gets its slot's share of ``-c``."""

from __future__ import annotations

import pytest

from real_server_support import REPLY_CAP, CliSession, CountingProxy, session_prompt, user_environment

pytestmark = pytest.mark.real_server


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_keyless_start_without_a_model_answers(provider, llama_servers, tmp_path):
    """Only the server's address: no API key, no --model. The first turn works and names the
    model the server lists."""
    server = llama_servers(4096)
    with CountingProxy(server.url, reply_cap=REPLY_CAP) as proxy:
        env, args = user_environment(provider, proxy.url)
        turn = CliSession.create(tmp_path, env, args).say(session_prompt(1, words=20))
        assert turn.ok, turn.describe()
        assert turn.window == server.served_ctx()
        completions = proxy.completions()
        assert completions and [e for e in completions if e.rejected] == []
        assert {e.model for e in completions} == {server.model_id()}
        assert turn.result["model"] == server.model_id()


def test_two_slots_use_the_per_slot_window(llama_servers, tmp_path):
    """``-np 2``: the window is one slot's context (``/props`` n_ctx), never the whole ``-c``; a session
    long enough to compact is never rejected."""
    server = llama_servers(4096, slots=2)
    per_slot = server.served_ctx()
    assert server.props().get("total_slots") == 2
    with CountingProxy(server.url, reply_cap=REPLY_CAP) as proxy:
        session = CliSession.create(tmp_path, {"OPENAI_BASE_URL": proxy.url + "/v1"})
        for number in range(1, 11):
            session.say(session_prompt(number))
            if session.compactions():
                session.say(session_prompt(number + 1))
                break
        assert [(n, t.describe()) for n, t in enumerate(session.turns, 1) if not t.ok] == []
        assert {turn.window for turn in session.turns} == {per_slot}
        assert [(e.status, e.error()) for e in proxy.rejections()] == []
        records = session.compactions()
        assert records and {r["trigger"] for r in records} == {"context_pressure"}
