"""The Typer application behind ``mini-letta`` (imported by :mod:`mini_letta.cli` on demand).

Typer is pinned below 0.29: from that release on it validates options through pydantic, whose
import alone added about a quarter of a second to every start (the REPL's prompt included).
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import NoReturn, Optional

import typer

from mini_letta import __version__, config
from mini_letta.app import NO_PROVIDER_FOR_PRINT, Options, choose_provider
from mini_letta.errors import MiniLettaError
from mini_letta.guard import fail, run_guarded
from mini_letta.mcp.cli import app as mcp_app
from mini_letta.trust.terminal_text import visible

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="mini-letta: a terminal coding agent that keeps long sessions inside the context window.")


STDIN_PROMPT = "-"

app.add_typer(mcp_app, name="mcp")


class SandboxMode(str, Enum):
    workspace_write = "workspace-write"
    read_only = "read-only"
    off = "off"


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


PICK_FLAG = "--pick-session"


@app.callback(invoke_without_command=True)
def run(
    ctx: typer.Context,
    print_prompt: Optional[str] = typer.Option(
        None, "-p", "--print", help="Run one prompt without the REPL and exit; without a prompt (or with -) it is read "
                                    "from standard input, and piped input is added to a given prompt."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--output-format", help="For -p: text or json."),
    provider: Optional[str] = typer.Option(None, "--provider", help="openai, openai-responses, anthropic, ollama or demo."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name for the provider."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="API base URL (OpenAI-compatible servers)."),
    yolo: bool = typer.Option(False, "--yolo", help="Run writes and commands without asking."),
    continue_session: bool = typer.Option(False, "-c", "--continue", help="Resume the newest session here."),
    resume: Optional[str] = typer.Option(None, "-r", "--resume", help="Resume the session with this id."),
    fork_session: bool = typer.Option(False, "--fork-session",
                                      help="With -c or -r: go on in a new session that starts from the same history."),
    summarizer_model: Optional[str] = typer.Option(None, "--summarizer-model",
                                                   help="A cheaper model for compaction summaries."),
    compact_at: Optional[str] = typer.Option(
        None, "--compact-at", metavar="PCT",
        help="Compact when the context reaches PCT% of the window (default: window less 16k, or 80% of a "
             "small one); overrides CODEAGENT_AUTO_COMPACT_PCT."),
    mcp_config: Optional[list[str]] = typer.Option(
        None, "--mcp-config", metavar="FILE",
        help="Start the MCP servers of this .mcp.json-shaped file too (may be given more than once)."),
    sandbox: Optional[SandboxMode] = typer.Option(
        None, "--sandbox", help="Where commands run: workspace-write (default where bubblewrap runs: only the "
                                "workspace writable, no network, secrets hidden; no approval needed), read-only, "
                                "or off (each command asks)."),
    add_dir: Optional[list[str]] = typer.Option(
        None, "--add-dir", metavar="DIR",
        help="Another folder the file tools may read and write, as the workspace (may be given more than once)."),
    max_turns: Optional[int] = typer.Option(
        None, "--max-turns", min=1, metavar="N",
        help="Model calls in one turn before it stops (-p) or asks whether to go on (REPL); default 100."),
    permission_mode: Optional[str] = typer.Option(
        None, "--permission-mode", metavar="MODE",
        help="default, acceptEdits (file edits run without asking) or plan (read-only tools only, until "
             "the model's plan is approved; with -p the plan is the result). Shift+Tab cycles them in the REPL."),
    version: bool = typer.Option(False, "--version", help="Show the version and exit."),
    # `-r` given no id: see _bare_resume_picks.
    pick_session: bool = typer.Option(False, PICK_FLAG, hidden=True),
) -> None:
    """Start the REPL in the current folder, or run one prompt with -p."""
    if version:
        print(f"mini-letta {__version__}")
        raise typer.Exit()
    if ctx.invoked_subcommand:
        return
    options = Options(provider=provider, model=model, base_url=base_url, yolo=yolo,
                      headless=print_prompt is not None, continue_session=continue_session, resume=resume,
                      fork_session=fork_session,
                      summarizer_model=summarizer_model, compact_at=compact_at,
                      mcp_config=tuple(Path(path) for path in mcp_config or ()),
                      sandbox=sandbox.value if sandbox else None,
                      add_dirs=tuple(Path(path) for path in add_dir or ()), max_turns=max_turns)
    options.pick_session = pick_session
    if permission_mode is not None:
        try:
            options.permission_mode.set(permission_mode)
        except ValueError as error:
            fail(f"--permission-mode: {error}")
    if print_prompt is not None:
        if pick_session:
            fail("-r without an id lists the sessions to pick from in the REPL; with -p give the id "
                 "(`mini-letta sessions` lists them).")
        run_guarded(lambda: _exit_with(_run_print(options, print_prompt, output_format.value)), options.notices)
        return
    if output_format is OutputFormat.json:
        options.notices.say("--output-format json applies only with -p; the REPL shows its replies as text.")
    from mini_letta.repl.app import run_repl

    # A session that cannot be found ends here, before the REPL opens, with or without a terminal.
    run_guarded(lambda: _check_resumable(options), options.notices)
    run_guarded(lambda: run_repl(options), options.notices)


def _check_resumable(options: Options) -> None:
    if options.resume or options.continue_session or options.fork_session:
        from pathlib import Path

        from rich.console import Console

        from mini_letta.app import session_to_resume
        from mini_letta.repl.session_busy import settle_at_start

        path = session_to_resume(options, Path.cwd().resolve(), config.home())
        settle_at_start(options, path, Console(highlight=False), sys.stdin.isatty() and sys.stdout.isatty())


def _with_standard_input(prompt: str, stdin) -> str:
    """``-p -`` reads the whole prompt from standard input; piped input after a prompt is added to it."""
    interactive = stdin is None or stdin.isatty()
    if prompt == STDIN_PROMPT:
        if interactive:
            fail("-p without a prompt reads it from standard input, but nothing is piped in; "
                 "give the prompt after -p or pipe it, e.g. `mini-letta -p - < prompt.txt`.")
        text = _read_all(stdin)
        if not text.strip():
            fail("the prompt read from standard input (-p without a prompt) is empty.")
        return text
    if interactive:
        return prompt
    piped = _read_all(stdin)
    return f"{prompt}\n\n{piped}" if piped.strip() else prompt


def _read_all(stdin) -> str:
    # Bytes decoded leniently: a stray invalid byte in a piped file must not end the run.
    source = getattr(stdin, "buffer", None)
    return source.read().decode("utf-8", errors="replace") if source is not None else stdin.read()


def _exit_with(code: int) -> NoReturn:
    raise SystemExit(code)


def run_cli(argv: list[str] | None = None) -> None:
    """Parse ``argv`` (default: the process's arguments) and run the command; exits through SystemExit."""
    arguments = _bare_resume_picks(sys.argv[1:] if argv is None else list(argv))
    app(args=_bare_print_reads_stdin(arguments), prog_name="mini-letta")


def _bare_resume_picks(argv: list[str]) -> list[str]:
    """``-r`` given no id (last, or followed by another option) lists the sessions to pick from."""
    index = _bare_option(argv, ("-r", "--resume"))
    return argv if index is None else argv[:index] + [PICK_FLAG] + argv[index + 1:]


def _bare_print_reads_stdin(argv: list[str]) -> list[str]:
    """``-p`` given no prompt (last, or followed by another option) means ``-p -``: read standard input."""
    index = _bare_option(argv, ("-p", "--print"))
    return argv if index is None else argv[:index + 1] + [STDIN_PROMPT] + argv[index + 1:]


def _bare_option(argv: list[str], names: tuple[str, ...]) -> int | None:
    """Where the first of ``names`` stands if it is given without a value (last, or followed by
    another option); None when it is not there, or has its value."""
    options = {name for param in typer.main.get_command(app).params for name in param.opts}
    for index, argument in enumerate(argv):
        if argument == "--":
            break
        if argument in names:
            following = argv[index + 1] if index + 1 < len(argv) else None
            return index if following is None or following in options else None
    return None


def _run_print(options: Options, prompt: str, output_format: str) -> int:
    from mini_letta.app import build_agent
    from mini_letta.headless import approver_for, run_print

    prompt = _with_standard_input(prompt, sys.stdin)
    if not prompt.strip():
        fail("the prompt given to -p is empty.", notices=options.notices)
    if choose_provider(options) == "demo" and options.provider is None:
        # A script must never take the demo model's canned answer for a real one.
        fail(NO_PROVIDER_FOR_PRINT, notices=options.notices)
    from mini_letta.planning import KeepPlan

    plan = KeepPlan()
    agent = build_agent(options, approver_for(options.yolo), plan_reviewer=plan)
    new_session = not (options.resume or options.continue_session or options.fork_session)
    try:
        return run_print(agent, prompt, output_format, agent.session.id if agent.session else "",
                         discard_unanswered=new_session, notices=options.notices, plan=plan)
    finally:
        from mini_letta.toolbox.background import close_all

        close_all()  # the run is the session: its background commands end with it


@app.command("sessions")
def sessions(all_workspaces: bool = typer.Option(False, "--all", help="List sessions of every folder.")) -> None:
    """List saved sessions (newest first): id, time, first prompt, messages, tokens, cost."""
    from pathlib import Path

    from rich.console import Console

    from mini_letta.notices import Notices
    from mini_letta.sessions.listing import list_sessions, session_table

    notices = Notices()
    try:
        summaries = list_sessions(config.home(), None if all_workspaces else Path.cwd().resolve(), notices.say)
    except MiniLettaError as error:
        fail(str(error), notices=notices)
    for notice in notices.take():  # damaged session files, left out of the list
        print(f"mini-letta: {visible(notice)}", file=sys.stderr)
    console = Console()
    if not summaries:
        console.print("No sessions yet for this folder. Start one with `mini-letta`.")
        return
    console.print(session_table(summaries, width=console.width, home=config.home()))


@app.command("rewind")
def rewind(
    list_points: bool = typer.Option(False, "--list", help="List your messages, numbered, with the files changed since."),
    to: Optional[int] = typer.Option(None, "--to", metavar="N", help="Go back to message N: files and conversation."),
    code_only: bool = typer.Option(False, "--code-only", help="With --to: restore the files only."),
    overwrite_changed: bool = typer.Option(False, "--force", "--overwrite-changed",
                                           help="With --to: also restore files changed since by someone else."),
    resume: Optional[str] = typer.Option(None, "-r", "--resume", help="The session (default: the newest here)."),
) -> None:
    """The /rewind of the REPL for scripts: --list, or --to N [--code-only] on a saved session."""
    from pathlib import Path

    from mini_letta.app import session_to_resume
    from mini_letta.checkpoints.script import run as run_rewind

    workspace = Path.cwd().resolve()
    options = Options(resume=resume, continue_session=resume is None)
    try:
        path = session_to_resume(options, workspace, config.home())
        code = run_rewind(path, workspace, list_only=list_points, to=to, code_only=code_only,
                          overwrite_changed=overwrite_changed, say=lambda text: print(visible(text)))
    except MiniLettaError as error:
        fail(str(error), notices=options.notices)
    _exit_with(code)


@app.command("acp")
def acp(
    provider: Optional[str] = typer.Option(None, "--provider", help="openai, anthropic, ollama or demo."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name for the provider."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="API base URL (OpenAI-compatible servers)."),
    summarizer_model: Optional[str] = typer.Option(None, "--summarizer-model",
                                                   help="A cheaper model for compaction summaries."),
    compact_at: Optional[str] = typer.Option(None, "--compact-at", metavar="PCT",
                                             help="Compact when the context reaches PCT% of the window."),
    mcp_config: Optional[list[str]] = typer.Option(None, "--mcp-config", metavar="FILE",
                                                   help="Start the MCP servers of this .mcp.json-shaped file too."),
    sandbox: Optional[SandboxMode] = typer.Option(None, "--sandbox", help="Where commands run: workspace-write, "
                                                                           "read-only or off (each command asks)."),
    max_turns: Optional[int] = typer.Option(None, "--max-turns", min=1, metavar="N",
                                            help="Model calls in one turn before it stops; default 100."),
) -> None:
    """Serve the Agent Client Protocol on standard input and output, for an editor (Zed, JetBrains, Neovim)."""
    from mini_letta.acp import run as run_acp

    options = Options(provider=provider, model=model, base_url=base_url, summarizer_model=summarizer_model,
                      compact_at=compact_at, mcp_config=tuple(Path(path) for path in mcp_config or ()),
                      sandbox=sandbox.value if sandbox else None, max_turns=max_turns)
    run_guarded(lambda: _exit_with(run_acp(options)), options.notices)
