"""Servers started the ways users start them: with no key and no --model."""

from __future__ import annotations

import pytest

from real_server_support import REPLY_CAP, CliSession, CountingProxy, session_prompt

pytestmark = pytest.mark.real_server


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_keyless_start_without_a_model_answers(provider, llama_servers, tmp_path):
    """Only the server's address: no API key, no --model. The first turn works and names the
    model the server lists."""
    server = llama_servers(4096)
    with CountingProxy(server.url, reply_cap=REPLY_CAP) as proxy:
        if provider == "openai":
            env, args = {"OPENAI_BASE_URL": proxy.url + "/v1"}, []
        else:
            env, args = {"ANTHROPIC_BASE_URL": proxy.url}, ["--provider", "anthropic"]
        turn = CliSession.create(tmp_path, env, args).say(session_prompt(1, words=20))
        assert turn.ok, turn.describe()
        assert turn.window == server.served_ctx()
        completions = proxy.completions()
        assert completions and [e for e in completions if e.rejected] == []
        assert {e.model for e in completions} == {server.model_id()}
        assert turn.result["model"] == server.model_id()
