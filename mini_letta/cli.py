"""The ``mini-letta`` command. Heavy modules are imported only once a command needs them.

Two invocations skip the option parser (Typer) entirely, because they run many times a day:
``mini-letta --version`` and the bare ``mini-letta`` that starts the REPL.
"""

from __future__ import annotations

import sys

from mini_letta import __version__


def main() -> None:
    arguments = sys.argv[1:]
    if arguments == ["--version"]:
        print(f"mini-letta {__version__}")
        return
    from mini_letta.guard import run_guarded

    try:
        if arguments:
            from mini_letta.cli_app import run_cli

            run_cli()
        else:
            run_guarded(_start_repl)
    except Exception as error:  # a bug of ours: one line for the user, the details in a file
        from mini_letta.trust.terminal_text import visible

        print(f"mini-letta: internal error ({type(error).__name__}: {visible(str(error))}); "
              f"details in {_save_traceback()}", file=sys.stderr)
        raise SystemExit(70) from None


def _start_repl() -> None:
    from mini_letta.app import Options
    from mini_letta.guard import run_guarded
    from mini_letta.repl.app import run_repl

    options = Options()  # the run's notices: a failure prints them before its line
    run_guarded(lambda: run_repl(options), options.notices)


def _save_traceback() -> str:
    import traceback

    from mini_letta import config

    try:
        path = config.private_folder(config.home()) / "last-error.log"
        # A traceback quotes arguments and local values, which may hold a key.
        try:
            from mini_letta.trust.redact import redact_text
            from mini_letta.trust.urls import mask_userinfo

            text = mask_userinfo(redact_text(traceback.format_exc()))
        except Exception:  # noqa: BLE001 - the detector itself may be what failed; never log in clear
            text = "".join(traceback.format_exception_only(*sys.exc_info()[:2])) + "(details left out: redaction failed)\n"
        config.write_private(path, text)
        return str(path)
    except OSError:
        return "(could not write the error log)"
