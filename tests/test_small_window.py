"""Long tool loops in small windows (issue 27): the agent loop with a scripted model and a strict server."""

from __future__ import annotations

import pytest

from agent_support import make_agent, request_tokens, script, tool_call

from mini_letta.errors import ContextFullError

WINDOW = 4_096


def write_files(workspace, count: int, lines: int = 120) -> list[str]:
    paths = []
    for n in range(count):
        path = workspace / f"mod_{n:02}.py"
        path.write_text("\n".join(f"def function_{n}_{i}(value):  # step {i} of module {n}\n    return value * {i}"
                                  for i in range(lines)))
        paths.append(path.name)
    return paths


def test_progress_guard_stops_a_model_that_repeats_the_same_call(tmp_path):
    write_files(tmp_path, 1)
    provider = script([tool_call("read_file", path="mod_00.py") for _ in range(30)],
                      window=WINDOW, count=request_tokens)
    agent = make_agent(provider, tmp_path, window=WINDOW)
    with pytest.raises(ContextFullError, match="nothing new came since the last compaction"):
        agent.run_turn("Read mod_00.py.")
    # One compaction made room; the next found only the same call and the same output again.
    assert len(agent.compactions) == 1, [(r.layers, r.tokens_before, r.tokens_after, r.messages_before, r.messages_after) for r in agent.compactions]
    assert provider.overflows == 0


def test_progress_guard_lets_a_model_that_reads_new_files_compact_as_often_as_it_needs(tmp_path):
    paths = write_files(tmp_path, 40)
    provider = script([tool_call("read_file", path=path) for path in paths] + ["All read."],
                      window=WINDOW, count=request_tokens)
    agent = make_agent(provider, tmp_path, window=WINDOW)
    result = agent.run_turn("Read every mod_*.py file, one by one.")
    assert result.stopped == "done" and result.text == "All read."
    assert agent.toolbox.files_read == paths
    assert len(result.compactions) > 4  # the old per-turn cap would have ended the turn here
    assert provider.overflows == 0
