"""The floor as the server counts it (llama.cpp ``/apply-template`` + ``/tokenize``), over real HTTP
to the fake llama-server, whose SmolLM2-like template leaves the tool schemas out, as the real one
does: our own count of system prompt + tools (~1,700 tokens) would leave no room at a 2,048 window,
though the server counts well under half of that."""

import pytest
from fakes import Reply
from fakes.anthropic_server import FakeAnthropicServer
from fakes.local import SMOLLM2
from test_repl_context_view import numbers, rendered
from pty_support import screen_after

from mini_letta.app import Options, build_agent, make_budget
from mini_letta.messages import Message, ToolSpec, Usage
from mini_letta.providers import create_provider, probe
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.repl.views import context_view, model_label
from mini_letta.toolbox.approval import approve_all

SYSTEM = "You are a careful coding agent. Read before you edit, and say what you changed."
TOOLS = [ToolSpec("read_file", "Read a file of the workspace and return its text with line numbers. " * 20,
                  {"type": "object", "properties": {"path": {"type": "string", "description": "the file"}}})]
PROSE = ("The harness keeps a long session inside the window by counting what every request costs and "
         "compacting before the server has to refuse it. ")


@pytest.fixture(autouse=True)
def local_server_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def openai_at(server):
    return create_provider("openai", SMOLLM2, server.base_url, timeout=2, max_retries=0)


def server_count(server, system, tools=None):
    """What the fake charges for a request of ``system``, a one-word user turn and ``tools``."""
    body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": "."}]}
    return server.prompt_tokens(dict(body, tools=tools) if tools else body)


# --- asking -----------------------------------------------------------------------------------------
def test_a_template_without_tool_support_leaves_the_schemas_out_of_the_served_floor(server):
    server.as_llama_cpp(2048, supports_tools=False)
    floor = openai_at(server).served_floor(SYSTEM, TOOLS)
    assert floor is not None
    assert floor.tokens == server_count(server, SYSTEM)
    assert floor.system_text > 0
    rendered = server.requests_to("/apply-template")[0].body
    assert rendered["tools"][0]["function"]["name"] == "read_file"  # asked with the schemas all the same


def test_a_template_with_tool_support_counts_the_schemas(server):
    server.as_llama_cpp(2048, supports_tools=True)
    tools = [{"type": "function", "function": spec.to_dict()} for spec in TOOLS]
    floor = openai_at(server).served_floor(SYSTEM, TOOLS)
    assert floor is not None and floor.tokens == server_count(server, SYSTEM, tools)
    assert floor.tokens > server_count(server, SYSTEM) + 200


def test_the_anthropic_provider_asks_llama_server_in_the_same_shape():
    with FakeAnthropicServer() as server:
        server.as_llama_cpp(2048)
        provider = create_provider("anthropic", SMOLLM2, server.base_url, timeout=2, max_retries=0)
        floor = provider.served_floor(SYSTEM, TOOLS)
        assert floor is not None and floor.tokens == server_count(server, SYSTEM)


def test_a_server_that_is_not_llama_cpp_is_not_asked_to_count(server):
    server.as_vllm("qwen", 8192)
    assert openai_at(server).served_floor(SYSTEM, TOOLS) is None
    assert server.requests_to("/apply-template") == [] and server.requests_to("/tokenize") == []


def test_the_floor_is_asked_once_per_system_prompt_and_again_when_it_changes(server):
    server.as_llama_cpp(2048)
    provider = openai_at(server)
    first = provider.served_floor(SYSTEM, TOOLS)
    assert provider.served_floor(SYSTEM, TOOLS) == first
    assert len(server.requests_to("/apply-template")) == 1
    longer = provider.served_floor(SYSTEM + " " + PROSE, TOOLS)
    assert len(server.requests_to("/apply-template")) == 2
    assert longer is not None and first is not None and longer.tokens > first.tokens


def test_a_template_that_cannot_be_rendered_gives_no_floor(server):
    server.as_llama_cpp(2048)
    server.templates = False  # an older llama-server: /apply-template answers 404
    assert openai_at(server).served_floor(SYSTEM, TOOLS) is None


# --- using it ---------------------------------------------------------------------------------------
def test_a_small_window_is_usable_when_the_template_drops_the_tools(server, workspace):
    """The real-server failure: at -c 2048, our count of the floor alone is over the 0%-left point,
    so every message was refused before sending. By the server's count it fits, and it does."""
    server.as_llama_cpp(2048)
    server.enqueue(Reply(text="Noted."), Reply(text="Noted again."))
    agent = build_agent(Options(base_url=server.base_url, workspace=workspace, headless=True), approve_all)
    system, tools = agent.system_prompt(), agent.tool_specs()
    budget = agent.budget
    assert budget.window == 2048
    # By our own count the usual floor alone is over the 0%-left point: nothing could be sent.
    assert budget.calibration.floor("".join(agent.prompt.parts(compact=False)), agent.toolbox.specs()) > budget.limit
    served = budget.calibration.floor_calibrated(system, tools)
    assert served < budget.limit // 2

    message = PROSE * 12  # ~350 tokens of prose
    expected_first = budget.calibration.request(system, tools, [Message.user(message)])
    assert agent.run_turn(message).text == "Noted."
    assert agent.run_turn(message).text == "Noted again."
    sent = server.requests_to("/v1/chat/completions")
    assert len(sent) == 2 and server.rejections == 0
    assert [t["function"]["name"] for t in sent[0].body["tools"]] == [t.name for t in tools]
    # Before any usage, the first request was expected to cost what the server charged, within 10%
    # (our count alone: +150% or more).
    charged_first = server.prompt_tokens(sent[0].body)
    assert abs(expected_first - charged_first) <= charged_first * 0.10


def test_the_ratio_is_learned_from_the_messages_when_the_server_counts_the_floor():
    """A ratio learned from whole requests whose tools the server dropped (~0.45) would undercount
    every message, and the summarizer's request (which has no tools) by the most."""
    floor_tokens = 300
    served = probe.ServedFloor(tokens=floor_tokens, system_text=40)
    provider = ScriptedProvider(window=8192, floor=lambda system, tools: served)
    budget = make_budget(provider, auto_compact=True)
    floor_local = budget.calibration.floor(SYSTEM, TOOLS)
    budget.calibration.ask_server(SYSTEM, TOOLS)
    assert budget.calibration.floor_calibrated(SYSTEM, TOOLS) == floor_tokens
    messages_local = 400
    # 1.5 from the messages; the whole request (without subtracting the floor) would give 2.25.
    budget.calibration.observe_request(floor_tokens + 3 * messages_local // 2, SYSTEM, TOOLS, messages_local, weight=1.0)
    assert budget.calibration.ratio == pytest.approx(1.5)
    # Learning from the whole request would have mixed our floor into it.
    assert budget.calibration.ratio != pytest.approx((floor_tokens + 3 * messages_local // 2) / (floor_local + messages_local))
    assert provider.floor_questions == 1


def test_before_any_usage_the_ratio_comes_from_the_servers_count_of_the_system_prompt():
    answers = {}
    budget = make_budget(ScriptedProvider(window=8192, floor=lambda system, tools: answers["floor"]), auto_compact=True)
    local = budget.counter.count_text(SYSTEM)
    answers["floor"] = probe.ServedFloor(tokens=500, system_text=round(local * 1.25))
    budget.calibration.ask_server(SYSTEM, TOOLS)
    assert budget.calibration.floor_calibrated(SYSTEM, TOOLS) == 500
    assert budget.calibration.ratio == pytest.approx(answers["floor"].system_text / local)


def test_reading_the_floor_never_asks_the_server_nor_moves_the_ratio():
    """The status bar and /context read the floor while a turn runs: a read that asked the server
    (and set the ratio from its answer) changed what the loop had sized its request with."""
    provider = ScriptedProvider(window=8192, floor=lambda system, tools: probe.ServedFloor(300, 10))
    budget = make_budget(provider, auto_compact=True)
    calibration = budget.calibration
    assert calibration.served_floor(SYSTEM, TOOLS) is None
    assert calibration.floor_calibrated(SYSTEM, TOOLS) == calibration.floor(SYSTEM, TOOLS)
    assert provider.floor_questions == 0 and calibration.ratio == 1.0 and not calibration.ratio_learned
    calibration.ask_server(SYSTEM, TOOLS)  # the owner's call (loop/sizing.py), once per floor
    calibration.ask_server(SYSTEM, TOOLS)
    assert provider.floor_questions == 1 and calibration.served_floor(SYSTEM, TOOLS) == 300
    assert calibration.ratio != 1.0


def test_a_resumed_session_learns_its_ratio_from_the_messages_part_of_a_served_request():
    provider = ScriptedProvider(window=8192, floor=lambda system, tools: probe.ServedFloor(300, 0))
    budget = make_budget(provider, auto_compact=True)
    reply = Message.assistant("ok", usage=Usage(input_tokens=300 + 300, output_tokens=5),
                              meta={"local_prompt_tokens": 1700 + 200, "floor_tokens": 1700,
                                    "served_floor_tokens": 300})
    budget.calibration.calibrate_from([reply])
    assert budget.calibration.ratio == pytest.approx(1.5)  # 300 / 200; the whole request would give 600 / 1,900


def test_context_says_what_the_server_counts_for_the_floor(server, workspace):
    server.as_llama_cpp(2048)
    agent = build_agent(Options(base_url=server.base_url, workspace=workspace, headless=True), approve_all)
    system, tools = agent.system_prompt(), agent.tool_specs()
    shown = rendered(context_view(agent), width=200)
    served, ours = agent.budget.calibration.served_floor(system, tools), agent.budget.calibration.floor(system, tools)
    assert f"The server counts system prompt and tool schemas as {served:,} tokens (our tokenizer: {ours:,})" in shown
    # The rows still add up to the headline, which is the server's count of the request.
    rows = sum(numbers(shown, label) for label in ("system prompt", "core memory", "tool schemas", "messages",
                                                   "summary"))
    assert rows == agent.context_state().tokens == served


def test_context_rows_split_the_floor_as_the_server_counts_it(server, workspace):
    """SmolLM2's template leaves the tool schemas out: /context must not show them as a quarter of
    the window, as our own count would (4,096: a window where the usual floor is sent)."""
    server.as_llama_cpp(4096)
    agent = build_agent(Options(base_url=server.base_url, workspace=workspace, headless=True), approve_all)
    system, tools = agent.system_prompt(), agent.tool_specs()
    shown = rendered(context_view(agent), width=200)
    served = agent.budget.calibration.served_floor(system, tools)
    assert numbers(shown, "tool schemas") < 0.05 * served
    assert numbers(shown, "system prompt") + numbers(shown, "core memory") > 0.9 * served


@pytest.mark.parametrize("supports_tools", [False, True])
def test_the_repl_says_when_the_servers_template_cannot_carry_tools(server, workspace, supports_tools):
    server.as_llama_cpp(2048, supports_tools=supports_tools)
    options = Options(base_url=server.base_url, workspace=workspace)
    build_agent(options, approve_all)
    said = [n for n in options.notices.take() if "cannot call tools" in n]
    if supports_tools:
        assert said == []
    else:
        assert said == [f"{SMOLLM2} cannot call tools on this server: its chat template has no tool support "
                        "(llama.cpp /props chat_template_caps.supports_tools is false), so the server leaves the "
                        "tool schemas out and the model can only answer in text. A model whose template supports "
                        "tools (Qwen2.5, Llama 3.1 or later) can read, edit and run code."]


def test_the_status_bar_names_a_llama_cpp_model_by_its_file_not_its_path():
    assert model_label("/models/cache/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert model_label("Qwen/Qwen2.5-Coder-7B-Instruct") == "Qwen/Qwen2.5-Coder-7B-Instruct"
    long = "org/" + "x" * 80
    assert len(model_label(long)) == 39 and model_label(long).startswith("org/x") and "…" in model_label(long)


def test_the_repl_says_what_start_up_found_before_anything_is_typed(spawn, server):
    """The server's model and its template's missing tool support are said above the prompt as soon
    as the background start-up knows them, not after the first Enter."""
    server.as_llama_cpp(2048)
    child = spawn(env_extra={"OPENAI_BASE_URL": server.base_url})
    shown = screen_after(child, r"cannot call tools on this server[\s\S]*context left")
    assert f"No --model given: using {SMOLLM2}" in shown
    child.send("/exit\r")
