"""What configured MCP servers cost at start-up: ``-p hi`` (spawn to exit) and the REPL's prompt
(spawn until ``›`` is on the terminal), with no server and with two, side by side in one run.

Run from the repository root:  python -m benchmarks.bench_mcp_start [--repeats 5]

The two servers are real ``MCPServer`` scripts over stdio (``--mcp-config``), each a Python process
importing the SDK (about 1-2 s of CPU each). Cases:
- ``-p hi``, two servers no rule allows: print mode cannot approve their tools, so it does not start them.
- ``-p hi --yolo``, two servers: started together and waited for (their tools may run), closed at exit.
- the REPL's prompt with two servers: they connect in the background, the prompt does not wait.
Goal (issue 37): two configured servers cost ``-p hi`` at most 1.2 x the run without them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_startup import mini_letta_command, time_process, time_to_prompt

SERVER = """
import sys
from mcp.server.mcpserver import MCPServer
server = MCPServer(sys.argv[1])
@server.tool(description="Say hi.")
def hi() -> str:
    return "hi"
server.run()
"""
GOAL = 1.2



def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-start-") as root:
        script = Path(root, "server.py")
        script.write_text(SERVER)
        config = Path(root, "servers.json")
        config.write_text(json.dumps({"mcpServers": {
            name: {"command": sys.executable, "args": [str(script), name]} for name in ("a", "b")}}))
        base = [*mini_letta_command(), "-p", "hi", "--provider", "demo"]
        servers = ["--mcp-config", str(config)]
        repl = [*mini_letta_command(), "--provider", "demo"]
        cases = {
            "-p hi, no server": lambda: time_process(base),
            "-p hi, 2 servers (none allowed: not started)": lambda: time_process(base + servers),
            "-p hi --yolo, no server": lambda: time_process(base + ["--yolo"]),
            "-p hi --yolo, 2 servers (waited for)": lambda: time_process(base + ["--yolo"] + servers),
            "REPL prompt, no server": lambda: time_to_prompt(repl),
            "REPL prompt, 2 servers": lambda: time_to_prompt(repl + servers),
        }
        figures = {}
        for _ in range(args.repeats):  # interleaved, so load on the machine falls on every case alike
            for name, measure in cases.items():
                figures.setdefault(name, []).append(measure() * 1000)
    medians = {name: statistics.median(values) for name, values in figures.items()}
    pairs = [("-p hi, 2 servers (none allowed: not started)", "-p hi, no server"),
             ("-p hi --yolo, 2 servers (waited for)", "-p hi --yolo, no server"),
             ("REPL prompt, 2 servers", "REPL prompt, no server")]
    print(f"median of {args.repeats} runs each, interleaved")
    print(f"{'case':48} {'ms':>8} {'ratio':>7}")
    for name, baseline in pairs:
        print(f"{baseline:48} {medians[baseline]:8.0f}")
        ratio = medians[name] / medians[baseline]
        print(f"{name:48} {medians[name]:8.0f} {ratio:6.2f}x")
    ratio = medians[pairs[0][0]] / medians[pairs[0][1]]
    print(f"goal: -p hi with two configured servers <= {GOAL}x without: "
          f"{'met' if ratio <= GOAL else 'NOT met'} ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
