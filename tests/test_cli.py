"""The `mini-letta` command as a user runs it: a subprocess, the demo model, a temp workspace."""

import json
import re
import os
import subprocess
import sys

import pytest

from mini_letta import __version__
from mini_letta.sessions.store import load_session
from mini_letta.sessions.listing import find_session


@pytest.fixture
def run(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"

    def run(*args, env=None, stdin=subprocess.DEVNULL, provider="demo"):
        # -p answers only with a provider named or configured; these runs name the demo model.
        if provider and ("-p" in args or "--print" in args) and "--provider" not in args:
            args = (*args, "--provider", provider)
        full_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("OPENAI_", "ANTHROPIC_", "CODEAGENT_"))}
        full_env.update({"MINI_LETTA_HOME": str(home)}, **(env or {}))
        proc = subprocess.run([sys.executable, "-m", "mini_letta", *args], cwd=workspace, env=full_env,
                              capture_output=True, text=True, timeout=60, stdin=stdin)
        assert "Traceback" not in proc.stderr
        return proc

    run.workspace = workspace
    run.home = home
    return run


def test_version(run):
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"mini-letta {__version__}"


def test_print_mode_with_no_key_and_no_server_refuses_to_answer_with_the_demo_model(run):
    proc = run("-p", "hi", "--model", "gpt-4o", provider=None)
    assert proc.returncode != 0 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no API key and no server" in lines[0] and "--provider demo" in lines[0]


def test_print_mode_with_the_demo_model_named(run):
    proc = run("-p", "hi", "--provider", "demo")
    assert proc.returncode == 0
    assert "You said: “hi”" in proc.stdout
    assert proc.stderr == ""


def test_model_flag_on_the_demo_provider_says_it_was_ignored(run):
    proc = run("-p", "hi", "--model", "gpt-4o")
    assert proc.returncode == 0 and "You said: “hi”" in proc.stdout
    assert "--model gpt-4o does not apply to the offline demo model; it was ignored." in proc.stderr


def test_print_mode_json_has_the_documented_fields(run):
    proc = run("-p", "hi", "--output-format", "json")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert data["is_error"] is False and "You said" in data["result"]
    assert data["num_turns"] == 1
    assert set(data["usage"]) >= {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
    assert data["usage"]["input_tokens"] > 0
    context = data["context"]
    assert context["window"] == 16_384 and context["threshold"] == 13_108
    assert 0 < context["tokens"] < context["threshold"] and 0 < context["percent_left"] < 100
    assert data["compactions"] == []
    loaded = load_session(find_session(run.home, data["session_id"]))
    assert [m.role for m in loaded.all_messages] == ["user", "assistant"]


@pytest.mark.parametrize("args, message", [
    (["-p", "  "], "the prompt given to -p is empty"),
    (["-p", "hi", "--provider", "bogus"], "choose one of"),
    (["-p", "hi", "--provider", "openai"], "no API key for openai"),
    (["-p", "hi", "--provider", "anthropic"], "anthropic"),
    (["-r", "nope", "-p", "hi"], "nope"),
    (["-p", "hi", "-r"], "-r without an id lists the sessions to pick from in the REPL"),
])
def test_failures_give_one_line_and_a_nonzero_exit(run, args, message):
    proc = run(*args)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mini-letta: ")
    assert message in lines[0]


def test_writes_are_denied_in_print_mode_without_yolo(run):
    proc = run("-p", "write hello.txt: hi there", "--output-format", "json")
    assert proc.returncode == 0
    assert not (run.workspace / "hello.txt").exists()
    data = json.loads(proc.stdout)
    assert "failed" in data["result"]
    proc = run("-p", "write hello.txt: hi there", "--yolo")
    assert proc.returncode == 0
    assert (run.workspace / "hello.txt").read_text() == "hi there\n"


def test_continue_chains_two_print_runs_in_one_session(run):
    first = json.loads(run("-p", "my name is Ada", "--output-format", "json").stdout)
    second = json.loads(run("-c", "-p", "what is my name?", "--output-format", "json").stdout)
    assert second["session_id"] == first["session_id"]
    assert "carried 3 messages" in second["result"]  # the demo model saw the first exchange
    messages = load_session(find_session(run.home, first["session_id"])).all_messages
    assert [m.text for m in messages if m.role == "user"] == ["my name is Ada", "what is my name?"]


def test_resume_takes_the_session_id_from_json_output(run):
    first = json.loads(run("-p", "first", "--output-format", "json").stdout)
    run("-p", "another session")
    resumed = json.loads(run("-r", first["session_id"], "-p", "again", "--output-format", "json").stdout)
    assert resumed["session_id"] == first["session_id"] and "carried 3 messages" in resumed["result"]


def test_continue_without_a_session_says_so(run):
    proc = run("-c", "-p", "hi")
    assert proc.returncode != 0 and "No earlier session" in proc.stderr


def test_sessions_lists_this_folders_sessions(run):
    run("-p", "list the sessions please")
    proc = run("sessions")
    assert proc.returncode == 0 and "list the sessions" in proc.stdout


def test_continue_after_a_compaction_sends_the_summary_and_the_kept_tail(run):
    first = json.loads(run("-p", "fill 3000", "--output-format", "json").stdout)
    compactions = []
    for _ in range(8):  # the demo model's replies stop at max_tokens (2,048 in its 16k window)
        data = json.loads(run("-c", "-p", "fill 3000", "--output-format", "json").stdout)
        compactions += data["compactions"]
    assert compactions and all(c["trigger"] == "context_pressure" for c in compactions)
    last = json.loads(run("-c", "-p", "what did we do?", "--output-format", "json").stdout)
    assert last["session_id"] == first["session_id"]
    loaded = load_session(find_session(run.home, first["session_id"]))
    carried = int(re.search(r"carried (\d+) message", last["result"]).group(1))
    assert carried < len([m for m in loaded.all_messages if m.role != "tool"]) - 1
    assert loaded.messages_in_context[0].kind == "summary"
    assert last["context"]["tokens"] < last["context"]["threshold"]


# --- -p and standard input (issue 12) -----------------------------------------------------------
def piped(tmp_path, text: str):
    path = tmp_path / "stdin.txt"
    path.write_text(text, encoding="utf-8")
    return open(path, "rb")


@pytest.mark.parametrize("args", [["-p"], ["-p", "-"], ["-p", "--output-format", "text"]])
def test_print_mode_without_a_prompt_reads_it_from_standard_input(run, tmp_path, args):
    with piped(tmp_path, "explain this") as stdin:
        proc = run(*args, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    assert "You said: “explain this”" in proc.stdout


def test_input_piped_under_a_prompt_is_added_to_it(run, tmp_path):
    with piped(tmp_path, "line one\nline two\n") as stdin:
        proc = run("-p", "summarize:", "--output-format", "json", stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    loaded = load_session(find_session(run.home, json.loads(proc.stdout)["session_id"]))
    assert loaded.all_messages[0].text == "summarize:\n\nline one\nline two\n"


def test_an_empty_standard_input_for_a_bare_p_fails_in_one_line(run):
    proc = run("-p")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "mini-letta: the prompt read from standard input (-p without a prompt) is empty.")


def test_a_two_megabyte_prompt_goes_through_the_budget_and_is_refused_with_print_mode_advice(run, tmp_path):
    words = "alpha beta gamma delta context window token budget compaction summary provider ".split()
    prompt = " ".join(words[n % len(words)] for n in range(400_000))[:2 * 1024 * 1024]
    with piped(tmp_path, prompt) as stdin:
        proc = run("-p", "-", "--output-format", "json", stdin=stdin)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("mini-letta: Your message is about") and "16,384-token window" in last
    assert "/clear" not in proc.stderr and "/compact" not in proc.stderr  # REPL commands do not exist here
    assert "shorter message" in last
    result = json.loads(proc.stdout)
    assert result["is_error"] is True and "/clear" not in result["result"]
    # Refused before any reply: the prompt is the caller's (a file, a pipe), and the run leaves no
    # session that -c or /resume would take for a conversation.
    assert result["session_id"] is None and not list((run.home / "sessions").glob("*.jsonl"))
