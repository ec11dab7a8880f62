"""One notice channel per run (issue 33 item 4): ``notices.Notices``, handed down as ``say``.

The structural tests fail if a module of ``mini_letta/`` keeps notices in module-level state again
(``config._notices`` and friends) or calls a reader that reports problems without handing it the
run's ``say`` (a reader's default drops what it finds).
"""

from __future__ import annotations

import ast
import threading
from pathlib import Path

from mini_letta.notices import Notices, prefixed

PACKAGE = Path(__file__).resolve().parents[1] / "mini_letta"


# --- the channel ----------------------------------------------------------------------------------
def test_each_text_is_said_once_per_channel_even_after_it_was_taken():
    channel = Notices()
    channel.say("Ignoring settings.json: it is not valid JSON.")
    assert channel.pending()
    assert channel.take() == ["Ignoring settings.json: it is not valid JSON."]
    channel.say("Ignoring settings.json: it is not valid JSON.")  # a second reader of the same file
    channel.say("another")
    assert channel.take() == ["another"] and not channel.pending()


def test_two_channels_share_nothing():
    first, second = Notices(), Notices()
    first.say("one")
    assert second.take() == [] and first.take() == ["one"]
    second.say("one")  # said in the other run: said here too
    assert second.take() == ["one"]


def test_two_threads_taking_never_both_get_a_text():
    channel = Notices()
    texts = [f"notice {n}" for n in range(2000)]
    taken: list[list[str]] = [[], []]

    def take(into: list[str]) -> None:
        while len(taken[0]) + len(taken[1]) < len(texts):
            into.extend(channel.take())

    threads = [threading.Thread(target=take, args=(box,)) for box in taken]
    for thread in threads:
        thread.start()
    for text in texts:
        channel.say(text)
    for thread in threads:
        thread.join()
    assert sorted(taken[0] + taken[1]) == sorted(texts)


def test_the_listener_is_told_after_a_new_text_only():
    told = []
    channel = Notices(on_said=lambda: told.append(channel.pending()))
    channel.say("x")
    channel.say("x")
    assert told == [True]


def test_a_prefixed_say_names_who_said_it():
    channel = Notices()
    prefixed(channel.say, "Subagent explore")("compacted")
    assert channel.take() == ["Subagent explore: compacted"]


# --- no global notice state -----------------------------------------------------------------------
GONE = {"notice", "take_notices", "has_notices", "reset_notices", "_notices", "_said", "_reported",
        "_notices_lock"}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def test_no_module_keeps_notices_in_module_level_state():
    found = []
    for name, tree in _modules():
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and ("notice" in target.id.lower() or target.id in GONE):
                    found.append(f"{name}: {target.id}")
            if isinstance(node, ast.FunctionDef) and name == "config.py" and node.name in GONE:
                found.append(f"{name}: def {node.name}")
    assert found == []


def test_no_module_calls_the_old_global_queue():
    found = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in GONE and isinstance(node.value, ast.Name)
                    and node.value.id == "config"):
                found.append(f"{name}:{node.lineno}: config.{node.attr}")
    assert found == []


# --- readers are handed the run's say ---------------------------------------------------------------
# A reader's ``say`` defaults to dropping what it finds (tests call them bare); in mini_letta/ each
# call passes the run's, by keyword or at this position, unless it is listed below with its reason.
READERS = {"settings_rules": 2, "load_settings": None, "read_workspace_text": None, "read_workspace_json": None,
           "load_hooks": 2, "load_prices": 1, "list_sessions": 2, "newest_session": 2, "create_provider": None,
           "policy_from_env": 0, "keep_days": 0, "resolve_window": None, "load_instructions": 2,
           "load_servers": None, "open_tools": None, "make_budget": 3, "open_session": 2, "fork_session": 4,
           "load_skills": 2, "register_subagents": 2, "make_sandbox": 5, "env_timeout": 0, "env_max_retries": 0}
QUIET = {
    ("toolbox/protected.py", "read_workspace_json"): "a broken file was said at start-up, not worth one per write",
    ("loop/sizing.py", "resolve_window"): "the summarizer's window only; the settings were said with the budget",
    ("sessions/listing.py", "list_sessions"): "an error naming recent sessions; damaged files are `sessions`' to say",
    ("subagents/shared_tools.py", "policy_from_env"): "the parent's open_tools said a bad setting",
    ("subagents/child.py", "make_budget"): "a child's budget; the parent's said the same settings",
    ("app.py", "create_provider"): "_provider_beside: a subagent's model, None when it cannot be made",
    ("mcp/cli.py", "load_servers"): "`mini-letta mcp list`/`get` show the servers' own state",
}


def test_every_reader_is_handed_the_runs_say():
    found = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if called not in READERS or (name, called) in QUIET:
                continue
            position = READERS[called]
            if any(keyword.arg == "say" for keyword in node.keywords):
                continue
            if position is not None and len(node.args) > position:
                continue
            found.append(f"{name}:{node.lineno}: {called}")
    assert found == []
