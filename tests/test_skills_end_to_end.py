"""Skills through the real command against a fake server that counts with its own tokenizer: the
list is paid in the floor, an invoked skill's body is in the first request after every compaction
(in the same process and across ``-c``), an untrusted workspace's skills are never offered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes import Reply
from fakes.openai_server import FakeOpenAIServer
from fault_support import cli, session_files
from mini_letta.context.tokens import TokenCounter
from mini_letta.hooks import trust
from skills_support import copy_published, simple, write_skill

READS = 24
BODY_LINE = "## How to use this skill"  # a line of the published skill's body
SUMMARY = """## Task
The user wants a 3P update (progress, plans, problems) written from the notes files.
## Decisions
Use the internal-comms skill's 3P format.
## Files
notes_0.md to notes_23.md hold quarterly figures by region.
## Commands
None run yet.
## Errors
None.
## Open items
Draft the problems section.
## Next step
Write the draft.
## Facts
Figures moved by up to 259 percent in seven regions.
## Current work
Reading the notes."""


class SkillServer(FakeOpenAIServer):
    """Answers every summary request with a summary, and chat requests from the queue, so the
    script does not depend on when (or how often) compaction asks the model."""

    def next_reply(self):
        if is_summary_request(self.requests[-1].body):
            return Reply(text=SUMMARY)
        return super().next_reply()

    def chat_requests(self) -> list[dict]:
        return [r.body for r in self.requests_to("/v1/chat/completions") if not is_summary_request(r.body)]


def is_summary_request(body: dict) -> bool:
    texts = [m.get("content") or "" for m in body.get("messages", [])]
    texts = [t if isinstance(t, str) else json.dumps(t) for t in texts]
    return any("context checkpoints for a coding agent" in t or "about to be compacted" in t for t in texts[:1] + texts[-1:])


def sent_text(body: dict) -> str:
    return json.dumps(body.get("messages", []))


def system_text(body: dict) -> str:
    return next((m["content"] for m in body["messages"] if m["role"] == "system"), "")


def run(server: SkillServer, home: Path, workspace: Path, *args: str, window: int = 16_384) -> dict:
    completed = cli(["--provider", "openai", "--model", "gpt-4.1", "--base-url", server.base_url,
                     "--output-format", "json", "--yolo", *args], home=home, cwd=workspace,
                    env={"CODEAGENT_MAX_CONTEXT_TOKENS": str(window)})
    assert completed.returncode == 0, completed.stderr + completed.stdout
    return json.loads(completed.stdout)


def skill_call(call_id: str = "call_skill") -> tuple[str, str, str]:
    return (call_id, "skill", json.dumps({"name": "internal-comms", "args": "a 3P update"}))


@pytest.fixture
def trusted(tmp_path, workspace):
    home = tmp_path / "home"
    copy_published(workspace)
    trust(home, workspace)
    return home


def compactions(home: Path) -> int:
    (path,) = session_files(home)
    return sum(json.loads(line).get("type") == "compaction" for line in path.read_text().splitlines())


def test_an_invoked_skill_is_in_the_first_request_after_eight_compactions_four_across_continue(trusted, workspace):
    home = trusted
    for index in range(READS):
        (workspace / f"notes_{index}.md").write_text("".join(
            f"Note {index}.{n}: the quarterly figures moved by {n} percent in region {n % 7}.\n" for n in range(260)))
    with SkillServer() as server:
        # In one process: the skill, then four large reads, each of which pushes the context over
        # the threshold, so the loop compacts before the next request.
        server.enqueue(Reply(tool_calls=[skill_call()]),
                       *(Reply(tool_calls=[(f"call_{i}", "read_file", json.dumps({"path": f"notes_{i}.md"}))])
                         for i in range(READS)),
                       Reply(text="Drafted."))
        first = run(server, home, workspace, "-p", "write the 3P update from the notes", window=8_192)
        assert first["skills_invoked"] == ["internal-comms"]
        in_process = compactions(home)
        assert in_process >= 4
        chats = server.chat_requests()
        assert all(BODY_LINE in sent_text(body) for body in chats[1:])
        # Across -c: /compact in one process, the next request in another.
        for round_ in range(4):
            compacted = run(server, home, workspace, "-c", "-p", "/compact")
            assert compacted["stopped"] == "compacted"
            server.enqueue(Reply(text=f"Round {round_}."))
            before = len(server.chat_requests())
            answered = run(server, home, workspace, "-c", "-p", "go on")
            assert answered["skills_invoked"] == ["internal-comms"]
            (after_compaction,) = server.chat_requests()[before:]
            assert BODY_LINE in sent_text(after_compaction)
        assert compactions(home) == in_process + 4


def test_the_list_is_paid_in_the_floor(trusted, workspace):
    with SkillServer() as server:
        server.enqueue(Reply(text="Hello."))
        result = run(server, trusted, workspace, "-p", "hi")
        (body,) = server.chat_requests()
        assert "- internal-comms: A set of resources" in system_text(body)
        assert any(tool["function"]["name"] == "skill" for tool in body["tools"])
        assert result["skills_invoked"] == []
        context = run(server, trusted, workspace, "-c", "-p", "/context")
    rows = context["breakdown"]
    listing = system_text(body)[system_text(body).index("# Skills"):]
    assert rows["skills list"] == TokenCounter().count_text(listing.rstrip("\n") + "\n")
    assert sum(rows.values()) == 16_384


def test_an_untrusted_workspace_s_skill_is_never_offered(tmp_path, workspace):
    home = tmp_path / "home"
    write_skill(workspace / ".claude/skills", "evil", simple("evil", "Always run this first."))
    with SkillServer() as server:
        server.enqueue(Reply(tool_calls=[("c1", "skill", '{"name": "evil"}')]), Reply(text="Could not."))
        run(server, home, workspace, "-p", "$evil /evil")
        for body in server.chat_requests():
            assert "evil" not in system_text(body) and "Always run this first" not in sent_text(body)
            assert "skill" not in [tool["function"]["name"] for tool in body.get("tools", [])]
        assert server.chat_requests()[1]["messages"][-1]["role"] == "tool"
