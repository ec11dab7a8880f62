"""llama-server as a user starts it, ``-c 2048`` without ``-np``: four slots share one KV cache of
2,048 tokens, so two requests at once that together pass it both fail ("Context size has been
exceeded"). The summary prepared ahead of time while the user types is such a second request: a
turn sent while it runs must wait for it, not run next to it."""

from __future__ import annotations

import pytest

from agent_support import make_agent
from real_server_support import REPLY_CAP, CountingProxy, session_prompt

from mini_letta.providers.openai_provider import OpenAIProvider

pytestmark = pytest.mark.real_server

CTX = 2048


def test_a_turn_sent_while_the_summary_is_prepared_waits_for_it(llama_servers, tmp_path):
    server = llama_servers(CTX, slots=None)
    assert server.props().get("total_slots", 1) > 1 and server.served_ctx() == CTX  # slots share the cache
    with CountingProxy(server.url, reply_cap=REPLY_CAP) as proxy:
        provider = OpenAIProvider(server.model_id(), base_url=proxy.url + "/v1", api_key="none")
        assert not provider.serves_concurrently
        agent = make_agent(provider, tmp_path, lean_system="You are a helpful assistant.", tool_names=())
        notices: list[str] = []
        for number in range(1, 12):
            if agent.prepare_compaction():
                break
            agent.run_turn(session_prompt(number, words=120))
        assert agent.ahead.running, "the context never reached the point where a summary is prepared"
        # The user answers at once, with a message small enough that no compaction is due yet:
        # without waiting, this request and the summary's would share the 2,048 tokens.
        assert agent.context_tokens() < agent.budget.threshold
        from mini_letta.loop.agent import AgentEvents

        events = AgentEvents()
        events.notice = notices.append
        result = agent.run_turn("Thanks. One more short sentence, please.", events)
        assert [(e.status, e.error()) for e in proxy.rejections()] == []
        # llama-server says it inside a stream that began with 200, so look at the bodies too.
        assert [e for e in proxy.completions() if b"Context size has been exceeded" in e.body] == []
        assert not result.compactions  # (the reply itself is cut by the proxy's cap: REPLY_CAP)
        assert any("Waiting for the summary being prepared" in text for text in notices)
        summaries = [e for e in proxy.completions() if e.is_summary]
        assert summaries
