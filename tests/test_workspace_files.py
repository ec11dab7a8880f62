"""Files a repository puts in our way at start-up (issue 22, item 2): only regular files, capped,
parsed defensively; every problem is one notice and the file is ignored, never an internal error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mini_letta.instructions import load_instructions
from mini_letta.notices import Notices
from mini_letta.workspace_files import read_workspace_json, read_workspace_text

channel = Notices()  # each test takes what it said


@pytest.fixture(autouse=True)
def _fresh():
    global channel
    channel = Notices()


def one_notice() -> str:
    notices = channel.take()
    assert len(notices) == 1, notices
    return notices[0]


def test_a_missing_file_is_absent_without_a_notice(tmp_path):
    assert read_workspace_text(tmp_path / "AGENTS.md", 100, say=channel.say) is None
    assert read_workspace_json(tmp_path / "settings.json", say=channel.say) is None
    assert channel.take() == []


def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "AGENTS.md")
    assert read_workspace_text(tmp_path / "AGENTS.md", 100, say=channel.say) is None
    assert "named pipe, not a regular file" in one_notice()


def test_a_symlink_to_dev_zero_is_refused_as_a_device(tmp_path):
    (tmp_path / "AGENTS.md").symlink_to("/dev/zero")
    assert read_workspace_text(tmp_path / "AGENTS.md", 100, say=channel.say) is None
    assert "a device, not a regular file" in one_notice()


def test_a_long_text_file_gives_its_first_cap_bytes_and_says_so(tmp_path):
    (tmp_path / "AGENTS.md").write_text("x" * 5000)
    assert read_workspace_text(tmp_path / "AGENTS.md", 1000, say=channel.say) == "x" * 1000
    assert "larger than 1,000 bytes" in one_notice()


def test_an_oversized_json_file_is_refused_whole(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps({"pad": "x" * 5000}))
    assert read_workspace_json(tmp_path / "s.json", 1000, say=channel.say) is None
    assert "larger than 1,000 bytes" in one_notice()


def test_a_json_file_of_exactly_the_cap_is_read(tmp_path):
    text = json.dumps({"pad": "x" * 100})
    (tmp_path / "s.json").write_text(text)
    assert read_workspace_json(tmp_path / "s.json", len(text), say=channel.say) == {"pad": "x" * 100}
    assert channel.take() == []


@pytest.mark.parametrize(("content", "said"), [
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
    (b"[1, 2]", "must be a JSON object"),
])
def test_malformed_json_is_one_notice_and_ignored(tmp_path, content, said):
    (tmp_path / "s.json").write_bytes(content)
    assert read_workspace_json(tmp_path / "s.json", 1 << 20, say=channel.say) is None
    assert said in one_notice()


def test_a_link_leading_outside_the_workspace_is_refused(tmp_path):
    workspace, secret = tmp_path / "ws", tmp_path / "credentials"
    workspace.mkdir()
    secret.write_text("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")
    (workspace / "AGENTS.md").symlink_to(secret)
    assert read_workspace_text(workspace / "AGENTS.md", 1000, within=workspace, say=channel.say) is None
    assert "leads outside" in one_notice()
    (workspace / "CLAUDE.md").write_text("rules")
    (workspace / "link.md").symlink_to(workspace / "CLAUDE.md")
    assert read_workspace_text(workspace / "link.md", 1000, within=workspace, say=channel.say) == "rules"


def test_instructions_skip_a_dev_zero_agents_md_and_keep_claude_md(tmp_path):
    (tmp_path / "AGENTS.md").symlink_to("/dev/zero")
    (tmp_path / "CLAUDE.md").write_text("Use tabs.")
    result = load_instructions(tmp_path, say=channel.say)
    assert result.sources == ["CLAUDE.md"] and "Use tabs." in result.text
    assert "AGENTS.md: it is a device" in one_notice()


def start(tmp_path, prompt: str = "hi") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CODEAGENT_"))}
    env["MINI_LETTA_HOME"] = str(tmp_path / "home")
    return subprocess.run([sys.executable, "-m", "mini_letta", "-p", prompt, "--provider", "demo"],
                          cwd=tmp_path / "ws", env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("settings", ['{"hooks": 5}', '{"hooks": {"PreCompact": [{"hooks": 5}]}}',
                                      '{"hooks": {"PreCompact": 7}}', "[]", "{oops"])
def test_a_malformed_trusted_settings_file_starts_normally_with_one_notice(tmp_path, settings):
    from mini_letta.hooks import trust

    workspace = tmp_path / "ws"
    (workspace / ".mini-letta").mkdir(parents=True)
    (workspace / ".mini-letta" / "settings.json").write_text(settings)
    trust(tmp_path / "home", workspace)
    proc = start(tmp_path)
    assert proc.returncode == 0 and "You said: “hi”" in proc.stdout
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.count("settings.json") == 1, proc.stderr


def test_a_dev_zero_agents_md_starts_normally_with_one_notice(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "AGENTS.md").symlink_to("/dev/zero")
    proc = start(tmp_path)
    assert proc.returncode == 0 and "You said: “hi”" in proc.stdout
    assert proc.stderr.count("AGENTS.md") == 1 and "not a regular file" in proc.stderr
