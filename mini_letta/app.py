"""Assembling an agent from the command-line options: provider, window, tools, memory, session."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from mini_letta import config
from mini_letta.errors import ConfigError
from mini_letta.notices import Notices, Say, quiet
from mini_letta.permission_mode import PermissionMode
from mini_letta.providers import PROVIDERS
from mini_letta.settings import SETTINGS

if TYPE_CHECKING:
    from mini_letta.loop.agent import Agent


CONFIGURE_HINT = ("No API key found, so this is the offline demo model. To use a real model, set "
                  "ANTHROPIC_API_KEY or OPENAI_API_KEY (OPENAI_BASE_URL for any OpenAI-compatible server), "
                  "or run `mini-letta --provider ollama --model <name>`.")
NO_PROVIDER_FOR_PRINT = ("-p found no API key and no server to answer: set ANTHROPIC_API_KEY or OPENAI_API_KEY "
                         "(OPENAI_BASE_URL for an OpenAI-compatible server), or give --provider ollama; "
                         "--provider demo answers with the offline demo model.")




@dataclass
class Options:
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    yolo: bool = False
    headless: bool = False
    continue_session: bool = False
    resume: str | None = None
    pick_session: bool = False  # -r without an id: the REPL lists the sessions to pick from
    # With -c / -r: go on in a new session that starts from the resumed one's history.
    fork_session: bool = False
    # The lock of the session to resume when it was taken before start-up (the REPL waited for it).
    session_lock: Any = None
    summarizer_model: str | None = None
    workspace: Path | None = None
    compact_at: str | None = None
    mcp_config: tuple[Path, ...] = ()
    sandbox: str | None = None
    add_dirs: tuple[Path, ...] = ()  # --add-dir: more folders the file tools may read and write
    max_turns: int | None = None  # --max-turns: model calls in one turn (MINI_LETTA_MAX_TURNS, else 100)
    # --permission-mode, then Shift+Tab: made before the agent, so the REPL can change it while that builds.
    permission_mode: PermissionMode = field(default_factory=PermissionMode)
    # The run's one notice channel, made by whoever starts the run; the agent and its parts say into it.
    notices: Notices = field(default_factory=Notices)
    # An editor that holds the files and terminals (``mini-letta acp``'s client): toolbox/editor.py.
    editor: Any = None


def choose_provider(options: Options) -> str:
    """The explicit choice, else the first configured key or server address, else the demo model."""
    if options.provider:
        name = options.provider.lower()
        if name not in PROVIDERS:
            raise ConfigError(f"Unknown provider {options.provider!r}; choose one of {', '.join(PROVIDERS)}.")
        return name
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_API_KEY") or options.base_url or os.environ.get("OPENAI_BASE_URL"):
        return "openai"
    # A local Anthropic-compatible server (llama-server's /v1/messages) needs no key.
    if os.environ.get("ANTHROPIC_AUTH_TOKEN") or os.environ.get("ANTHROPIC_BASE_URL"):
        return "anthropic"
    return "demo"


def auto_compact_enabled() -> bool:
    return not config.env_flag("CODEAGENT_DISABLE_COMPACT")


def build_agent(options: Options, approver: Callable, provider=None,
                on_resumed: Callable[[Any, Path], None] | None = None, plan_reviewer=None) -> Agent:
    """Everything an agent needs. Imports the core here, not at CLI start-up, to keep --version fast.

    ``provider`` replaces the one ``options`` would create (tests pass a ScriptedProvider).
    ``on_resumed(loaded, path)`` is told what a resumed session's file held (the REPL's recap),
    so nothing loads it a second time. What the assembly finds to tell the user goes to
    ``options.notices``. ``plan_reviewer`` answers ``exit_plan_mode`` (``planning.py``; the REPL's
    asks the user, print mode's keeps the plan as the result).
    """
    from mini_letta.conversation import Conversation
    from mini_letta.cost import load_prices
    from mini_letta.hooks import load_hooks
    from mini_letta.instructions import load_instructions
    from mini_letta.loop.state import SessionState
    from mini_letta.memory import CoreMemory
    from mini_letta.providers import create_provider
    from mini_letta.sessions.store import SessionWriter
    from mini_letta.toolbox.permissions import settings_rules

    workspace = (options.workspace or Path.cwd()).resolve()
    home = config.home()
    say = options.notices.say
    rules = settings_rules(home, workspace, say)
    # Connecting in the background from here on, while the rest is built; the REPL never waits.
    mcp = open_mcp(options, home, workspace, rules)
    if provider is None:
        provider = create_provider(choose_provider(options), options.model, options.base_url, say=say)
    provider_name = provider.name

    budget = make_budget(provider, auto_compact_enabled(), options.compact_at, say)
    memory = CoreMemory.for_workspace(workspace, home, say)
    instructions = load_instructions(workspace, say=say)

    skills = load_skills(workspace, home, say)

    conversation, resumed = Conversation(), []
    path = session_to_resume(options, workspace, home)
    if path is not None:
        conversation, session, loaded = (fork_session(path, workspace, provider_name, provider.model, say)
                                         if options.fork_session else open_session(path, options.session_lock, say))
        if loaded.learned_window:
            budget.learn_window(loaded.learned_window)
        resumed = loaded.all_messages
        budget.counter.count_ahead(conversation.messages)
        if on_resumed is not None:
            on_resumed(loaded, path)
    else:
        session = SessionWriter.create(home, workspace, provider_name, provider.model,
                                       mode="print" if options.headless else None)

    # Print mode has no one to ask, so without --yolo its commands change nothing unless the
    # user chose a writable sandbox (--sandbox, MINI_LETTA_SANDBOX or settings.json).
    default_mode = "read-only" if options.headless and not options.yolo else None
    agent = assemble(provider, budget, workspace, approver=approver, memory=memory,
                     state=SessionState(session, conversation), record_checkpoints=True, add_dirs=options.add_dirs,
                     sandbox=make_sandbox(workspace, home, options.sandbox, default_mode, not options.headless, say),
                     rules=rules, instructions=instructions.text, mcp=mcp, editor=options.editor, resumed=resumed,
                     summarizer_model=options.summarizer_model or os.environ.get("MINI_LETTA_SUMMARIZER_MODEL"),
                     hooks=load_hooks(home, workspace, say), prices=load_prices(home, say), skills=skills,
                     subagents=register_subagents(home, workspace, say), say=say,
                     mode=options.permission_mode, plan_reviewer=plan_reviewer,
                     max_steps=options.max_turns
                     or config.env_positive_int("MINI_LETTA_MAX_TURNS", "model calls", say=say) or SETTINGS.loop.max_turns)
    agent.hooks.session_started("resume" if path is not None else "startup")
    # Print mode stays quiet on success (the JSON output carries window_source); the REPL says it.
    if budget.window_info.guessed and not options.headless:
        say(f"The context window of {provider.model!r} is not known, so mini-letta assumes "
            f"{budget.window:,} tokens; if the server's is smaller, set CODEAGENT_MAX_CONTEXT_TOKENS "
            f"to it (mini-letta also learns it from the first rejection).")
    supports_tools = getattr(provider, "template_supports_tools", lambda: None)()
    if supports_tools is False and not options.headless:
        say(f"{Path(provider.model).name if provider.model.endswith('.gguf') else provider.model} "
            f"cannot call tools on this server: its chat template has no tool support (llama.cpp "
            f"/props chat_template_caps.supports_tools is false), so the server leaves the tool "
            f"schemas out and the model can only answer in text. A model whose template supports "
            f"tools (Qwen2.5, Llama 3.1 or later) can read, edit and run code.")
    # Commands that run without asking (sandboxed, writable) outside git cannot be undone: say so
    # before the first one runs, not after it.
    sandbox = agent.toolbox.sandbox
    if (not options.headless and agent.checkpoints is not None and sandbox is not None and sandbox.active
            and sandbox.mode == "workspace-write"):
        text = agent.checkpoints.coverage_notice()
        if text:
            say(text)
    if options.headless:  # the servers print mode starts are the ones its tools may need
        mcp.servers.wait()
    return agent


def open_mcp(options: Options, home: Path, workspace: Path, rules: list[str]):
    """The MCP servers' tools for ``assemble``; print mode starts only the servers whose tools may run."""
    from mini_letta.mcp import open_tools
    from mini_letta.mcp.servers import print_mode_rule

    wanted, why = print_mode_rule(rules, options.yolo) if options.headless else (None, "")
    return open_tools(home, workspace, options.mcp_config, wanted=wanted, not_wanted=why, say=options.notices.say)


def assemble(provider, budget, workspace: Path, *, approver: Callable | None, memory=None,
             state=None, record_checkpoints: bool = False, sandbox=None, rules=(), add_dirs=(),
             permissions=None, watch_changes=None, tools=None, subagents=None, mcp=None, mode=None,
             plan_reviewer=None, editor=None, resumed=(), say: Say = quiet, hooks=None, instructions: str = "",
             summarizer_model: str | None = None, prices=None, skills=None,
             max_steps: int = SETTINGS.loop.max_turns, prompt_class: type | None = None) -> Agent:
    """An agent and every part it works with, each built before it is handed on: the toolbox (with
    the checkpoint recorder around its calls when ``record_checkpoints``) and the hooks wired to it,
    the agent's parts (``loop/parts.py`` ``build_parts``: model, ledger, journal, prompt, sizing,
    compaction), the agent holding them, the runner of its children (``subagents``, made with the
    agent itself), then the tools that act on the agent's own state (core memory,
    conversation_search, the task list, skills, ``task``) and ``mcp``'s tools (an ``McpTools``
    made before, its servers connecting). The one place this wiring is written:
    ``build_agent``, a subagent's ``child.AgentChild`` and the tests' ``agent_support.make_agent``
    all call it.

    A subagent's parts come as arguments: its parent's ``permissions`` and checkpoint recorder
    (``watch_changes``), ``tools(name)`` choosing the tools it may hold, its type's
    ``prompt_class`` (a ``loop.prompt.Prompt``; None: the usual one); ``subagents`` is a
    ``subagents.wiring.Delegation``: the agent's task tool and the runner of its children.
    ``say``: the run's notice channel, for the agent and the parts built here. ``mode``: the run's
    ``PermissionMode`` (a subagent has its parent's, through the permissions); with a
    ``plan_reviewer``, plan mode offers ``exit_plan_mode``. ``editor``: who holds the files and
    terminals (``toolbox/editor.py``), None for the disk and our shell."""
    from mini_letta.hooks import Hooks
    from mini_letta.loop.agent import Agent
    from mini_letta.loop.parts import build_parts
    from mini_letta.loop.prompt import Prompt
    from mini_letta.loop.state import SessionState
    from mini_letta.memory import memory_tools
    from mini_letta.todos.reattach import TodoReattacher
    from mini_letta.toolbox import Toolbox

    workspace = Path(workspace)
    state = state or SessionState()
    checkpoints = None
    if record_checkpoints:
        from mini_letta.checkpoints import create as create_checkpoints

        checkpoints = create_checkpoints(workspace, lambda: state.path, say)
    if checkpoints is not None:
        watch_changes = checkpoints.watch
    toolbox = Toolbox(workspace, approver, sandbox=sandbox, watch_changes=watch_changes,
                      permissions=permissions, select=tools, editor=editor)
    toolbox.permissions.add(list(rules))
    if mode is not None:
        toolbox.permissions.mode = mode
    for folder in add_dirs:
        toolbox.add_dir(folder)
    hooks = hooks or Hooks(workspace=workspace)
    if permissions is None:  # a subagent has its parent's, hooks included
        toolbox.permissions.hooks = hooks
        hooks.mode = toolbox.permissions.mode
        hooks.context = lambda: {"session_id": getattr(state.session, "id", None) or "",
                                 "transcript_path": str(state.path or "")}
    parts = build_parts(provider=provider, budget=budget, toolbox=toolbox, workspace=workspace, state=state,
                        memory=memory, instructions=instructions, summarizer_model=summarizer_model, hooks=hooks,
                        prices=prices, skills=skills, reattachers=(TodoReattacher(),),
                        prompt_class=prompt_class or Prompt, say=say)
    agent = Agent(parts=parts, max_steps=max_steps, checkpoints=checkpoints, mcp=mcp)
    if subagents is not None:  # the runner of this agent's children, made with the agent itself
        agent.subagents = subagents.runner(agent)
    # What a resumed session had learned, and the server's count of the floor, before the optional
    # tools below are offered by whether the floor still fits with them. The floor's form for the
    # window is decided once they are all in (``FloorForm.undecided``).
    agent.sizing.resume(list(resumed))
    agent.sizing.ask_server(as_sent=False)
    with agent.prompt.floor_form.undecided():
        if memory is not None:
            for spec, handler in memory_tools(memory, on_edit=agent.journal.memory_edit):
                toolbox.register(spec, handler, read_only=False)  # plan mode changes nothing, memory included
        register_window_tools(agent)
        register_skill_tool(agent)
        if agent.subagents is not None:
            subagents.offer(agent, agent.subagents)
        if mcp is not None:
            mcp.offer(agent)
        if mode is not None and plan_reviewer is not None:
            from mini_letta.planning import PlanTool

            PlanTool(mode, toolbox, plan_reviewer)
    agent.sizing.ask_server()  # the floor as sent, for the status bar and /context before the first turn
    return agent


def make_sandbox(workspace: Path, home: Path, mode: str | None, default: str | None = None,
                 say_off: bool = False, say: Say = quiet):
    """The sandbox bash runs in; where none can run, said once at start (every command then asks),
    and with ``say_off`` (the REPL) also when the user turned it off."""
    from mini_letta.toolbox.sandbox import DEFAULT_MODE, Sandbox, load_settings

    sandbox = Sandbox.create(workspace, load_settings(home, mode, default or DEFAULT_MODE, say=say), home)
    if sandbox.unavailable or (say_off and sandbox.settings.mode == "off"):
        say(sandbox.status())
    return sandbox


def make_budget(provider, auto_compact: bool, compact_at: str | None = None, say: Say = quiet):
    """The context budget for ``provider``'s model: its tokenizer and the window it is served with;
    a bad window setting or a tokenizer that cannot load is said through ``say``."""
    from mini_letta.context import ContextBudget, counter_for_model, resolve_window

    window_info = resolve_window(provider.model, provider.served_window(),
                                 served_source=getattr(provider, "served_window_source", None),
                                 custom_server=is_custom_server(provider), compact_at=compact_at, say=say)
    counter = counter_for_model(provider.model)
    problem = counter.problem()
    if problem:
        say(problem)
    return ContextBudget(counter, window_info, auto_compact=auto_compact,
                         floor_counter=getattr(provider, "served_floor", None))


def open_session(path: Path, lock=None, say: Say = quiet):
    """(conversation, writer, loaded) to go on with the session file at ``path``; warnings become notices.

    Its lock (``session_lock``) is taken before the file is read, so what is loaded is what this
    process goes on from; ``SessionBusyError`` while another process has it open."""
    from mini_letta.sessions.store import SessionWriter
    from mini_letta.sessions.lock import acquire

    lock = lock or acquire(path)
    return _go_on(path, lambda loaded: SessionWriter.open_existing(path, loaded=loaded, lock=lock), lock.release, say)


def fork_session(source: Path, workspace: Path, provider_name: str, model: str, say: Say = quiet):
    """Like :func:`open_session`, in a new session that starts with ``source``'s history (``--fork-session``,
    or the choice offered when ``source`` is open elsewhere); ``source`` is left as it is."""
    from mini_letta.sessions.store import SessionWriter

    writer = SessionWriter.create(config.home(), workspace, provider_name, model, fork_of=source)
    say(f"Forked session {Path(source).stem} into {writer.id}: the same history, from here on a session "
        "of its own; the original is left as it was.")

    def attach(loaded):
        writer.remember(loaded)
        return writer

    return _go_on(writer.path, attach, writer.close, say)


def _go_on(path: Path, writer_for: Callable, undo: Callable[[], None], say: Say):
    from mini_letta.conversation import Conversation
    from mini_letta.sessions.store import load_session

    try:
        loaded = load_session(path)
        writer = writer_for(loaded)
    except BaseException:
        undo()
        raise
    for warning in loaded.warnings:
        say(warning)
    conversation = Conversation(loaded.messages_in_context, loaded.next_seq, loaded.boundary_seq, loaded.turns)
    return conversation, writer, loaded


def resume_into(agent: Agent, path: Path, *, fork: bool = False, lock=None):
    """Make ``agent`` go on with the session at ``path`` (``/resume``), or with a fork of it;
    ``lock``: the session's lock when the caller waited for it. Returns the loaded session."""
    conversation, writer, loaded = (fork_session(path, agent.workspace, agent.provider.name, agent.provider.model,
                                                 agent.say) if fork else open_session(path, lock, agent.say))
    previous = agent.session
    agent.reset(writer, conversation)
    if loaded.learned_window:
        agent.budget.learn_window(loaded.learned_window)
    agent.sizing.resume(loaded.all_messages)
    if previous is not None:
        previous.close()
    return loaded


def switch_provider(agent: Agent, provider, compact_at: str | None = None) -> None:
    """Go on with ``provider`` (``/model``, ``/provider``): the window, threshold and tokenizer follow."""
    agent.provider = provider
    agent.budget = make_budget(provider, agent.budget.auto_compact, compact_at, agent.say)


def load_skills(workspace: Path, home: Path, say: Say = quiet):
    """The session's skills, read now; a problem with a skill file is a notice, never a failure."""
    from mini_letta.hooks import is_trusted
    from mini_letta.skills.skillset import SkillSet

    skills = SkillSet(workspace, home, lambda: is_trusted(home, workspace))
    for text in skills.reload():
        say(text)
    return skills


def register_skill_tool(agent: Agent) -> None:
    """The ``skill`` tool, while there are skills to offer (its schema is paid on every request)."""
    skills = agent.skills
    if skills is None:
        return
    offered = bool(skills.catalog.skills)
    if offered and "skill" not in agent.toolbox:
        spec, handler = skills.tool(agent.budget.counter.count_text, lambda: agent.sizing.tool_output_limit(agent.conversation, tokens=True))
        agent.toolbox.register(spec, handler, takes_limit=True)
    elif not offered and "skill" in agent.toolbox:
        agent.toolbox.unregister("skill")


def register_window_tools(agent: Agent) -> None:
    """The tools whose schemas a small window may have no room for (``loop/window_tools.py``):
    ``conversation_search`` over the agent's current session file (a new one after /clear), then
    ``todo_write``, the model's task list (``todos/``; the list lives in the conversation). Each is
    sent where the floor still fits with it, decided again whenever the window changes (learned,
    or another model's after ``/model``)."""
    from mini_letta.loop.window_tools import WindowTools
    from mini_letta.settings import SETTINGS
    from mini_letta.todos.tool import todo_tool
    from mini_letta.toolbox.recall import recall_tool

    optional = WindowTools(agent)
    spec, handler = recall_tool(lambda: agent.state.path)
    optional.offer(spec, handler, takes_limit=True)
    spec, handler = todo_tool()
    optional.offer(spec, handler, min_window=SETTINGS.todo_min_window)


def session_to_resume(options: Options, workspace: Path, home: Path) -> Path | None:
    """The session file ``--resume``/``--continue`` asks for, None for a new session; raises a
    one-line error when there is none (checked before the REPL opens, and again when it builds)."""
    from mini_letta.sessions.listing import find_session, newest_session

    if options.fork_session and not (options.resume or options.continue_session):
        raise ConfigError("--fork-session forks the session that -c or -r resumes; add one of them.")
    if options.resume:
        return find_session(home, options.resume)
    if not options.continue_session:
        return None
    path = newest_session(home, workspace, options.notices.say)
    if path is None:
        raise ConfigError(f"No earlier session with a conversation in {workspace} to continue; "
                          "start one without --continue.")
    return path


def is_custom_server(provider) -> bool:
    """A base URL of the user's own (a local or self-hosted server), where a model name says little
    about the window it is served with."""
    base_url = getattr(provider, "base_url", None)
    hosted = ("api.openai.com", "api.anthropic.com")
    return bool(base_url) and not any(host in base_url for host in hosted)


def register_subagents(home: Path, workspace: Path, say: Say = quiet):
    """The subagents room's wiring for the agent ``assemble`` builds (its ``subagents=``): the types
    of ``home`` and ``workspace``, children built by :func:`assemble` (``subagents/wiring.py``)."""
    from mini_letta.subagents.child import Builders
    from mini_letta.subagents.wiring import Delegation

    return Delegation(home, workspace, Builders(assemble, make_budget, _provider_beside, say))


def _provider_beside(current, model: str):
    """A provider of ``model`` on ``current``'s service, None when there is none (demo, scripted, no key)."""
    from mini_letta.providers import create_provider

    try:
        return create_provider(current.name, model, getattr(current, "base_url", None))
    except Exception:  # noqa: BLE001 - no such provider here, or no key
        return None
