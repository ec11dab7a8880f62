"""End to end (issue 22): a session reads a settings module and a .env holding each reviewed secret
format; the session file keeps the code as written and none of the secrets, and after ``-c`` the
model is sent the files as they are on disk except for the secret values."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fakes import Reply
from fakes.openai_server import FakeOpenAIServer
from fault_support import cli, session_files
from mini_letta.trust.redact import MASK

sys.path.append(str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_redact import CORPUS  # noqa: E402

SETTINGS_PY = '''import os

from django.conf import settings
from openai import OpenAI

api_key = settings.OPENAI_API_KEY
DATABASE_PASSWORD = os.environ["DATABASE_PASSWORD"]


class Database:
    def __init__(self, cfg):
        self.user = cfg.user
        self.password_hash = cfg.password_hash

    def connect(self, driver):
        return driver.connect(user=self.user, password=self.password_hash)


def client() -> OpenAI:
    return OpenAI(api_key=api_key)
'''
FORMATS = ["mysql password glued to -p", "mysqldump quoted -p", "docker login -p", "bare npm token",
           "vault token env", "google oauth client secret", "sshpass -p", "redis-cli -a", "htpasswd -b",
           "jwt with signature"]


def dotenv() -> tuple[str, list[str]]:
    cases = {case["kind"]: case for case in json.loads(CORPUS.read_text(encoding="utf-8"))["secrets"]}
    lines = [cases[kind]["text"] for kind in FORMATS]
    return "\n".join(lines) + "\n", [cases[kind]["secret"] for kind in FORMATS]


def read_call(call_id: str, path: str) -> tuple[str, str, str]:
    return (call_id, "read_file", json.dumps({"path": path}))


def completions(server: FakeOpenAIServer) -> list[dict]:
    return [r.body for r in server.requests if r.path.startswith("/v1/chat/completions")]


def tool_results(body: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def test_settings_stay_as_written_and_secrets_never_reach_the_session_or_the_resumed_model(tmp_path, workspace):
    env_text, secrets = dotenv()
    (workspace / "settings.py").write_text(SETTINGS_PY)
    (workspace / ".env").write_text(env_text)
    home = tmp_path / "home"
    with FakeOpenAIServer() as server:
        server.enqueue(Reply(tool_calls=[read_call("call_settings", "settings.py"), read_call("call_env", ".env")]),
                       Reply(text="Read both."), Reply(text="Still here."))
        flags = ["--provider", "openai", "--model", "gpt-test", "--base-url", server.base_url]
        first = cli(["-p", "read settings.py and .env", *flags], home=home, cwd=workspace)
        assert first.returncode == 0, first.stderr
        live = tool_results(completions(server)[1])
        resumed_run = cli(["-c", "-p", "go on", *flags], home=home, cwd=workspace)
        assert resumed_run.returncode == 0, resumed_run.stderr
        resumed = tool_results(completions(server)[2])

    # What the model saw live is the files themselves (the check that the test reads real output).
    assert SETTINGS_PY.splitlines()[5] in live["call_settings"]
    assert all(secret in live["call_env"] for secret in secrets)

    [session] = session_files(home)
    stored = session.read_text(encoding="utf-8")
    leaked = [secret for secret in secrets if secret in stored]
    assert leaked == []
    assert json.dumps(live["call_settings"])[1:-1] in stored  # the code, byte for byte

    assert resumed["call_settings"] == live["call_settings"]
    expected_env = live["call_env"]
    for secret in sorted(secrets, key=len, reverse=True):
        expected_env = expected_env.replace(secret, MASK)
    # The one JWT case masks the whole token, of which the corpus' secret is a part.
    assert resumed["call_env"] == expected_env
