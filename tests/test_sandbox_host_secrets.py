"""The sandbox hides the host's sockets and credentials (issue 32): an agent's socket cannot be
reached, credential variables are not in a command's environment, the files tools keep logins in
are hidden, and a tool result never shows what redaction masks. Each test also runs with the
protection switched off, where the same command succeeds, so it can fail.

Sockets and the fake home live under /var/tmp: /tmp is private inside the sandbox and would hide
them for the wrong reason.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from mini_letta.messages import ToolCall
from mini_letta.toolbox import Toolbox, approve_all, builtins, host_secrets, sandbox as sandbox_module
from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings

pytestmark = pytest.mark.usefixtures("bubblewrap")  # conftest.py: skip, or fail in CI, without it

REPLY = "agent-reached-3f9c"
CONNECT = (f"{sys.executable} -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); "
           "s.connect(sys.argv[1]); print(s.recv(64).decode())' ")


@pytest.fixture
def root(monkeypatch):
    folder = Path(tempfile.mkdtemp(prefix="mini-letta-host-", dir="/var/tmp"))
    for name in ("ws", "home", "data"):
        (folder / name).mkdir()
    monkeypatch.setenv("HOME", str(folder / "home"))
    monkeypatch.setenv("MINI_LETTA_HOME", str(folder / "data"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def serve(path: Path) -> socket.socket:
    """A unix socket at ``path`` that answers every connection with REPLY, as an agent would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)

    def answer():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.sendall(REPLY.encode())

    threading.Thread(target=answer, daemon=True).start()
    return server


def run(root: Path, command: str, **settings) -> str:
    box = Toolbox(root / "ws", approve_all,
                  sandbox=Sandbox.create(root / "ws", SandboxSettings(**settings), root / "data"))
    return box.run(ToolCall("call_1", "bash", json.dumps({"command": command}))).text


def switch_off_sockets(monkeypatch):
    monkeypatch.setattr(sandbox_module, "host_sockets", lambda environ: [])


@pytest.mark.parametrize("where", ["SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "runtime folder",
                                   "gpgconf", "under /run"])
def test_a_host_socket_cannot_be_reached_inside(where, root, monkeypatch):
    agent = root / "run" / "user" / "0" / "agent.sock"
    server = serve(agent)
    try:
        if where == "SSH_AUTH_SOCK":
            monkeypatch.setenv("SSH_AUTH_SOCK", str(agent))
        elif where == "GPG_AGENT_INFO":
            monkeypatch.setenv("GPG_AGENT_INFO", f"{agent}:0:1")
        elif where == "DBUS_SESSION_BUS_ADDRESS":
            monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={agent},guid=1234;tcp:host=localhost")
        elif where == "runtime folder":
            monkeypatch.setattr(host_secrets, "HOST_SOCKETS", (str(root / "run" / "user"),))
        elif where == "gpgconf":
            monkeypatch.setattr(host_secrets, "_gpg_sockets", lambda: (agent,))
        else:
            monkeypatch.setattr(host_secrets, "SOCKET_FOLDERS", (str(root / "run"),))
        inside = run(root, CONNECT + str(agent))
        assert REPLY not in inside and "[exit code 1]" in inside
        switch_off_sockets(monkeypatch)
        assert REPLY in run(root, CONNECT + str(agent))
    finally:
        server.close()


def test_the_real_runtime_folder_and_docker_socket_are_among_the_hidden(root, monkeypatch):
    for path in ("/run/user", "/run/docker.sock", "/var/run/docker.sock"):
        assert path in host_secrets.HOST_SOCKETS
    if Path("/run/user").is_dir():
        line = Sandbox.create(root / "ws", SandboxSettings(), root / "data").wrap(["true"])
        assert "/run/user" in [line[i + 1] for i, word in enumerate(line) if word == "--tmpfs"]


SECRETS = {"GITHUB_TOKEN": "gh-value-1", "AWS_SECRET_ACCESS_KEY": "aws-value-2", "ANTHROPIC_API_KEY": "an-value-3",
           "MY_DB_PASSWORD": "db-value-4", "GOOGLE_APPLICATION_CREDENTIALS": "/k.json", "SSH_AUTH_SOCK": "/x.sock",
           "GPG_AGENT_INFO": "/y:1:1", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/z"}


def test_credential_variables_are_not_in_the_commands_environment(root, monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ORDINARY_SETTING", "kept")
    command = "env; tr '\\0' '\\n' < /proc/1/environ"
    inside = run(root, command)
    assert "ORDINARY_SETTING=kept" in inside
    assert [name for name in SECRETS if name in inside] == []
    assert "GITHUB_TOKEN" in run(root, command, keep_env=("GITHUB_TOKEN",))
    monkeypatch.setattr(sandbox_module, "command_environment", lambda environ, keep: dict(environ))
    assert all(name in run(root, command) for name in SECRETS)


@pytest.mark.parametrize("name", [".git-credentials", ".config/git/credentials", ".config/gh/hosts.yml", ".pypirc",
                                  ".npmrc", ".cargo/credentials.toml", ".cargo/credentials", ".kube/config",
                                  ".netrc", ".ssh/id_rsa", ".aws/credentials", ".docker/config.json"])
def test_credential_files_in_home_are_hidden(name, root, monkeypatch):
    secret = root / "home" / name
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("login-for-the-test-8d2e\n")
    assert "login-for-the-test-8d2e" not in run(root, f"cat {secret}")
    monkeypatch.setattr(sandbox_module, "SECRETS_IN_HOME", ())
    assert "login-for-the-test-8d2e" in run(root, f"cat {secret}")


def test_a_commands_output_never_shows_what_redaction_masks(root, monkeypatch):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    monkeypatch.setenv("MY_SERVICE_TOKEN", "s3rv1ce-t0ken-value-77")
    (root / "ws" / "notes.txt").write_text(f"token: {token}\n")
    command = "cat notes.txt; echo s3rv1ce-t0ken-value-77"
    for mode in ("workspace-write", "off"):
        box = Toolbox(root / "ws", approve_all,
                      sandbox=Sandbox.create(root / "ws", SandboxSettings(mode), root / "data"))
        text = box.run(ToolCall("call_1", "bash", json.dumps({"command": command}))).text
        assert token not in text and "s3rv1ce-t0ken-value-77" not in text and "[REDACTED]" in text, mode
    monkeypatch.setattr(builtins, "masked", lambda outcome: outcome)
    assert token in run(root, command)


def test_where_the_environment_says_the_agents_are():
    environ = {"SSH_AUTH_SOCK": "/a/ssh.sock", "GPG_AGENT_INFO": "/b/S.gpg-agent:123:1",
               "DBUS_SESSION_BUS_ADDRESS": "unix:abstract=/tmp/x;unix:path=/c/bu%73,guid=9", "DOCKER_HOST": "unix:///d.sock",
               "XDG_RUNTIME_DIR": "/run/user/1000"}
    assert [str(p) for p in host_secrets._named_sockets(environ)] == [
        "/a/ssh.sock", "/run/user/1000", "/b/S.gpg-agent", "/c/bus", "/d.sock"]
    assert host_secrets.secret_variables({**environ, "PATH": "/bin", "HF_TOKEN": "x", "PGPASSWORD": "y"}) == [
        "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "GPG_AGENT_INFO", "HF_TOKEN", "PGPASSWORD", "SSH_AUTH_SOCK"]


@pytest.mark.skipif(shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None,
                    reason="needs OpenSSH's ssh-agent and ssh-add")
def test_ssh_add_cannot_reach_the_users_agent_and_the_model_is_told_why(root, monkeypatch):
    import subprocess

    socket_path = root / "agent" / "ssh.sock"
    socket_path.parent.mkdir()
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket_path)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if socket_path.exists():
                break
            threading.Event().wait(0.05)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(socket_path))
        inside = run(root, "ssh-add -l")
        assert "no identities" not in inside and "an agent, bus or daemon of the host" in inside, inside
        inside = run(root, f"SSH_AUTH_SOCK={socket_path} ssh-add -l")  # the path typed in full
        assert "no identities" not in inside, inside
        switch_off_sockets(monkeypatch)
        monkeypatch.setattr(sandbox_module, "command_environment", lambda environ, keep: dict(environ))
        assert "The agent has no identities" in run(root, "ssh-add -l")
    finally:
        agent.terminate()
        agent.wait()


def test_keep_env_comes_from_the_users_settings_and_a_bad_one_is_one_notice(tmp_path):
    from mini_letta.notices import Notices
    from mini_letta.toolbox.sandbox import load_settings

    (tmp_path / "settings.json").write_text(json.dumps({"sandbox": {"keep_env": ["GITHUB_TOKEN"]}}))
    assert load_settings(tmp_path).keep_env == ("GITHUB_TOKEN",)
    (tmp_path / "settings.json").write_text(json.dumps({"sandbox": {"keep_env": "GITHUB_TOKEN"}}))
    channel = Notices()
    assert load_settings(tmp_path, say=channel.say).keep_env == ()
    assert any("keep_env" in notice for notice in channel.take())
