"""Start-up imports only what the command needs: no SDK, tokenizer or Markdown renderer before it is used.

Every check runs in a fresh interpreter (``sys.modules`` of this test process is already full) and
looks at ``sys.modules`` at the moment that matters; nothing is timed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Slow to import, and needed only once a model is called, a reply rendered or a token counted.
HEAVY = ("openai", "anthropic", "httpx", "httpx2", "tiktoken", "rich.markdown", "pygments", "markdown_it",
         "detect_secrets")
# Needed by the REPL and `sessions`, never by --version, --help or -p.
TERMINAL = ("prompt_toolkit", "rich")
# Typer parses the command line; the Typer releases that validate options with pydantic are excluded
# by the version pin, because importing pydantic costs about a quarter of a second.
PARSING = ("pydantic",)
# Both providers post their request bodies over httpx2 themselves (with a key): no SDK is imported.
# The Agent Client Protocol's SDK (with pydantic) is for `mini-letta acp` only.
SDKS = ("openai", "anthropic", "pydantic", "acp")


def _run_driver(code: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh interpreter in an empty workspace; it writes its findings to the file
    named by its first argument."""
    workspace = tmp_path / "work"
    workspace.mkdir(exist_ok=True)
    report = tmp_path / "report.json"
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent(code), str(report), *args], cwd=workspace,
                               env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    return json.loads(report.read_text())


CLI_DRIVER = """
    import contextlib, io, json, sys
    report, argv = sys.argv[1], sys.argv[2:]
    sys.argv = ["mini-letta", *argv]
    from mini_letta.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main()
        except SystemExit as exit:
            code = exit.code or 0
        else:
            code = 0
    with open(report, "w") as handle:
        json.dump({"code": code, "stdout": out.getvalue(), "modules": sorted(sys.modules)}, handle)
"""


def _cli(tmp_path: Path, *argv: str) -> dict:
    return _run_driver(CLI_DRIVER, tmp_path, *argv)


def test_version_imports_neither_typer_nor_anything_heavy(tmp_path):
    result = _cli(tmp_path, "--version")
    assert result["code"] == 0
    assert result["stdout"].startswith("mini-letta ")
    loaded = set(result["modules"])
    assert loaded & set(HEAVY + TERMINAL + PARSING + ("typer", "argparse")) == set()
    assert not any(name.startswith("mini_letta.") and name != "mini_letta.cli" for name in loaded)


def test_help_imports_no_sdk_tokenizer_or_terminal_library(tmp_path):
    result = _cli(tmp_path, "--help")
    assert result["code"] == 0
    assert "--print" in result["stdout"]
    loaded = set(result["modules"])
    assert loaded & set(HEAVY + TERMINAL + PARSING) == set()
    assert loaded.isdisjoint({"mini_letta.loop.agent", "mini_letta.compaction", "mini_letta.toolbox",
                              "mini_letta.providers.openai_provider", "mini_letta.providers.anthropic_provider"})


def test_print_mode_with_the_demo_model_loads_only_the_tokenizer_of_the_heavy_modules(tmp_path):
    result = _cli(tmp_path, "--provider", "demo", "-p", "hi")
    assert result["code"] == 0
    assert "You said" in result["stdout"]
    loaded = set(result["modules"])
    assert loaded & set(HEAVY + TERMINAL + PARSING + SDKS) == {"tiktoken"}
    assert not any(name.startswith("mini_letta.acp") for name in loaded)


# Runs the real REPL on a pipe for input and an in-memory terminal that notes which modules are
# loaded when the prompt is first written to it, then answers Ctrl-D and waits for the agent.
REPL_DRIVER = """
    import io, json, sys
    from pathlib import Path
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.data_structures import Size
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output.vt100 import Vt100_Output
    from rich.console import Console

    from mini_letta.app import Options
    from mini_letta.repl.app import Repl

    class Terminal(Vt100_Output):
        def __init__(self, keys):
            super().__init__(io.StringIO(), lambda: Size(rows=30, columns=100), term="xterm-256color")
            self.keys = keys
            self.at_prompt = None

        def write(self, data):
            if self.at_prompt is None and "\\u203a" in data:
                self.at_prompt = sorted(sys.modules)
                self.keys.send_text("\\x04")
            super().write(data)

    with create_pipe_input() as keys:
        terminal = Terminal(keys)
        with create_app_session(input=keys, output=terminal):
            # A model is named: without one, a server where nothing answers stops the start-up.
            repl = Repl(Options(provider=PROVIDER, base_url=BASE_URL, model="test-model"),
                        Console(file=io.StringIO()))
            code = repl.run()
    agent = repl.agent()
    with open(sys.argv[1], "w") as handle:
        json.dump({"code": code, "at_prompt": terminal.at_prompt, "provider": agent.provider.name,
                   "after_start": sorted(sys.modules)}, handle)
"""


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_repl_draws_its_prompt_before_the_transport_and_tokenizer_load(tmp_path, provider):
    base_url = f"http://127.0.0.1:{_closed_port()}" + ("/v1" if provider == "openai" else "")
    code = REPL_DRIVER.replace("PROVIDER", repr(provider)).replace("BASE_URL", repr(base_url))
    env = {"OPENAI_API_KEY": "test-key"} if provider == "openai" else {"ANTHROPIC_API_KEY": "test-key"}
    result = _run_driver(code, tmp_path, env=env)

    assert result["code"] == 0
    assert result["at_prompt"] is not None, "the prompt was never drawn"
    assert set(result["at_prompt"]) & set(HEAVY) == set()
    # The same snapshot taken once the agent is up does see them: the check above can fail.
    assert result["provider"] == provider
    assert {"httpx2", "tiktoken"} <= set(result["after_start"])
    assert set(result["after_start"]) & set(SDKS) == set()  # the providers send without an SDK


# The start-up's two jobs on the REPL's side: the agent is handed over once the first request can
# be sent; the warm-up for the reply (held here until the snapshot is taken) runs after it.
HANDOVER_DRIVER = """
    import io, json, sys, threading
    from rich.console import Console
    from mini_letta.app import Options
    from mini_letta.repl.startup import Startup

    class Approvals:
        approve = staticmethod(lambda *args, **kwargs: True)
        allowed_without_asking = staticmethod(lambda *args, **kwargs: None)

    snapshot_taken = threading.Event()
    warm_for_reply = Startup._warm_for_reply
    def held_warm(self):
        snapshot_taken.wait(60)
        warm_for_reply(self)
    Startup._warm_for_reply = held_warm

    startup = Startup(Options(provider=PROVIDER, base_url=BASE_URL, model="test-model"),
                      Console(file=io.StringIO()), Approvals())
    startup.start()
    agent = startup.agent()
    from mini_letta.repl.events import ReplEvents  # what Repl.send imports before the request
    handed_over = sorted(sys.modules)
    snapshot_taken.set()
    startup._executor.shutdown(wait=True)
    with open(sys.argv[1], "w") as handle:
        json.dump({"handed_over": handed_over, "after_warm": sorted(sys.modules)}, handle)
"""
# What only the reply needs: the Markdown renderer. YAML only reads skill and agent files.
FOR_THE_REPLY = ("rich.markdown", "markdown_it", "mini_letta.repl.markdown_stream", "yaml")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_agent_is_handed_over_before_what_only_the_reply_needs(tmp_path, provider):
    base_url = f"http://127.0.0.1:{_closed_port()}" + ("/v1" if provider == "openai" else "")
    code = HANDOVER_DRIVER.replace("PROVIDER", repr(provider)).replace("BASE_URL", repr(base_url))
    env = {"OPENAI_API_KEY": "test-key"} if provider == "openai" else {"ANTHROPIC_API_KEY": "test-key"}
    result = _run_driver(code, tmp_path, env=env)

    handed_over = set(result["handed_over"])
    # What the first request needs is there: its transport, the tokenizer, the secret detector.
    assert {"httpx2", "tiktoken", "detect_secrets", "mini_letta.repl.events"} <= handed_over
    assert handed_over & set(FOR_THE_REPLY) == set()
    # Then the warm-up does the rest, before any reply.
    assert {"rich.markdown", "mini_letta.repl.markdown_stream"} <= set(result["after_warm"])
    assert set(result["after_warm"]) & set(SDKS) == set()


def test_the_bare_command_reaches_the_repl_without_the_option_parser():
    probe = textwrap.dedent("""
        import json, sys
        sys.argv = ["mini-letta"]
        from mini_letta import cli
        cli._start_repl = lambda: print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "typer")))
        cli.main()
    """)
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == []
