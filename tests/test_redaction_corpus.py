"""Redaction measured on a corpus (tests/redaction_corpus.json: realistic secrets in the lines a tool
prints, and look-alike non-secrets: hashes, UUIDs, git ids, base64 of code), and the secrets from the
issue never reaching a session file, a memory file, the input history or the error log."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from mini_letta import config
from mini_letta.app import Options, build_agent
from mini_letta.messages import Message, ToolCall, new_id
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.redact import MASK, credential_values, redact_text
from mini_letta.toolbox import approve_all

CORPUS = json.loads((Path(__file__).parent / "redaction_corpus.json").read_text(encoding="utf-8"))
SECRETS, NON_SECRETS = CORPUS["secrets"], CORPUS["non_secrets"]
# Measured 50/50 and 0/47 (benchmarks/bench_redact.py); the thresholds leave room for a detector
# update to trade one case either way, not for a regression.
MIN_RECALL = 0.95
MAX_FALSE_POSITIVES = 2

# The secrets a review found written in clear by a scripted `env | grep TOKEN; cat .env` turn.
REVIEWED = ["anthropic auth token in env", "postgres url password", "stripe live key", "aws secret key",
            "google api key", "hugging face token", "jwt", "http basic header", "password assignment"]


def masked(case: dict) -> bool:
    return case["secret"] not in redact_text(case["text"], literals=[])


def test_the_corpus_is_big_enough_to_mean_something():
    assert len(SECRETS) >= 40 and len(NON_SECRETS) >= 40
    assert {case["kind"] for case in SECRETS} >= set(REVIEWED)


def test_recall_on_the_corpus():
    missed = [case["kind"] for case in SECRETS if not masked(case)]
    assert (len(SECRETS) - len(missed)) / len(SECRETS) >= MIN_RECALL, missed


def test_false_positives_on_the_corpus():
    changed = [case["kind"] for case in NON_SECRETS if redact_text(case["text"], literals=[]) != case["text"]]
    assert len(changed) <= MAX_FALSE_POSITIVES, changed


@pytest.mark.parametrize("kind", REVIEWED)
def test_every_secret_from_the_review_is_masked(kind):
    case = next(case for case in SECRETS if case["kind"] == kind)
    assert masked(case)


def test_credential_environment_variables_are_masked_by_value_and_others_are_not():
    environ = {"ANTHROPIC_AUTH_TOKEN": "plain-words-token-1", "GITHUB_TOKEN": "another-plain-value",
               "AWS_SECRET_ACCESS_KEY": "aws-plain-value-9", "PGPASSWORD": "db-pass-value",
               "TIKTOKEN_CACHE_DIR": "tiktoken-cache-dir", "GOOGLE_APPLICATION_CREDENTIALS": "/home/me/key.json",
               "HOME_TOKEN_NOTE": "short", "EDITOR": "vim-with-options"}
    assert set(credential_values(environ)) == {"plain-words-token-1", "another-plain-value", "aws-plain-value-9",
                                               "db-pass-value"}


def _reviewed_env_file() -> str:
    lines = []
    for kind in REVIEWED[1:]:
        lines.append(next(case["text"] for case in SECRETS if case["kind"] == kind))
    return "\n".join(lines) + "\n"


def test_a_scripted_env_and_dotenv_turn_leaks_nothing_to_disk(tmp_path, monkeypatch, workspace):
    auth_token = "tok-" + "Zq81mPx4Lw2Ns7Vd"  # a shape no rule knows: masked because mini-letta reads it
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", auth_token)
    (workspace / ".env").write_text(_reviewed_env_file())
    # The first reviewed secret is ANTHROPIC_AUTH_TOKEN itself, here in the environment instead.
    secrets = [auth_token] + [next(case["secret"] for case in SECRETS if case["kind"] == kind) for kind in REVIEWED[1:]]

    def model(request):
        last = request.messages[-1]
        if last.role == "user":
            return Message.assistant("Checking.", [ToolCall(new_id("call_"), "bash",
                                                            json.dumps({"command": "env | grep TOKEN; cat .env"}))])
        if last.role == "tool" and "core_memory" not in last.tool_name:
            return Message.assistant("", [ToolCall(new_id("call_"), "core_memory_append", json.dumps(
                {"label": "project", "content": "Deploy with " + _reviewed_env_file().replace("\n", " ")}))])
        return "Noted the credentials."

    agent = build_agent(Options(workspace=workspace), approve_all, provider=ScriptedProvider(default=model))
    agent.run_turn("env | grep TOKEN; cat .env and remember what you need " + secrets[2])
    tool_output = next(m.text for m in agent.conversation.messages if m.role == "tool")
    assert auth_token in tool_output and secrets[1] in tool_output  # the model saw the real output

    from mini_letta.repl.history import RedactingFileHistory

    history_file = config.home() / "history"
    RedactingFileHistory(str(history_file)).store_string(
        "use " + _reviewed_env_file().replace("\n", " and ") + " with " + auth_token)
    try:
        raise RuntimeError("could not connect: " + _reviewed_env_file().splitlines()[0] + " as " + auth_token)
    except RuntimeError:
        from mini_letta.cli import _save_traceback

        log = Path(_save_traceback())

    memory_file = agent.memory.path
    files = {"session": agent.session.path, "memory": memory_file, "history": history_file, "log": log}
    for name, path in files.items():
        text = path.read_text(encoding="utf-8")
        assert MASK in text, name
        for secret in secrets:
            assert secret not in text, (name, secret)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    for folder in (config.home(), agent.session.path.parent, memory_file.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_an_existing_history_file_is_made_private(tmp_path):
    from mini_letta.repl.history import RedactingFileHistory

    path = tmp_path / "history"
    path.write_text("")
    os.chmod(path, 0o644)
    RedactingFileHistory(str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_the_error_log_is_private_and_replaced_not_appended(tmp_path):
    from mini_letta.cli import _save_traceback

    for attempt in range(2):
        try:
            raise ValueError(f"attempt {attempt}")
        except ValueError:
            log = Path(_save_traceback())
    assert "attempt 1" in log.read_text() and "attempt 0" not in log.read_text()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
