"""The command line behind ``mini-letta`` (imported by :mod:`mini_letta.cli` on demand).

Parsed with argparse: the Typer release installed here builds a pydantic validator for every
non-boolean option, and importing pydantic alone took about a quarter of a second on each start.
"""

from __future__ import annotations

import argparse
import sys

from mini_letta import __version__, config
from mini_letta.app import CONFIGURE_HINT, Options
from mini_letta.errors import MiniLettaError

DESCRIPTION = "mini-letta: a terminal coding agent that keeps long sessions inside the context window."


def _fail(message: str, code: int = 1) -> None:
    # Notices queued before the failure often explain it (e.g. a damaged session behind "no session").
    for notice in config.take_notices():
        print(f"mini-letta: {notice}", file=sys.stderr)
    print(f"mini-letta: {message}", file=sys.stderr)
    raise SystemExit(code)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="mini-letta", description=DESCRIPTION,
                                   epilog="Start the REPL in the current folder, or run one prompt with -p.")
    root.add_argument("-p", "--print", dest="print_prompt", metavar="PROMPT",
                      help="Run one prompt without the REPL and exit.")
    root.add_argument("--output-format", choices=("text", "json"), default="text", help="For -p: text or json.")
    root.add_argument("--provider", help="openai, anthropic, ollama or demo.")
    root.add_argument("--model", help="Model name for the provider.")
    root.add_argument("--base-url", help="API base URL (OpenAI-compatible servers).")
    root.add_argument("--yolo", action="store_true", help="Run writes and commands without asking.")
    root.add_argument("-c", "--continue", dest="continue_session", action="store_true",
                      help="Resume the newest session here.")
    root.add_argument("-r", "--resume", metavar="ID", help="Resume the session with this id.")
    root.add_argument("--summarizer-model", help="A cheaper model for compaction summaries.")
    root.add_argument("--version", action="version", version=f"mini-letta {__version__}",
                      help="Show the version and exit.")
    commands = root.add_subparsers(dest="command", title="commands")
    listing = commands.add_parser("sessions", help="List saved sessions (newest first): id, time, first prompt, "
                                                   "messages, tokens.")
    listing.add_argument("--all", dest="all_workspaces", action="store_true", help="List sessions of every folder.")
    return root


def run_cli(argv: list[str] | None = None) -> None:
    """Parse ``argv`` (default: the process's arguments) and run the command; exits through SystemExit."""
    args = parser().parse_args(argv)
    if args.command == "sessions":
        sessions(args.all_workspaces)
        return
    options = Options(provider=args.provider, model=args.model, base_url=args.base_url, yolo=args.yolo,
                      headless=args.print_prompt is not None, continue_session=args.continue_session,
                      resume=args.resume, summarizer_model=args.summarizer_model)
    try:
        if args.print_prompt is not None:
            raise SystemExit(_run_print(options, args.print_prompt, args.output_format))
        from mini_letta.repl.app import run_repl

        run_repl(options)
    except MiniLettaError as error:
        _fail(str(error))
    except KeyboardInterrupt:
        _fail("interrupted", 130)


def _run_print(options: Options, prompt: str, output_format: str) -> int:
    from mini_letta.app import build_agent
    from mini_letta.headless import approver_for, run_print

    if not prompt.strip():
        _fail("the prompt given to -p is empty.")
    agent = build_agent(options, approver_for(options.yolo))
    if agent.provider.name == "demo" and options.provider is None:
        print(f"mini-letta: {CONFIGURE_HINT}", file=sys.stderr)
    return run_print(agent, prompt, output_format, agent.session.id if agent.session else "")


def sessions(all_workspaces: bool) -> None:
    """List saved sessions (newest first): id, time, first prompt, messages, tokens."""
    from pathlib import Path

    from rich.console import Console

    from mini_letta.session import list_sessions, session_table

    try:
        summaries = list_sessions(config.home(), None if all_workspaces else Path.cwd().resolve())
    except MiniLettaError as error:
        _fail(str(error))
    for notice in config.take_notices():  # damaged session files, left out of the list
        print(f"mini-letta: {notice}", file=sys.stderr)
    console = Console()
    if not summaries:
        console.print("No sessions yet for this folder. Start one with `mini-letta`.")
        return
    console.print(session_table(summaries))
