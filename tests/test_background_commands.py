"""Background commands (issue 49, item 4): ``bash`` with ``run_in_background`` returns a shell id;
``bash_output`` reads the new output, ``kill_bash`` stops the whole tree; in the sandbox exactly as
a foreground command (its clean-up when it ends or is killed); approved as a foreground command;
and every one is gone when mini-letta ends: after a ``-p`` run, and at interpreter exit (atexit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fakes import Reply
from fault_support import cli, pid_alive
from mini_letta.messages import ToolCall
from mini_letta.permission_mode import PLAN, PermissionMode
from mini_letta.settings import SETTINGS
from mini_letta.toolbox import Toolbox, approve_all
from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings

# A loop that says its pid, then runs until it is stopped; a second one leaves the group (setsid).
LOOP = "echo $$ > {name}.pid; while :; do echo tick; sleep 0.2; done"
ESCAPING = "setsid sh -c 'echo $$ > escaped.pid; while :; do sleep 0.2; done' & " + LOOP


def call(toolbox: Toolbox, name: str, **arguments) -> object:
    return toolbox.run(ToolCall(id=f"call_{name}", name=name, arguments=json.dumps(arguments)))


def pid_in(path: Path, wait: float = 10.0) -> int:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def gone(pid: int, wait: float = 5.0) -> bool:
    deadline = time.monotonic() + wait
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not pid_alive(pid)


def until_ended(toolbox: Toolbox, shell_id: str, wait: float = 10.0) -> str:
    deadline = time.monotonic() + wait
    seen = ""
    while time.monotonic() < deadline:
        seen += call(toolbox, "bash_output", bash_id=shell_id).text
        if "has ended" in seen:
            return seen
        time.sleep(0.1)
    raise AssertionError(f"{shell_id} never ended: {seen}")


@pytest.fixture
def toolbox(workspace):
    box = Toolbox(workspace, approve_all)
    yield box
    box.background.close()


def test_a_background_command_returns_at_once_and_its_output_is_read_in_pieces(toolbox, workspace):
    assert "bash_output" not in [spec.name for spec in toolbox.specs()]  # not sent before the first one
    started = call(toolbox, "bash", command="echo one; sleep 0.5; echo two; exit 3", run_in_background=True)
    assert "bash_1" in started.text and not started.is_error
    names = [spec.name for spec in toolbox.specs()]
    assert names[-2:] == ["bash_output", "kill_bash"]
    first = call(toolbox, "bash_output", bash_id="bash_1")
    ended = until_ended(toolbox, "bash_1")
    both = first.text + ended
    assert both.count("one") == 1 and both.count("two") == 1  # each line read once
    assert "exit code 3" in ended
    assert toolbox.background.listing()[0].state == "exit code 3"


def test_the_filter_keeps_the_lines_it_matches_and_a_bad_one_is_one_sentence(toolbox):
    call(toolbox, "bash", command="printf 'GET /a 200\\nGET /b 500\\nGET /c 200\\n'", run_in_background=True)
    time.sleep(0.3)
    read = call(toolbox, "bash_output", bash_id="bash_1", filter=r" 5\d\d$")
    assert "GET /b 500" in read.text and "GET /a" not in read.text
    bad = call(toolbox, "bash_output", bash_id="bash_1", filter="(x")
    assert bad.is_error and "invalid regular expression" in bad.text
    unknown = call(toolbox, "bash_output", bash_id="bash_7")
    assert unknown.is_error and "bash_1" in unknown.text


def test_a_key_the_command_prints_is_masked_as_in_a_foreground_command(toolbox):
    from mini_letta.trust.redact import MASK

    key = "ghp_0123456789abcdefghijABCDEFGHIJ"
    foreground = call(toolbox, "bash", command=f"echo token={key}")
    call(toolbox, "bash", command=f"echo token={key}", run_in_background=True)
    background = until_ended(toolbox, "bash_1")
    for text in (foreground.text, background):
        assert key not in text and f"token={MASK}" in text


def test_a_key_printed_in_two_writes_is_masked_whole(toolbox, workspace):
    """Each read is masked on its own: while the command runs, a read stops at the last line end, so
    the key's first half waits for its second instead of going to the model unrecognised."""
    from mini_letta.trust.redact import MASK

    key = "ghp_0123456789abcdefghijABCDEFGHIJ"
    go = workspace / "go"  # inside the workspace: a sandboxed command has a /tmp of its own
    call(toolbox, "bash", run_in_background=True,
         command=f"printf 'first line\\ntoken={key[:12]}'; while [ ! -e {go} ]; do sleep 0.05; done; "
                 f"printf '{key[12:]}\\n'; sleep 30")
    first, deadline = "", time.monotonic() + 10
    while "first line" not in first and time.monotonic() < deadline:
        first += call(toolbox, "bash_output", bash_id="bash_1").text
        time.sleep(0.05)
    assert "first line" in first and key[:12] not in first and "of a line not finished yet" in first
    go.touch()
    second, deadline = "", time.monotonic() + 10
    while "token=" not in second and time.monotonic() < deadline:
        second += call(toolbox, "bash_output", bash_id="bash_1").text
        time.sleep(0.05)
    assert f"token={MASK}" in second and key[:12] not in second and key[12:] not in second
    call(toolbox, "kill_bash", shell_id="bash_1")


def test_output_over_the_cap_drops_the_oldest_and_says_how_much(toolbox, monkeypatch):
    monkeypatch.setattr(SETTINGS.tools, "background_buffer_bytes", 1_000)
    call(toolbox, "bash", command="seq 1 2000", run_in_background=True)
    deadline = time.monotonic() + 10
    while toolbox.background.listing()[0].state == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    read = call(toolbox, "bash_output", bash_id="bash_1").text  # one read, after it ended
    assert "2000\n" in read and "\n1\n" not in read
    assert "bytes of older output were dropped" in read


def test_kill_bash_stops_the_whole_tree_even_a_child_that_left_the_group(toolbox, workspace):
    call(toolbox, "bash", command=ESCAPING.format(name="loop"), run_in_background=True)
    loop, escaped = pid_in(workspace / "loop.pid"), pid_in(workspace / "escaped.pid")
    time.sleep(0.5)  # the reader's tree walk has seen the escaped child
    killed = call(toolbox, "kill_bash", shell_id="bash_1")
    assert "Killed bash_1" in killed.text and not killed.is_error
    assert gone(loop) and gone(escaped)
    assert "killed by SIGTERM" in call(toolbox, "bash_output", bash_id="bash_1").text
    assert "already ended" in call(toolbox, "kill_bash", shell_id="bash_1").text


def test_the_number_running_at_once_is_limited(toolbox, monkeypatch):
    monkeypatch.setattr(SETTINGS.tools, "background_max_running", 1)
    call(toolbox, "bash", command="sleep 30", run_in_background=True)
    refused = call(toolbox, "bash", command="sleep 30", run_in_background=True)
    assert refused.is_error and "kill_bash" in refused.text


def test_a_background_command_is_approved_as_a_foreground_one(workspace):
    asked = []
    nobody = Toolbox(workspace, None)
    refused = call(nobody, "bash", command="touch made", run_in_background=True)
    assert refused.is_error and "approval" in refused.text and not (workspace / "made").exists()
    asking = Toolbox(workspace, lambda call, summary: asked.append(summary) or False)
    assert call(asking, "bash", command="touch made", run_in_background=True).is_error
    assert asked == ["run in the background: touch made"] and not (workspace / "made").exists()
    planning = Toolbox(workspace, approve_all)
    planning.permissions.mode = PermissionMode(PLAN)
    assert call(planning, "bash", command="touch made", run_in_background=True).is_error
    time.sleep(0.3)
    assert not (workspace / "made").exists() and planning.background.listing() == []


@pytest.fixture
def sandboxed(workspace, tmp_path, bubblewrap):
    sandbox = Sandbox.create(workspace, SandboxSettings(mode="workspace-write"), tmp_path / "data")
    box = Toolbox(workspace, None, sandbox=sandbox)  # nobody to ask: only sandboxed commands run
    yield box
    box.background.close()


def test_in_the_sandbox_what_it_created_is_removed_when_bash_output_sees_it_end(sandboxed, workspace):
    started = call(sandboxed, "bash", command="echo '{}' > .mcp.json; cat ~/.ssh/id_rsa 2>&1; echo made",
                   run_in_background=True)
    assert not started.is_error, started.text
    ended = until_ended(sandboxed, "bash_1")
    assert "made" in ended and "the sandbox removed them" in ended and ".mcp.json" in ended
    assert not (workspace / ".mcp.json").exists()


def test_in_the_sandbox_kill_bash_cleans_up_and_a_new_repository_is_disarmed(sandboxed, workspace):
    command = ("git init -q nested && git -C nested config core.fsmonitor 'touch /tmp/pwned' && "
               "mkdir .mini-letta && echo started && sleep 60")
    call(sandboxed, "bash", command=command, run_in_background=True)
    deadline = time.monotonic() + 10
    while not (workspace / ".mini-letta").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    killed = call(sandboxed, "kill_bash", shell_id="bash_1")
    assert "Killed bash_1" in killed.text and ".mini-letta" in killed.text
    assert not (workspace / ".mini-letta").exists()
    config = (workspace / "nested" / ".git" / "config").read_text()
    assert "fsmonitor" not in config


def test_in_the_sandbox_the_session_end_cleans_up_what_was_never_read(sandboxed, workspace):
    call(sandboxed, "bash", command="touch .mcp.json; sleep 60", run_in_background=True)
    deadline = time.monotonic() + 10
    while not (workspace / ".mcp.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandboxed.background.close() == 1
    assert not (workspace / ".mcp.json").exists()


def test_a_command_left_running_ends_at_interpreter_exit(workspace):
    """The backstop: a program that builds a toolbox, starts a command and exits without closing."""
    script = textwrap.dedent(f"""
        import json, sys, time
        from pathlib import Path
        from mini_letta.messages import ToolCall
        from mini_letta.toolbox import Toolbox, approve_all
        box = Toolbox({str(workspace)!r}, approve_all)
        command = {ESCAPING.format(name="loop")!r}
        box.run(ToolCall(id="c", name="bash", arguments=json.dumps({{"command": command, "run_in_background": True}})))
        while not (Path({str(workspace)!r}) / "escaped.pid").exists():
            time.sleep(0.05)
        time.sleep(0.5)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert gone(pid_in(workspace / "loop.pid")) and gone(pid_in(workspace / "escaped.pid"))


def wait_for(name: str) -> str:
    """A foreground command that returns once the background one has written its pid."""
    return f"for i in $(seq 100); do [ -s {name} ] && break; sleep 0.1; done; cat {name}"


def processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and pid_alive(int(entry)):
            try:
                if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def run_print(server, tmp_path: Path, workspace: Path, sandbox: str) -> dict:
    completed = cli(["--provider", "openai", "--model", "gpt-4.1", "--base-url", server.base_url, "--yolo",
                     "--output-format", "json", "-p", "start the server"], home=tmp_path / "home", cwd=workspace,
                    env={"MINI_LETTA_SANDBOX": sandbox})
    assert completed.returncode == 0, completed.stderr + completed.stdout
    return json.loads(completed.stdout)


def tool_results(server) -> list[str]:
    last = server.requests_to("/v1/chat/completions")[-1].body["messages"]
    return [m["content"] for m in last if m["role"] == "tool"]


def test_print_mode_a_background_loop_and_its_escaped_child_are_gone_when_the_run_ends(server, tmp_path, workspace):
    server.enqueue(
        Reply(tool_calls=[("call_1", "bash", json.dumps({"command": ESCAPING.format(name="loop"),
                                                         "run_in_background": True}))]),
        Reply(tool_calls=[("call_2", "bash", json.dumps({"command": wait_for("escaped.pid") + "; sleep 0.5"}))]),
        Reply(tool_calls=[("call_3", "bash_output", json.dumps({"bash_id": "bash_1"}))]),
        Reply(text="The loop runs."))
    assert run_print(server, tmp_path, workspace, "off")["result"] == "The loop runs."
    started, waited, read = tool_results(server)
    assert "bash_1" in started and "tick" in read and "still running" in read
    loop, escaped = pid_in(workspace / "loop.pid"), pid_in(workspace / "escaped.pid")
    assert gone(loop) and gone(escaped)


def test_print_mode_a_sandboxed_http_server_is_gone_when_the_run_ends(server, tmp_path, workspace, bubblewrap):
    token = f"{os.getpid() % 20000 + 30000}"
    command = f"echo up > up.txt; exec python3 -m http.server {token} --bind 127.0.0.1"
    server.enqueue(Reply(tool_calls=[("call_1", "bash", json.dumps({"command": command, "run_in_background": True}))]),
                   Reply(tool_calls=[("call_2", "bash", json.dumps({"command": wait_for("up.txt") + "; sleep 1"}))]),
                   Reply(tool_calls=[("call_3", "bash_output", json.dumps({"bash_id": "bash_1"}))]),
                   Reply(text="Serving."))
    assert run_print(server, tmp_path, workspace, "workspace-write")["result"] == "Serving."
    started, waited, read = tool_results(server)
    assert "bash_1" in started and "still running" in read, read
    deadline = time.monotonic() + 5
    while processes_with(f"http.server\0{token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(f"http.server\0{token}") == []
