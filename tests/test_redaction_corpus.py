"""Redaction measured on a corpus (tests/redaction_corpus.json: realistic secrets in the lines a tool
prints, look-alike non-secrets: hashes, UUIDs, git ids, base64 of code, and realistic code that must
come back byte-identical), and the secrets from the issues never reaching a session file, a memory
file, the input history or the error log."""

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
from mini_letta.trust.redact import MASK, credential_values, redact_text
from mini_letta.toolbox import approve_all

# The benchmark measures the corpus, the tests hold it to its figures: one measurement, at the root.
sys.path.append(str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_redact import corpus_figures, expected_masking  # noqa: E402

CORPUS = json.loads((Path(__file__).parent / "redaction_corpus.json").read_text(encoding="utf-8"))
SECRETS, NON_SECRETS, CODE = CORPUS["secrets"], CORPUS["non_secrets"], CORPUS["code"]
# Measured 83/83 and 0/50 (benchmarks/bench_redact.py); the thresholds leave room for a detector
# update to trade one case either way, not for a regression. Code has no such room: a changed line
# is code the model is later sent wrong.
MIN_RECALL = 0.95
MAX_FALSE_POSITIVES = 2
# The formats a second review found written in clear (issue 22).
SECOND_REVIEW = ["mysql password glued to -p", "mysqldump quoted -p", "docker login -p", "bare npm token",
                 "vault token env", "google oauth client secret", "sshpass -p", "redis-cli -a", "htpasswd -b",
                 "jwt with signature"]


@pytest.fixture(scope="module")
def figures():
    return corpus_figures()

# The secrets a review found written in clear by a scripted `env | grep TOKEN; cat .env` turn.
REVIEWED = ["anthropic auth token in env", "postgres url password", "stripe live key", "aws secret key",
            "google api key", "hugging face token", "jwt", "http basic header", "password assignment"]


def masked(case: dict) -> bool:
    return case["secret"] not in redact_text(case["text"], literals=[])


def test_the_corpus_is_big_enough_to_mean_something():
    assert len(SECRETS) >= 40 and len(NON_SECRETS) >= 40
    assert {case["kind"] for case in SECRETS} >= set(REVIEWED) | set(SECOND_REVIEW)
    assert sum(len(sample["text"].splitlines()) for sample in CODE) >= 100


def test_recall_on_the_corpus(figures, report_figure):
    found = figures["secrets"] - len(figures["missed"])
    report_figure(f"redaction corpus: recall {found}/{figures['secrets']} secrets masked")
    assert found / figures["secrets"] >= MIN_RECALL, figures["missed"]


def test_every_code_line_comes_back_byte_identical(figures, report_figure):
    identical = figures["code_lines"] - len(figures["code_changed"])
    report_figure(f"redaction corpus: {identical}/{figures['code_lines']} code lines byte-identical")
    assert figures["code_changed"] == []


def test_only_the_secret_value_is_masked(figures):
    assert figures["inexact"] == []


def test_false_positives_on_the_corpus(figures, report_figure):
    report_figure(f"redaction corpus: {len(figures['false_positives'])}/{figures['non_secrets']} look-alikes changed")
    assert len(figures["false_positives"]) <= MAX_FALSE_POSITIVES, figures["false_positives"]


@pytest.mark.parametrize("kind", REVIEWED + SECOND_REVIEW)
def test_every_secret_from_the_reviews_is_masked_and_nothing_else(kind):
    case = next(case for case in SECRETS if case["kind"] == kind)
    assert redact_text(case["text"], literals=[]) == expected_masking(case)


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
    # The model reads command output masked as the session file holds it (Builtins._bash).
    assert auth_token not in tool_output and secrets[1] not in tool_output and MASK in tool_output

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


# --- what the model writes: tool-call arguments are JSON, a file is one line with "\n" in it ------
def _as_written(text: str) -> str:
    return json.dumps({"path": "config/app.env", "content": text})


def test_code_the_model_writes_comes_back_byte_identical():
    changed = [sample["kind"] for sample in CODE
               if redact_text(_as_written(sample["text"]), literals=[]) != _as_written(sample["text"])]
    assert changed == []


def test_secrets_in_a_file_the_model_writes_are_masked():
    written = [redact_text(_as_written("# settings\n" + case["text"] + "\n"), literals=[]) for case in SECRETS]
    missed = [case["kind"] for case, text in zip(SECRETS, written) if json.dumps(case["secret"])[1:-1] in text]
    assert (len(SECRETS) - len(missed)) / len(SECRETS) >= MIN_RECALL, missed
