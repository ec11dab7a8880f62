"""Windows a user got wrong, corrected by the server: mini-letta is told a window far larger than
llama-server serves (``CODEAGENT_MAX_CONTEXT_TOKENS``), so one request is rejected; the stated limit
is learned, the turn recovers, and no request of the session is rejected again, in later ``-c``
runs too (where the override is still set)."""

from __future__ import annotations

import pytest

from real_server_support import CliSession, session_prompt

pytestmark = pytest.mark.real_server

SERVED = 2048
OVERRIDE = 32_768
# At ~300 words a turn the history passes 2,048 tokens within a few turns.
MAX_TURNS_TO_OVERFLOW = 8
TURNS_AFTER = 3


@pytest.fixture(scope="module")
def overridden_session(llama_servers, tmp_path_factory):
    from real_server_support import REPLY_CAP, CountingProxy

    server = llama_servers(SERVED)
    with CountingProxy(server.url, reply_cap=REPLY_CAP) as proxy:
        session = CliSession.create(tmp_path_factory.mktemp("override"),
                                    {"OPENAI_BASE_URL": proxy.url + "/v1",
                                     "CODEAGENT_MAX_CONTEXT_TOKENS": str(OVERRIDE)})
        rejected_at = None
        for number in range(1, MAX_TURNS_TO_OVERFLOW + 1):
            session.say(session_prompt(number))
            if proxy.rejections():
                rejected_at = number
                break
        for extra in range(TURNS_AFTER if rejected_at else 0):
            session.say(session_prompt(100 + extra))
        yield session, proxy, rejected_at, server.served_ctx()


def test_the_too_large_window_is_rejected_once_and_learned(overridden_session):
    session, proxy, rejected_at, served = overridden_session
    assert rejected_at is not None, f"the server never rejected a request in {len(session.turns)} turns"
    assert [(e.status, e.error()) for e in proxy.rejections()][1:] == [], "rejected again after learning"
    after = session.turns[rejected_at - 1:]
    assert [turn.window for turn in after] == [served] * len(after)


def test_the_rejected_turn_recovers_and_later_turns_succeed(overridden_session):
    session, _, rejected_at, _ = overridden_session
    assert rejected_at is not None
    failed = [(n, t.describe()) for n, t in enumerate(session.turns, 1) if not t.ok]
    assert failed == []
    overflow = [r for r in session.turns[rejected_at - 1].compactions if r["trigger"] == "context_overflow"]
    assert overflow, "the rejected turn did not compact after the overflow"
    assert all(r["tokens_after"] < r["tokens_before"] for r in session.compactions())


def test_every_request_after_the_rejection_fits(overridden_session):
    _, proxy, rejected_at, served = overridden_session
    assert rejected_at is not None
    completions = proxy.completions()
    first = next(i for i, e in enumerate(completions) if e.rejected)
    later = completions[first + 1:]
    assert later, "nothing was sent after the rejection"
    over = [(e.prompt_tokens(), e.max_tokens) for e in later
            if e.rejected or e.prompt_tokens() + (e.max_tokens or 0) > served]
    assert over == []
