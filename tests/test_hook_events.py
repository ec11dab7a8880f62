"""Hooks on Claude Code's events (issue 49): PreToolUse blocks or decides, PostToolUse runs a
formatter on the file the model wrote, UserPromptSubmit, Stop and SessionStart, run as ``-p`` runs them."""

import json
import sys

from agent_support import make_agent, script, tool_call
from fault_support import cli
from mini_letta.hooks import load_hooks, trust
from mini_letta.messages import Message
from mini_letta.providers.scripted import ScriptedProvider


def settings(home, hooks: dict, folder=None) -> None:
    target = folder or home
    target.mkdir(parents=True, exist_ok=True)
    (target / "settings.json").write_text(json.dumps({"hooks": hooks}))


def command_hook(command: str, matcher: str = "") -> list[dict]:
    return [{"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": 20}]}]


def script_file(folder, name: str, source: str) -> str:
    path = folder / name
    path.write_text(source)
    return f"{sys.executable} {path}"


def test_pre_tool_use_exit_2_blocks_the_command_and_the_model_reads_why(tmp_path, workspace):
    home = tmp_path / "h"
    guard = script_file(tmp_path, "guard.py", "import json, sys\n"
                        "call = json.load(sys.stdin)\n"
                        "if 'rm ' in call['tool_input']['command']:\n"
                        "    print('no rm here, use git clean', file=sys.stderr); sys.exit(2)\n")
    settings(home, {"PreToolUse": command_hook(guard, "Bash|Edit")})
    (workspace / "keep.txt").write_text("precious\n")
    ran = cli(["-p", "run rm keep.txt", "--provider", "demo", "--yolo"], home=home, cwd=workspace)
    assert (workspace / "keep.txt").exists()
    assert "Blocked by a PreToolUse hook: no rm here, use git clean" in ran.stdout
    allowed = cli(["-p", "run echo fine > out.txt", "--provider", "demo", "--yolo"], home=home, cwd=workspace)
    assert (workspace / "out.txt").read_text() == "fine\n", allowed.stdout


def test_pre_tool_use_json_allow_runs_a_command_print_mode_would_refuse_and_deny_says_why(tmp_path, workspace):
    home = tmp_path / "h"
    decide = script_file(tmp_path, "decide.py", "import json, sys\n"
                         "call = json.load(sys.stdin)\n"
                         "allow = call['tool_input']['command'].startswith('touch')\n"
                         "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',\n"
                         "    'permissionDecision': 'allow' if allow else 'deny',\n"
                         "    'permissionDecisionReason': 'touch only'}}))\n")
    settings(home, {"PreToolUse": command_hook(decide, "bash")})
    cli(["-p", "run touch made.txt", "--provider", "demo", "--sandbox", "off"], home=home, cwd=workspace)
    assert (workspace / "made.txt").exists()
    denied = cli(["-p", "run echo x > other.txt", "--provider", "demo", "--yolo"], home=home, cwd=workspace)
    assert "touch only" in denied.stdout and not (workspace / "other.txt").exists()


def test_post_tool_use_formatter_rewrites_the_file_the_model_wrote(tmp_path, workspace):
    home = tmp_path / "h"
    formatter = script_file(tmp_path, "fmt.py", "import json, sys, pathlib\n"
                            "call = json.load(sys.stdin)\n"
                            "path = pathlib.Path(call['tool_input']['file_path'])\n"
                            "lines = [' '.join(line.split()) for line in path.read_text().splitlines()]\n"
                            "path.write_text('\\n'.join(lines).upper() + '\\n')\n"
                            "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse',\n"
                            "    'additionalContext': 'formatted ' + call['tool_name']}}))\n")
    settings(home, {"PostToolUse": command_hook(formatter, "Write|Edit")})
    cli(["-p", "write notes.txt: hello    formatted   world", "--provider", "demo", "--permission-mode",
         "acceptEdits"], home=home, cwd=workspace)
    assert (workspace / "notes.txt").read_text() == "HELLO FORMATTED WORLD\n"


def test_user_prompt_submit_exit_2_blocks_the_prompt_and_keeps_nothing(tmp_path, workspace):
    home = tmp_path / "h"
    gate = script_file(tmp_path, "gate.py", "import json, sys\n"
                       "if 'secret' in json.load(sys.stdin)['prompt']:\n"
                       "    print('no secrets', file=sys.stderr); sys.exit(2)\n")
    settings(home, {"UserPromptSubmit": command_hook(gate)})
    blocked = cli(["-p", "the secret is 42", "--provider", "demo"], home=home, cwd=workspace)
    assert blocked.returncode == 1 and "UserPromptSubmit hook blocked this message" in blocked.stderr
    assert "no secrets" in blocked.stderr and "42" not in blocked.stdout
    assert cli(["-p", "hello", "--provider", "demo"], home=home, cwd=workspace).returncode == 0


def test_stop_hook_sends_the_model_on_once_with_its_reason(workspace, tmp_path):
    seen = []
    provider = ScriptedProvider(default=lambda request: seen.append(request) or "done")
    hooks_home = tmp_path / "h"
    settings(hooks_home, {"Stop": command_hook(
        f"{sys.executable} -c \"import json,sys; d=json.load(sys.stdin); "
        f"(print('run the tests first', file=sys.stderr), sys.exit(2)) if not d['stop_hook_active'] else None\"")})
    agent = make_agent(provider, workspace, hooks=load_hooks(hooks_home, workspace))
    result = agent.run_turn("fix it")
    assert len(seen) == 2 and result.steps == 2
    assert "run the tests first" in seen[1].messages[-1].text and agent.turns == 1


def test_session_start_and_prompt_context_reach_the_first_request(workspace, tmp_path):
    seen = []
    provider = ScriptedProvider(default=lambda request: seen.append(request) or "ok")
    home = tmp_path / "h"
    settings(home, {"SessionStart": command_hook("echo branch main is clean", "startup"),
                    "UserPromptSubmit": command_hook("echo the time is noon")})
    hooks = load_hooks(home, workspace)
    agent = make_agent(provider, workspace, hooks=hooks)
    hooks.session_started("startup")
    agent.run_turn("hi")
    texts = [m.text for m in seen[0].messages]
    assert texts[-1] == "hi" and "branch main is clean" in texts[-3] and "the time is noon" in texts[-2]
    agent.run_turn("again")
    assert not any("branch main" in m.text for m in seen[1].messages[len(seen[0].messages):])  # once


def test_workspace_hooks_run_only_after_trust(tmp_path, workspace):
    home = tmp_path / "h"
    settings(home, {"PreToolUse": command_hook("echo nope >&2; exit 2")}, folder=workspace / ".mini-letta")
    provider = script([tool_call("glob", pattern="*"), Message.assistant("ok")] * 2)
    before = make_agent(provider, workspace, hooks=load_hooks(home, workspace))
    before.run_turn("list")
    assert "Blocked" not in before.conversation.messages[-2].text
    trust(home, workspace)
    after = make_agent(provider, workspace, hooks=load_hooks(home, workspace))
    after.run_turn("list")
    assert after.conversation.messages[-2].text == "Blocked by a PreToolUse hook: nope"


def test_trust_in_the_repl_runs_the_workspace_hooks_through_the_toolbox_from_then_on(tmp_path, workspace):
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from mini_letta.repl.commands import dispatch

    guard = script_file(tmp_path, "guard.py", "import sys\nprint('not in this folder', file=sys.stderr)\nsys.exit(2)\n")
    settings(None, {"PreToolUse": command_hook(guard, "Bash")}, folder=workspace / ".mini-letta")
    write = tool_call("bash", command="echo ran > ran.txt")
    agent = make_agent(script([write, "done", write, "done"]), workspace)
    agent.run_turn("write it")  # not trusted yet: the hook does not run
    assert (workspace / "ran.txt").exists()
    (workspace / "ran.txt").unlink()
    console = Console(file=io.StringIO(), width=200)
    dispatch(SimpleNamespace(console=console, agent=lambda: agent), "/trust")
    assert "1 hook command loaded" in console.file.getvalue()
    # The hooks the toolbox asks before a tool are the ones /trust reloaded.
    agent.run_turn("write it again")
    assert not (workspace / "ran.txt").exists()
    assert "not in this folder" in agent.conversation.messages[-2].text
