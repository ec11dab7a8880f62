"""Cost: the price table, the user's override, what a session spent, and where it is shown."""

from __future__ import annotations

import json

from agent_support import make_agent, script
from test_agent_budget import run_cli
from pty_support import screen_after
from fakes import Reply
from fakes.anthropic_server import FakeAnthropicServer, anthropic_usage
from rich.console import Console

from mini_letta.notices import Notices
from mini_letta.cost import Price, Spend, builtin_prices, load_prices, spend_line
from mini_letta.messages import Message, Usage
from mini_letta.repl.views import context_view, cost_view
from mini_letta.sessions.store import SessionWriter
from mini_letta.sessions.listing import list_sessions, session_table


def rendered(renderable) -> str:
    console = Console(width=160, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_builtin_table_prices_well_known_models_and_not_others():
    table = builtin_prices()
    assert table.checked
    sonnet = table.price("claude-sonnet-4-5-20250929")
    assert (sonnet.input, sonnet.output, sonnet.cache_read, sonnet.cache_write) == (3.0, 15.0, 0.3, 3.75)
    assert table.price("claude-sonnet-4-5[1m]") == sonnet
    assert table.price("gpt-4o-mini").input == 0.15
    assert table.price("gpt-4o").input == 2.5
    assert table.price("openai/gpt-4.1").output == 8.0
    # A dated snapshot of a different price, a local model and a made-up name have no price.
    assert table.price("gpt-4o-2024-05-13") is None
    assert table.price("llama3.1:8b") is None
    assert table.price("gpt-5-pro") is None
    assert table.price("scripted") is None


def test_cost_uses_each_rate_and_the_long_context_rate_above_its_threshold():
    price = builtin_prices().price("claude-sonnet-4-5")
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=2_000_000,
                  cache_write_tokens=10_000)
    assert abs(price.cost(Usage(input_tokens=100_000, output_tokens=1_000)) - (0.3 + 0.015)) < 1e-9
    # Over 200k prompt tokens the whole request is billed at the 1M-window rate.
    assert abs(price.cost(usage) - (6.0 + 2.25 + 1.2 + 0.075)) < 1e-9


def test_user_prices_file_comes_first_and_a_broken_one_is_reported_and_ignored(tmp_path):
    (tmp_path / "prices.json").write_text(json.dumps({"checked": "2030-01-01", "models": [
        {"pattern": "my-local-*", "input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
        {"pattern": "gpt-4o", "input": 1, "output": 2, "cache_read": 0.5, "cache_write": 1}]}))
    table = load_prices(tmp_path)
    assert table.price("my-local-model") == Price(0, 0, 0, 0)
    assert table.price("gpt-4o").input == 1
    assert table.price("claude-haiku-4-5").input == 1.0  # the built-in entries still apply
    assert table.checked == "2030-01-01"

    channel = Notices()
    (tmp_path / "prices.json").write_text('{"models": [{"pattern": "x"}]}')
    table = load_prices(tmp_path, channel.say)
    assert table.price("gpt-4o").input == 2.5
    notices = channel.take()
    assert len(notices) == 1 and "prices.json" in notices[0]


def test_spend_has_no_dollar_figure_once_an_unpriced_model_was_used():
    spend = Spend(builtin_prices())
    assert spend.usd is None
    spend.add("gpt-4.1", Usage(input_tokens=1_000_000))
    assert spend.usd == 2.0
    before = spend.snapshot()
    spend.add("some-local-model", Usage(input_tokens=10, output_tokens=5))
    assert spend.usd is None
    turn = spend.since(before)
    assert turn.usd is None and turn.usage.prompt_tokens == 10 and turn.calls == 1
    assert "$" not in spend_line(turn)


def test_turn_result_carries_its_cost_and_the_line_shows_cache_share(tmp_path):
    usage = Usage(input_tokens=1_000, output_tokens=200, cache_read_tokens=9_000)
    provider = script([Message.assistant("Done.", usage=usage)])
    provider.model = "claude-haiku-4-5"
    agent = make_agent(provider, tmp_path)
    result = agent.run_turn("hi")
    expected = (1_000 * 1.0 + 200 * 5.0 + 9_000 * 0.1) / 1e6
    assert abs(result.spend.usd - expected) < 1e-12
    assert spend_line(result.spend) == "10k in (90% from cache) · 200 out · $0.0029"
    assert "90% of this session's input tokens were read from the cache" in rendered(context_view(agent))
    assert "Cost: $0.0029" in rendered(cost_view(agent))


def test_cost_view_says_tokens_only_for_an_unpriced_model(tmp_path):
    provider = script([Message.assistant("Done.", usage=Usage(input_tokens=500, output_tokens=20))])
    agent = make_agent(provider, tmp_path)
    agent.run_turn("hi")
    text = rendered(cost_view(agent))
    assert "used a model with no known price" in text and "$" not in text


def test_print_mode_json_has_total_cost_for_a_priced_model_and_none_for_an_unpriced_one(tmp_path):
    usage = anthropic_usage(2_000, 100, cache_creation=0, cache_read=8_000)
    outputs = {}
    for model in ("claude-sonnet-4-5", "my-llama"):
        with FakeAnthropicServer() as server:
            server.enqueue(Reply(text="Hello.", usage=usage))
            completed = run_cli(["-p", "hi", "--provider", "anthropic", "--model", model, "--base-url",
                                 server.base_url, "--output-format", "json"], cwd=tmp_path,
                                env_extra={"MINI_LETTA_HOME": str(tmp_path / "home"), "ANTHROPIC_API_KEY": "k"})
        assert completed.returncode == 0, completed.stderr
        outputs[model] = json.loads(completed.stdout)
    expected = (2_000 * 3.0 + 100 * 15.0 + 8_000 * 0.3) / 1e6
    assert abs(outputs["claude-sonnet-4-5"]["total_cost_usd"] - expected) < 1e-9
    assert outputs["my-llama"]["total_cost_usd"] is None


def test_sessions_listing_shows_the_cost_of_a_priced_session(tmp_path):
    writer = SessionWriter.create(tmp_path, tmp_path, "openai", "gpt-4.1")
    writer.append_message(Message.user("hello"))
    writer.append_message(Message.assistant("hi", usage=Usage(input_tokens=1_000_000, output_tokens=0)))
    other = SessionWriter.create(tmp_path, tmp_path, "ollama", "qwen3:8b")
    other.append_message(Message.user("hello"))
    other.append_message(Message.assistant("hi", usage=Usage(input_tokens=1_000, output_tokens=10)))
    costs = {s.model: s.cost_usd for s in list_sessions(tmp_path)}
    assert costs == {"gpt-4.1": 2.0, "qwen3:8b": None}
    assert "$2.00" in rendered(session_table(list_sessions(tmp_path)))


def test_repl_shows_a_dim_token_line_after_each_reply(spawn):
    repl = spawn()
    screen_after(repl, r"context left")
    repl.send("hello there\r")
    # The demo model has no price: tokens only, no dollar figure.
    shown = screen_after(repl, r"\d+(\.\d+)?k? in · \d+ out")
    line = next(line for line in shown.splitlines() if " in · " in line)
    assert "$" not in line


def test_every_request_of_a_session_carries_the_session_id_as_its_cache_key(tmp_path):
    session = SessionWriter.create(tmp_path / "home", tmp_path, "scripted", "scripted")
    provider = script(["one", "two"])
    agent = make_agent(provider, tmp_path, session=session)
    agent.run_turn("first")
    agent.run_turn("second")
    assert [r.cache_key for r in provider.requests] == [session.id, session.id]
