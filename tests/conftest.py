"""Every test runs with its own user data folder and without the caller's provider settings."""

import os

import pytest

_CLEARED_PREFIXES = ("CODEAGENT_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MINI_LETTA_HOME", str(tmp_path / "home"))
    from mini_letta import config

    config.take_notices()
    yield
    config.take_notices()
