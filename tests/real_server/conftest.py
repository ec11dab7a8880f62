"""Fixtures of the real-server suite: llama-server (started once per configuration for the whole
run, always stopped) and LiteLLM. Each test puts its own CountingProxy in front of the server.

Without a prepared server these tests skip, saying how to prepare one; in CI
(``MINI_LETTA_REAL_SERVER_REQUIRED=1``, set by ``.ci/run``) they fail instead.
"""

from __future__ import annotations

import pytest

import real_server_support as support


@pytest.fixture(scope="session")
def prepared() -> support.Prepared:
    found = support.locate()
    if found is None:
        message = f"llama-server and the SmolLM2 model are not prepared: {support.PREPARE_HINT}"
        if support.required():
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def llama_servers(prepared, tmp_path_factory):
    """``start(ctx, slots=1)``: a running llama-server for that configuration, shared by the run
    (``slots=None``: the server's default slots)."""
    running: dict[tuple[int, int | None], support.LlamaServer] = {}
    log_dir = tmp_path_factory.mktemp("llama-logs")

    def start(ctx: int, slots: int | None = 1) -> support.LlamaServer:
        key = (ctx, slots)
        if key not in running:
            running[key] = support.LlamaServer(prepared, ctx, slots, log_dir=log_dir).start()
        return running[key]

    try:
        yield start
    finally:
        for server in running.values():
            server.stop()


@pytest.fixture
def litellm(prepared, tmp_path):
    """``start(api_base, model_name)``: a LiteLLM proxy routing ``model_name`` to ``api_base``."""
    if prepared.litellm is None:
        message = f"LiteLLM is not prepared: {support.PREPARE_HINT}"
        if support.required():
            pytest.fail(message)
        pytest.skip(message)
    started: list[support.LiteLLMProxy] = []

    def start(api_base: str, model_name: str) -> support.LiteLLMProxy:
        work = tmp_path / f"litellm-{len(started)}"
        work.mkdir()
        proxy = support.LiteLLMProxy(prepared, api_base, model_name, work).start()
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.stop()
