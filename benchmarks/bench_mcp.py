"""MCP tool definitions and the context: tokens of the first request, of a 30-turn session, and the
prompt-cache share, with 0, 1 and 4 servers, deferral on and off.

Run from the repository root:  python -m benchmarks.bench_mcp [--turns 30] [--window 200000]

Real MCP servers (``MCPServer`` scripts over stdio, ordinary tools: a sentence of description and
three typed parameters each) are started for each configuration; the agent loop runs a scripted
session through them: every turn the model calls one MCP tool (with deferral, a tool it has not
used yet is first found with ``tool_search``; eight distinct tools over the session) and answers in
about 300 tokens. Without servers it reads a file instead. Every request is counted locally as the
budget counts it, and replayed against ``bench_cache``'s model of Anthropic's prompt cache (the
breakpoints the Anthropic provider places, 20-block look-back): the share of input tokens read
from the cache. Goal with deferral on: at least 80%, as without MCP.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from agent_support import make_agent, request_tokens, script, sized_text, tool_call  # noqa: E402
from benchmarks.bench_cache import MODEL, replay  # noqa: E402
from mcp_support import agent_with_servers, many_tools_body, python_server, stdio  # noqa: E402

from mini_letta.context import counter_for_model  # noqa: E402
from mini_letta.mcp import close  # noqa: E402

# (label, tools per server): 0, 1 and 4 servers, about 20 / 100 / 200 MCP tools.
CONFIGS = (("0 servers", []), ("1 server, 20 tools", [20]), ("1 server, 100 tools", [100]),
           ("4 servers, 200 tools", [50, 50, 50, 50]))
DISTINCT_TOOLS = 8


def tool_names(sizes: list[int]) -> list[str]:
    """Names of tools the scripted model uses, spread over the servers (as ``many_tools_body`` names them)."""
    actions = ("create", "update", "archive", "find", "export", "approve", "merge", "split", "audit", "price")
    subjects = ("invoice", "customer", "ticket", "shipment", "report", "account", "order", "payment",
                "contract", "product")
    names = []
    for n in range(DISTINCT_TOOLS):
        server = n % len(sizes)
        index = (n * 7) % sizes[server]
        names.append(f"mcp__s{server}__{actions[(index // 10) % 10]}_{subjects[index % 10]}_{index}")
    return names


def session(folder: Path, sizes: list[int], deferral: str, turns: int, window: int):
    os.environ["MINI_LETTA_TOOL_SEARCH"] = deferral
    workspace = folder / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text(sized_text(400))
    used: set[str] = set()
    replies = []
    names = tool_names(sizes) if sizes else []
    for turn in range(turns):
        if names:
            name = names[turn % len(names)]
            if deferral == "on" and name not in used:
                replies.append(tool_call("tool_search", query=name.split("__", 2)[2]))
            used.add(name)
            replies.append(tool_call(name, record_id=turn, region="north"))
        else:
            replies.append(tool_call("read_file", path="notes.md"))
        replies.append(f"Turn {turn}: done. " + sized_text(300, seed=turn))
    provider = script(replies, count=request_tokens)
    provider.model = MODEL
    servers = {f"s{index}": stdio(python_server(folder, f"s{index}", many_tools_body(size)))
               for index, size in enumerate(sizes)}
    if servers:
        agent, tools = agent_with_servers(None, workspace, servers, provider, window=window)
    else:
        agent, tools = make_agent(provider, workspace, window=window), None
    try:
        for turn in range(turns):
            agent.run_turn(f"Turn {turn}: do the next step. " + sized_text(30, seed=turn))
    finally:
        close(agent)
    return provider.requests, tools


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--window", type=int, default=200_000)
    args = parser.parse_args(argv)
    counter = counter_for_model(MODEL)
    print(f"MCP definitions over a scripted {args.turns}-turn session, window {args.window:,} tokens, "
          f"model {MODEL} (tokens counted locally; cache share from bench_cache's replay)\n")
    header = (f"{'configuration':<22} {'deferral':>8} {'tools sent':>10} {'first request':>13} {'of it tools':>11} "
              f"{'session input':>13} {'from cache':>10}")
    print(header)
    print("-" * len(header))
    shares = []
    for label, sizes in CONFIGS:
        for deferral in (("off", "on") if sizes else ("off",)):
            with tempfile.TemporaryDirectory() as folder:
                requests, _ = session(Path(folder), sizes, deferral, args.turns, args.window)
            first = requests[0]
            figures = replay(requests, breakpoints=True)
            total = sum(request_tokens(request) for request in requests)
            if deferral == "on":
                shares.append((label, figures.share))
            print(f"{label:<22} {deferral if sizes else '-':>8} {len(first.tools):>10} "
                  f"{request_tokens(first):>13,} {counter.count_tools(first.tools):>11,} {total:>13,} "
                  f"{figures.share:>10.1%}")
    worst = min(share for _, share in shares)
    print(f"\nGoal: at least 80% of input tokens from the cache with deferral on: "
          f"{'met' if worst >= 0.8 else 'MISSED'} (lowest {worst:.1%}).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
