"""Building a real Agent around a ScriptedProvider in a temporary workspace, without the CLI.

The agent is assembled by ``mini_letta.app.assemble``, as ``build_agent`` assembles it, around a
budget for the window a test names, without the provider factory, checkpoints and MCP servers and,
unless ``session`` is passed, the session file. A ``LeanPrompt`` sends a short system prompt and only the
named tools: a small floor, for scenarios that must reproduce seed 000's figures (its floor was 524 tokens, ours is ~1,600).

``script(...)`` makes a provider whose chat replies come from a list and whose summary requests
(``Request.purpose == "summary"``) are answered separately, so compaction never eats a chat reply.
``request_tokens`` counts a request exactly as the agent's budget counts it locally.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Callable, Iterable

from mini_letta.loop.agent import Agent
from mini_letta.loop.prompt import Prompt
from mini_letta.app import assemble, auto_compact_enabled
from mini_letta.context import ContextBudget, counter_for_model, resolve_window
from mini_letta.conversation import Conversation
from mini_letta.loop.state import SessionState
from mini_letta.memory import CoreMemory
from mini_letta.messages import Message, ToolCall, ToolSpec, new_id
from mini_letta.providers.base import Request
from mini_letta.providers.scripted import Reply, ScriptedProvider
from mini_letta.toolbox import approve_all

SUMMARY_TEXT = "Earlier work: the user asked for several files to be read; all were read without errors."


class LeanPrompt(Prompt):
    """A fixed short system prompt (core memory still appended) and a subset of the tools."""

    lean_system = ""
    tool_names: tuple[str, ...] = ()

    def system(self) -> str:
        memory = self.core_memory()
        return self.lean_system + ("\n" + memory if memory else "") + "\n"

    def tools(self) -> list[ToolSpec]:
        return [spec for spec in self.toolbox.specs() if spec.name in self.tool_names]


def lean_prompt(lean_system: str, tool_names: Iterable[str]) -> type[LeanPrompt]:
    """A :class:`LeanPrompt` class sending ``lean_system`` and only ``tool_names`` (``assemble``'s ``prompt_class``)."""
    return type("Lean", (LeanPrompt,), {"lean_system": lean_system, "tool_names": tuple(tool_names)})


def make_agent(provider, workspace: Path, *, window: int | None = None, auto_compact: bool | None = None,
               memory: CoreMemory | None = None, lean_system: str | None = None,
               tool_names: Iterable[str] | None = None, approver=approve_all, max_steps: int = 100,
               conversation: Conversation | None = None, session=None, checkpoints: bool = False,
               mcp=None, say=None, mode=None, plan_reviewer=None, hooks=None) -> Agent:
    """An Agent as ``build_agent`` makes it. ``window`` stands for what the server reports serving
    (``CODEAGENT_*`` variables still apply); ``auto_compact`` defaults to what
    ``CODEAGENT_DISABLE_COMPACT`` says; ``lean_system`` / ``tool_names`` give a LeanPrompt; ``checkpoints``
    records them as ``build_agent``'s agent does; ``mcp``: an ``McpTools`` (``mcp_support.agent_with_servers``);
    ``say``: the run's notice channel (a ``Notices``' say; none by default); ``mode``, ``plan_reviewer``,
    ``hooks``: a ``PermissionMode``, the reviewer of ``exit_plan_mode``, a ``hooks.Hooks``."""
    served = window if window is not None else provider.served_window()
    window_info = resolve_window(provider.model, served)
    if auto_compact is None:
        auto_compact = auto_compact_enabled()
    budget = ContextBudget(counter_for_model(provider.model), window_info, auto_compact=auto_compact)
    state = SessionState(session, conversation or Conversation())
    prompt_class = None if lean_system is None and tool_names is None else lean_prompt(
        lean_system or "You are a coding agent.", tool_names if tool_names is not None else ())
    return assemble(provider, budget, Path(workspace), approver=approver, memory=memory, state=state,
                    max_steps=max_steps, record_checkpoints=checkpoints, mcp=mcp, prompt_class=prompt_class,
                    mode=mode, plan_reviewer=plan_reviewer, **({} if hooks is None else {"hooks": hooks}),
                    **({} if say is None else {"say": say}))


def request_tokens(request: Request, model: str = "scripted") -> int:
    """The local, uncalibrated size of ``request``: floor plus messages, as the agent's budget
    counts it (floor and messages, uncalibrated) with the counter for ``model``."""
    counter = counter_for_model(model)
    return counter.count_system(request.system) + counter.count_tools(request.tools) + \
        counter.count_messages(request.messages)


def fake_count(request: Request) -> int:
    """The prompt tokens of ``request`` as the fake servers count them (``fakes/tokens.py``): another
    tokenizer, off from ours by a ratio that depends on the text, as a real server's is."""
    from fakes.tokens import count_request

    messages = [{"role": m.role, "content": m.text,
                 "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in m.tool_calls]}
                for m in request.messages]
    return count_request({"system": request.system, "messages": messages,
                          "tools": [{"type": "function", "function": spec.to_dict()} for spec in request.tools]})


def script(replies: Iterable[Reply], *, summary: str | Callable[[Request], str] = SUMMARY_TEXT,
           window: int | None = None, count: Callable[[Request], int] | None = None) -> ScriptedProvider:
    """A ScriptedProvider answering chat requests from ``replies`` (in order) and summary requests
    with ``summary``; it runs out (AssertionError) when a chat request finds the list empty."""
    chat: deque[Reply] = deque(replies)

    def answer(request: Request):
        if request.purpose == "summary":
            return summary(request) if callable(summary) else summary
        if not chat:
            raise AssertionError("the scripted model ran out of chat replies")
        reply = chat.popleft()
        if isinstance(reply, BaseException):
            raise reply
        return reply(request) if callable(reply) else reply

    return ScriptedProvider(default=answer, window=window, count=count)


def tool_call(name: str, **arguments) -> Message:
    """An assistant message calling one tool."""
    return Message.assistant("", [ToolCall(new_id("call_"), name, json.dumps(arguments))])


_WORDS = ("parser config session window budget token compaction summary provider stream retry module "
          "function request response cache value index message history layer threshold reserve").split()


def sized_text(tokens: int, seed: int = 0) -> str:
    """Plain prose of exactly ``tokens`` tokens for the scripted model's counter (word by word)."""
    counter = counter_for_model("scripted")
    words: list[str] = []
    index = seed
    while counter.count_text(" ".join(words)) < tokens:
        words.append(_WORDS[index % len(_WORDS)])
        index += 7
    while words and counter.count_text(" ".join(words)) > tokens:
        words.pop()
    return " ".join(words)


def write_modules(workspace: Path, count: int, lines: int = 120) -> list[str]:
    """``count`` Python modules ``mod_NN.py`` of ``lines`` functions each, distinct in every line
    (so no two reads look alike); their names, in order."""
    paths = []
    for n in range(count):
        path = Path(workspace) / f"mod_{n:02}.py"
        path.write_text("\n".join(f"def function_{n}_{i}(value):  # step {i} of module {n}\n    return value * {i}"
                                  for i in range(lines)))
        paths.append(path.name)
    return paths
