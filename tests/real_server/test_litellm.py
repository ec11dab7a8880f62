"""Through a LiteLLM proxy in front of llama-server, one scenario per provider. LiteLLM wraps the
server's overflow error into its own message string (``litellm.ContextWindowExceededError: …
{"error": {… "n_ctx": 2048}}``) and reports no window, so mini-letta starts from a guess and
meets the limit by a rejection: it must read the wrapped limit, compact to a context that is
smaller (never larger), finish the turn, and not be rejected again.

Rejections are counted between LiteLLM and llama-server, on the server's side.
"""

from __future__ import annotations

import pytest

from real_server_support import REPLY_CAP, CliSession, CountingProxy, LiteLLMProxy, session_prompt

pytestmark = pytest.mark.real_server

SERVED = 2048
MODEL = "smollm2"
MAX_TURNS_TO_OVERFLOW = 6
TURNS_AFTER = 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_wrapped_overflow_ends_in_a_smaller_context_and_a_successful_turn(provider, llama_servers, litellm,
                                                                          tmp_path):
    server = llama_servers(SERVED)
    with CountingProxy(server.url, reply_cap=REPLY_CAP) as proxy:
        gateway = litellm(proxy.url + "/v1", MODEL)
        if provider == "openai":
            env = {"OPENAI_BASE_URL": gateway.url + "/v1", "OPENAI_API_KEY": LiteLLMProxy.MASTER_KEY}
            args = ["--model", MODEL]
        else:
            env = {"ANTHROPIC_BASE_URL": gateway.url, "ANTHROPIC_API_KEY": LiteLLMProxy.MASTER_KEY}
            args = ["--provider", "anthropic", "--model", MODEL]
        session = CliSession.create(tmp_path, env, args)
        rejected_at = None
        for number in range(1, MAX_TURNS_TO_OVERFLOW + 1):
            session.say(session_prompt(number, words=450))
            if proxy.rejections():
                rejected_at = number
                break
        assert rejected_at is not None, (
            f"the server never rejected a request in {len(session.turns)} turns; last: {session.turns[-1].describe()}")
        for extra in range(TURNS_AFTER):
            session.say(session_prompt(100 + extra, words=450))

        failed = [(n, t.describe()) for n, t in enumerate(session.turns, 1) if not t.ok]
        assert failed == []
        records = session.compactions()
        # In the learned 2,048-token window the compact floor may make the room by itself; otherwise
        # the rejection's turn compacts as an overflow.
        rejected_turn = session.turns[rejected_at - 1]
        assert (any(r["trigger"] == "context_overflow" for r in rejected_turn.compactions)
                or "compact system prompt and short tool descriptions" in rejected_turn.stderr)
        assert [r for r in records if r["tokens_after"] >= r["tokens_before"]] == []
        # Learned from the wrapped error, kept for the rest of the session.
        assert [t.window for t in session.turns[rejected_at - 1:]] == [SERVED] * (TURNS_AFTER + 1)
        completions = proxy.completions()
        first = next(i for i, e in enumerate(completions) if e.rejected)
        assert completions[first + 1:] and [e for e in completions[first + 1:] if e.rejected] == []
