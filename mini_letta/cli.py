"""The ``mini-letta`` command. Heavy modules are imported only once a command needs them."""

from __future__ import annotations

import sys

from mini_letta import __version__


def main() -> None:
    # `--version` answers before Typer (and anything else) is imported: it runs on every install check.
    if sys.argv[1:] == ["--version"]:
        print(f"mini-letta {__version__}")
        return
    try:
        from mini_letta.cli_app import run_cli

        run_cli()
    except Exception as error:  # a bug of ours: one line for the user, the details in a file
        print(f"mini-letta: internal error ({type(error).__name__}: {error}); "
              f"details in {_save_traceback()}", file=sys.stderr)
        raise SystemExit(70) from None


def _save_traceback() -> str:
    import traceback

    from mini_letta import config

    try:
        path = config.home() / "last-error.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(traceback.format_exc(), encoding="utf-8")
        return str(path)
    except OSError:
        return "(could not write the error log)"
