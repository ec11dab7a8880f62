"""Long tool loops in small windows (issue 27): the agent loop with a scripted model and a strict server."""

from __future__ import annotations

import pytest

from agent_support import fake_count, make_agent, request_tokens, script, tool_call, write_modules

from mini_letta.errors import ContextFullError
from mini_letta.loop.compacting import RoomMade

WINDOW = 4_096



def test_progress_guard_stops_a_model_that_repeats_the_same_call(tmp_path):
    write_modules(tmp_path, 1)
    provider = script([tool_call("read_file", path="mod_00.py") for _ in range(30)],
                      window=WINDOW, count=request_tokens)
    agent = make_agent(provider, tmp_path, window=WINDOW)
    with pytest.raises(ContextFullError, match="nothing new came since the last compaction"):
        agent.run_turn("Read mod_00.py.")
    # One compaction made room; the next found only the same call and the same output again.
    assert len(agent.compactions) == 1, [(r.layers, r.tokens_before, r.tokens_after, r.messages_before, r.messages_after) for r in agent.compactions]
    assert provider.overflows == 0


def test_progress_guard_lets_a_model_that_reads_new_files_compact_as_often_as_it_needs(tmp_path):
    paths = write_modules(tmp_path, 60)
    provider = script([tool_call("read_file", path=path) for path in paths] + ["All read."],
                      window=WINDOW, count=request_tokens)
    agent = make_agent(provider, tmp_path, window=WINDOW)
    result = agent.run_turn("Read every mod_*.py file, one by one.")
    assert result.stopped == "done" and result.text == "All read."
    assert agent.toolbox.files_read == paths
    assert len(result.compactions) > 4  # the old per-turn cap would have ended the turn here
    assert provider.overflows == 0


def test_a_file_read_cut_to_the_room_says_which_offset_continues_it(tmp_path):
    write_modules(tmp_path, 1, lines=400)
    provider = script([tool_call("read_file", path="mod_00.py"), "read"], window=WINDOW, count=request_tokens)
    agent = make_agent(provider, tmp_path, window=WINDOW)
    agent.run_turn("Read mod_00.py.")
    result = next(m for m in agent.conversation.messages if m.role == "tool")
    last_line = int(result.text.split("offset=")[1].split()[0].rstrip(";")) - 1
    assert f"{last_line:>6}\t" in result.text and f"{last_line + 1:>6}\t" not in result.text
    # The next step fits without compacting: the result left a whole reply's room below the threshold.
    assert agent.budget.calibration.request(agent.system_prompt(), agent.tool_specs(), agent.conversation.messages[:3]) \
        <= agent.budget.threshold - 512
    assert not agent.compactions


def test_dense_output_cut_in_tokens_keeps_whole_lines_and_names_the_offset():
    from mini_letta.toolbox.outcome import fit_tokens

    text = "\n".join(f"{n:>6}\t" + "数据" * 40 for n in range(1, 200))
    count = lambda value: len(value)  # noqa: E731  (one token a character: denser than the char cap assumes)
    cut = fit_tokens(text, 1_000, count, reader="read_file")
    body, note = cut.rsplit("\n", 1)
    assert count(body) <= 1_000
    last = int(body.rsplit("\n", 1)[-1].split("\t")[0])
    assert note == f"[output cut to about 1,000 tokens to fit the context; call read_file with offset={last + 1} to continue]"
    assert fit_tokens("short", 1_000, count) == "short"


# --- the compact floor ----------------------------------------------------------------------------

def full_agent(tmp_path, window, provider=None):
    from mini_letta.memory import CoreMemory

    provider = provider or script(["ok"] * 3, window=window, count=fake_count)
    return make_agent(provider, tmp_path, window=window,
                      memory=CoreMemory.for_workspace(tmp_path, tmp_path / "home"))


def test_the_floor_at_4k_is_at_most_a_fifth_of_the_window_by_the_servers_count(tmp_path):
    from mini_letta.providers.base import Request

    agent = full_agent(tmp_path, WINDOW)
    floor = Request(system=agent.system_prompt(), messages=[], tools=agent.tool_specs(), max_tokens=1)
    assert fake_count(floor) <= WINDOW * 0.2
    assert int(request_tokens(floor) * 1.3) <= WINDOW * 0.2  # a server counting 1.3 times what we count
    names = [spec.name for spec in agent.tool_specs()]
    assert names == ["read_file", "write_file", "edit_file", "bash", "grep", "glob"]
    assert "core_memory_append" not in agent.system_prompt() and "<persona>" in agent.system_prompt()
    # The usual floor would have taken over a quarter of the window.
    usual = Request(system="".join(agent.prompt.parts(compact=False)), messages=[],
                    tools=agent.toolbox.specs(), max_tokens=1)
    assert request_tokens(usual) > WINDOW * 0.25


def test_a_roomy_window_keeps_the_full_floor(tmp_path):
    agent = full_agent(tmp_path, 32_000)
    assert not agent.prompt.compact_floor()
    assert {"core_memory_append", "conversation_search"} <= {spec.name for spec in agent.tool_specs()}


def test_the_compact_floor_is_said_once_and_shown_in_context(tmp_path):
    import io

    from rich.console import Console

    from mini_letta.loop.agent import AgentEvents
    from mini_letta.repl.views import context_view

    class Notices(AgentEvents):
        def __init__(self):
            self.said = []

        def notice(self, text):
            self.said.append(text)

    agent = full_agent(tmp_path, WINDOW)
    events = Notices()
    agent.run_turn("hello", events)
    agent.run_turn("again", events)
    compact = [text for text in events.said if "compact system prompt and short tool descriptions" in text]
    assert len(compact) == 1 and "without memory editing and conversation_search" in compact[0]
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(context_view(agent))
    assert "compact system prompt and short tool descriptions" in console.export_text()


def test_over_the_threshold_the_reply_budget_shrinks_before_a_turn_is_refused(tmp_path):
    from agent_support import sized_text

    from mini_letta.context.threshold import output_reserve
    from mini_letta.conversation import Conversation
    from mini_letta.messages import Message

    def agent_with(history_tokens):
        conversation = Conversation()
        conversation.append(Message.user("Earlier: " + sized_text(history_tokens)))
        conversation.append(Message.assistant("Noted."))
        provider = script(["ok"], window=WINDOW, count=request_tokens)
        agent = make_agent(provider, tmp_path, window=WINDOW, lean_system="You are a coding agent.",
                           tool_names=(), conversation=conversation)
        # Compaction cannot help here (it makes no room): the reply must shrink.
        agent.compacting.make_room = lambda *args, **kwargs: RoomMade()
        return agent, provider

    agent, provider = agent_with(3_400)
    assert agent.run_turn("go on").text == "ok"
    sent = provider.requests[-1]
    prompt = request_tokens(sent)
    assert prompt > agent.budget.threshold  # over the threshold, yet sent
    assert sent.max_tokens == min(output_reserve(WINDOW), WINDOW - prompt) and prompt + sent.max_tokens <= WINDOW

    agent, provider = agent_with(3_900)
    with pytest.raises(ContextFullError, match=r"of 4,096 tokens\) and compaction could not free enough room "
                                               r"\(a reply would have \d+ tokens\)"):
        agent.run_turn("go on")
    assert provider.requests == []


def test_the_floor_form_is_decided_with_every_tool_registered(tmp_path):
    """The form is decided once per window; decided while the assembly was still registering tools
    (memory, recall, todo, skills, MCP), a window that only those tools crowd kept the usual floor."""
    from mini_letta.settings import SETTINGS

    probe = full_agent(tmp_path, 32_000)
    calibration, share = probe.budget.calibration, SETTINGS.compact_floor_share
    usual_system = "".join(probe.prompt.parts(compact=False))
    late = {"core_memory_append", "core_memory_replace", "conversation_search", "todo_write"}
    whole = calibration.floor_calibrated(usual_system, probe.toolbox.specs())
    early = calibration.floor_calibrated(usual_system, [s for s in probe.toolbox.specs() if s.name not in late])
    window = int(whole / share) - 200  # the whole floor crowds it; the floor without the late tools did not
    assert early <= window * share < whole
    agent = full_agent(tmp_path, window)
    assert agent.prompt.compact_floor()
    assert agent.prompt.floor_form.full_tokens == whole  # decided on the whole floor, late tools in


def test_near_the_threshold_a_read_gets_what_a_compaction_leaves_not_a_few_lines(tmp_path):
    """A read that found a little room left below the threshold was cut to it (four lines of a
    120-line file, every third read); the output may take what a compaction leaves instead, and the
    loop compacts before the next step."""
    import re

    paths = write_modules(tmp_path, 30)
    provider = script([tool_call("read_file", path=path) for path in paths] + ["All read."],
                      window=WINDOW, count=request_tokens)
    agent = make_agent(provider, tmp_path, window=WINDOW)
    result = agent.run_turn("Read every file.")
    assert result.stopped == "done" and provider.overflows == 0
    # Each read as the request after it carried it (older ones are cleared or summarised later).
    newest = [request.messages[-1] for request in provider.requests
              if request.purpose != "summary" and request.messages and request.messages[-1].role == "tool"]
    shown = [len(re.findall(r"^\s+\d+\t", m.text, re.M)) for m in newest]
    assert shown and min(shown) >= 40, shown
