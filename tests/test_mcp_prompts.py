"""MCP prompts as slash commands (``/mcp__server__prompt arg1 arg2``), as Claude Code offers them: a
real ``MCPServer`` script declaring prompts, and npm's server-everything, driven through the REPL's
own dispatch with a scripted model. The prompts never reach the model's context until one is sent."""

from __future__ import annotations

import io
from concurrent.futures import Future

import pytest
from prompt_toolkit.document import Document
from rich.console import Console

from agent_support import make_agent, script
from mcp_support import agents, agent_with_servers, everything_command, python_server, said, stdio  # noqa: F401 (agents: a fixture)
from mini_letta.app import Options
from mini_letta.repl.app import Repl
from mini_letta.repl.completion import SlashCompleter

NOTES_BODY = """
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from mcp.server.mcpserver.utilities.types import Image

@server.prompt(description="Review a file for one kind of problem.\\nA second line the help leaves out.")
def review(path: str, focus: str = "bugs") -> str:
    return f"Review {path} and look for {focus}."

@server.prompt(description="A worked example: a question, an answer, a picture.")
def example() -> list:
    return [UserMessage("What is 2+2?"), AssistantMessage("4"),
            UserMessage(Image(data=b"\\x89PNG" + b"0" * 2044, format="png").to_image_content())]

@server.prompt(description="Fails.")
def broken() -> str:
    raise ValueError("no notes today")

@server.tool(description="Answers.")
def ping() -> str:
    return "pong"
"""


def repl_for(agent) -> tuple[Repl, io.StringIO]:
    out = io.StringIO()
    repl = Repl(Options(), Console(file=out, width=200))
    future = Future()
    future.set_result(agent)
    repl.startup.future = future
    return repl, out


def notes_repl(agents, workspace, tmp_path, replies, body=NOTES_BODY):
    provider = script(replies, window=64_000)
    agent, _ = agent_with_servers(agents, workspace, {"notes": stdio(python_server(tmp_path, "notes", body))}, provider)
    repl, out = repl_for(agent)
    return repl, out, agent, provider


def test_a_prompt_is_a_command_whose_text_is_sent_as_the_users_message(agents, workspace, tmp_path):
    repl, out, agent, provider = notes_repl(agents, workspace, tmp_path, ["hello", "reviewed"])
    repl._handle("hello")
    repl._handle("/mcp__notes__review src/app.py error handling")
    sent = provider.requests[-1].messages[-1]
    # The words fill the declared arguments in order; the last argument takes the rest of the line.
    assert (sent.role, sent.text) == ("user", "Review src/app.py and look for error handling.")
    assert agent.conversation.messages[-1].text == "reviewed"
    shown = out.getvalue()
    assert "The prompt review of notes (1 line) is sent as your message:" in shown
    assert "Review src/app.py and look for error handling." in shown
    # Until it was used, the prompt cost nothing: not a tool, not in the system prompt.
    first = provider.requests[0]
    assert [spec.name for spec in first.tools if spec.name.startswith("mcp__")] == ["mcp__notes__ping"]
    assert "review" not in first.system.lower() and "Review a file" not in repr(first.tools)


ASK_BODY = NOTES_BODY + """
@server.prompt(description="Ask anything.")
def ask(question: str) -> str:
    return "Q: " + question
"""


def test_the_last_argument_is_the_rest_of_the_line_as_typed(agents, workspace, tmp_path):
    # An apostrophe, quotes, a backslash, runs of spaces and an Alt-Enter newline are the user's
    # words: the last argument takes them unchanged (read as shell words, "what's" was refused and
    # the rest lost its quotes, backslashes and spacing).
    repl, out, _, provider = notes_repl(agents, workspace, tmp_path, ["one", "two", "three"], ASK_BODY)
    repl._handle('/mcp__notes__ask what\'s the  plan for C:\\src, "really"?\nand then?')
    assert provider.requests[-1].messages[-1].text == 'Q: what\'s the  plan for C:\\src, "really"?\nand then?'
    repl._handle("/mcp__notes__review a.py don't over-think it")
    assert provider.requests[-1].messages[-1].text == "Review a.py and look for don't over-think it."
    repl._handle('/mcp__notes__ask "quoted whole"')  # quotes around all of it are taken off, as around other words
    assert provider.requests[-1].messages[-1].text == "Q: quoted whole"
    assert "could not be read" not in out.getvalue()


def test_quoted_words_are_one_argument_and_an_optional_one_may_be_left_out(agents, workspace, tmp_path):
    repl, _, _, provider = notes_repl(agents, workspace, tmp_path, ["one", "two"])
    repl._handle('/mcp__notes__review "my notes.md"')
    assert provider.requests[-1].messages[-1].text == "Review my notes.md and look for bugs."
    repl._handle("/MCP__notes__REVIEW a.py style")  # typed in another case, as built-in commands may be
    assert provider.requests[-1].messages[-1].text == "Review a.py and look for style."


@pytest.mark.parametrize("line, said", [
    ("/mcp__notes__review", "/mcp__notes__review needs the argument 'path'; usage: /mcp__notes__review <path> [focus]"),
    ("/mcp__notes__example now", "/mcp__notes__example takes no arguments."),
    ('/mcp__notes__review "unclosed', "/mcp__notes__review: the arguments could not be read (No closing quotation)"),
    ("/mcp__notes__nothing", "Unknown command /mcp__notes__nothing."),
    ("/mcp__notes__broken", "/mcp__notes__broken failed: the MCP server 'notes' answered with an error: "),
])
def test_a_prompt_command_that_cannot_be_sent_is_one_message_and_nothing_is_sent(agents, workspace, tmp_path,
                                                                                 line, said):
    repl, out, agent, provider = notes_repl(agents, workspace, tmp_path, ["unused"])
    repl._handle(line)
    assert said in out.getvalue() and "Traceback" not in out.getvalue()
    assert provider.requests == [] and agent.conversation.messages == []


def test_several_messages_are_labelled_by_role_and_an_image_is_described_not_sent(agents, workspace, tmp_path):
    repl, _, _, provider = notes_repl(agents, workspace, tmp_path, ["seen"])
    repl._handle("/mcp__notes__example")
    text = provider.requests[-1].messages[-1].text
    assert text.startswith("[user]\nWhat is 2+2?\n\n[assistant]\n4\n\n[user]\n[image: image/png, ")
    assert text.endswith("; not shown to the model]") and "iVBOR" not in text


def test_prompts_are_completed_listed_by_help_and_named_by_mcp(agents, workspace, tmp_path):
    from mini_letta.repl.commands import dispatch

    repl, out, _, _ = notes_repl(agents, workspace, tmp_path, [])
    found = list(SlashCompleter(workspace, host=repl).get_completions(Document("/mcp__no"), None))
    assert [(c.text, c.display_meta_text) for c in found] == [
        ("/mcp__notes__review", "Review a file for one kind of problem. (MCP prompt of notes)"),
        ("/mcp__notes__example", "A worked example: a question, an answer, a picture. (MCP prompt of notes)"),
        ("/mcp__notes__broken", "Fails. (MCP prompt of notes)")]
    assert [c.text for c in SlashCompleter(workspace, host=repl).get_completions(Document("/mc"), None)] == [
        "/mcp", "/mcp__notes__review", "/mcp__notes__example", "/mcp__notes__broken"]
    dispatch(repl, "/help")
    shown = out.getvalue()
    assert "/mcp__notes__review <path> [focus]" in shown and "A second line" not in shown
    dispatch(repl, "/mcp")
    assert "Prompts, as commands: /mcp__notes__review, /mcp__notes__example, /mcp__notes__broken" in out.getvalue()


def test_without_servers_the_commands_are_the_built_in_ones(workspace):
    from mini_letta.repl.commands import COMMANDS

    repl, _ = repl_for(make_agent(script([]), workspace))
    assert [c.text for c in SlashCompleter(workspace, host=repl).get_completions(Document("/"), None)] == [
        f"/{name}" for name in COMMANDS]


def test_server_everything_prompts_are_commands(agents, workspace):
    provider = script(["a", "b", "c"], window=64_000)
    agent, _ = agent_with_servers(agents, workspace, {"everything": stdio(everything_command())}, provider)
    repl, out = repl_for(agent)
    repl._handle("/mcp__everything__simple-prompt")
    assert provider.requests[-1].messages[-1].text == "This is a simple prompt without arguments."
    repl._handle("/mcp__everything__args-prompt Springfield Illinois")
    assert provider.requests[-1].messages[-1].text == "What's weather in Springfield, Illinois?"
    repl._handle("/mcp__everything__resource-prompt Blob 1")
    text = provider.requests[-1].messages[-1].text
    # The embedded binary resource is described in one line, as in a tool's result.
    assert text == ("This prompt includes the Blob resource with id: 1. Please analyze the following resource:\n\n"
                    "[resource demo://resource/dynamic/blob/1: text/plain, 57 bytes; not shown to the model]")
    repl._handle("/mcp__everything__resource-prompt Nope 1")
    assert ("/mcp__everything__resource-prompt failed: the MCP server 'everything' answered with an error: "
            in out.getvalue()) and "Invalid resourceType: Nope" in out.getvalue()
    repl._handle("/mcp__everything__args-prompt")
    assert "needs the argument 'city'; usage: /mcp__everything__args-prompt <city> [state]" in out.getvalue()
    assert len(provider.requests) == 3


def test_a_prompt_added_by_the_server_becomes_a_command(agents, workspace, tmp_path):
    """notifications/prompts/list_changed: the prompts are listed again."""
    import time

    from agent_support import tool_call
    from mcp_support import RecordingApprover
    from mini_letta.mcp.prompts import find

    command = python_server(tmp_path, "dyn", """
        from mcp.server.mcpserver import Context
        from mcp.server.mcpserver.prompts.base import Prompt

        def greet(name: str) -> str:
            return "Greet " + name + " warmly."

        @server.tool(description="Unlock a prompt.")
        async def unlock(ctx: Context) -> str:
            server.add_prompt(Prompt.from_function(greet, description="Greet someone."))
            await ctx.session.send_prompt_list_changed()
            return "unlocked"
    """)
    provider = script([tool_call("mcp__dyn__unlock"), "done", "greeted"], window=64_000)
    agent, _ = agent_with_servers(agents, workspace, {"dyn": stdio(command)}, provider, approver=RecordingApprover())
    repl, _ = repl_for(agent)
    assert find(agent.mcp, "mcp__dyn__greet") is None
    repl._handle("unlock it")
    deadline = time.monotonic() + 20
    while find(agent.mcp, "mcp__dyn__greet") is None and time.monotonic() < deadline:
        time.sleep(0.05)
    repl._handle("/mcp__dyn__greet Ada")
    assert provider.requests[-1].messages[-1].text == "Greet Ada warmly."


def test_a_server_that_says_its_prompts_changed_while_it_starts_is_connected(agents, workspace, tmp_path):
    # The notification came while the client still listed the tools: relisting read the session
    # before it was stored, and the whole server failed ("'NoneType' object has no attribute").
    body = """
        class Early(MCPServer):
            async def _handle_list_tools(self, ctx, params):
                await ctx.session.send_prompt_list_changed()
                await ctx.session.send_tool_list_changed()
                return await super()._handle_list_tools(ctx, params)

        server = Early("early")

        @server.prompt(description="Say hello.")
        def hello() -> str:
            return "Hello there."

        @server.tool(description="Answers.")
        def ping() -> str:
            return "pong"
    """
    from mini_letta import config

    provider = script(["hi"], window=64_000)
    agent, _ = agent_with_servers(agents, workspace, {"early": stdio(python_server(tmp_path, "early", body))}, provider)
    state = agent.mcp.manager.states["early"]
    assert (state.status, state.error) == ("connected", "")
    repl, _ = repl_for(agent)
    repl._handle("/mcp__early__hello")
    assert provider.requests[-1].messages[-1].text == "Hello there."
    assert not any("listing them failed" in notice for notice in said(agent))


def test_mcp_list_counts_a_servers_prompts(workspace, tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from mini_letta import config
    from mini_letta.cli_app import app

    home = config.home()
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"mcpServers": {
        "notes": stdio(python_server(tmp_path, "notes", NOTES_BODY))}}))
    monkeypatch.chdir(workspace)
    result = CliRunner().invoke(app, ["mcp", "list"])
    assert result.exit_code == 0
    assert "notes: " in result.output
    assert "connected, 1 tool, 3 prompts (/mcp__notes__<prompt> in the REPL)" in result.output
