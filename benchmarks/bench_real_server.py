"""A long session against a real server: llama.cpp's llama-server with SmolLM2-135M-Instruct.

Started as a new user starts mini-letta against a local server: only its address, no API key, no
--model. Each turn is ``mini-letta -p PROMPT --output-format json -c`` with ~300 words of prose, in
a subprocess, through the OpenAI provider (``/v1/chat/completions``) and the Anthropic provider
(llama-server's ``/v1/messages``). A counting proxy between mini-letta and the server sees every
request, so rejections are the server's, not the agent's report.

Printed per provider: turns (and how many succeeded), compactions by trigger, server rejections,
the window used (and what the server serves), and how far mini-letta's estimate of its FIRST
request was from the server's own ``prompt_tokens`` for it (before any calibration).

Needs ``scripts/llama_server.sh prepare`` (builds llama-server once); skips with a message otherwise.

    python -m benchmarks.bench_real_server [--turns 32] [--words 300] [--ctx 4096] [--provider openai]
                                           [--reply-cap N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "real_server"))

import real_server_support as support  # noqa: E402

PrintFn = Callable[[str], object]
TURNS = 32
WORDS = 300
CTX = 4096
PROVIDERS = ("openai", "anthropic")


def first_request_estimate(env: dict[str, str], args: list[str], workspace: Path, prompt: str) -> int:
    """What mini-letta estimates its first request at, assembled as the CLI assembles it."""
    saved = dict(os.environ)
    try:
        for name in list(os.environ):
            if name.startswith(("CODEAGENT_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")):
                del os.environ[name]
        os.environ.update(env)
        from mini_letta.app import Options, build_agent
        from mini_letta.messages import Message
        from mini_letta.toolbox import deny_with

        provider = args[args.index("--provider") + 1] if "--provider" in args else None
        agent = build_agent(Options(provider=provider, headless=True, workspace=workspace), deny_with("benchmark"))
        return agent.sizing.measure([Message.user(prompt)])
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_provider(provider: str, server: support.LlamaServer, turns: int, words: int,
                 print_fn: PrintFn, reply_cap: int | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-real-{provider}-") as tmp, \
            support.CountingProxy(server.url, reply_cap=reply_cap) as proxy:
        env, args = support.user_environment(provider, proxy.url)
        session = support.CliSession.create(Path(tmp), env, args)
        prompts = [support.session_prompt(n, words) for n in range(1, turns + 1)]
        estimate = first_request_estimate({**env, "MINI_LETTA_HOME": str(Path(tmp) / "probe-home")}, args,
                                          session.workspace, prompts[0])
        proxy.exchanges.clear()  # the estimate's own look at the server is not part of the session
        started = time.perf_counter()
        for number, prompt in enumerate(prompts, 1):
            turn = session.say(prompt)
            if not turn.ok:
                print_fn(f"  turn {number} failed: {turn.describe()[:300]}")
        seconds = time.perf_counter() - started
        completions = proxy.completions()
        first_prompt = next((e.prompt_tokens() for e in completions if not e.rejected), None)
        first_ok = bool(completions) and not completions[0].rejected
        replies = [e.completion_tokens() for e in completions if e.has_tools and not e.rejected]
        replies = [r for r in replies if r is not None]
        return {
            "provider": provider,
            "turns": len(session.turns),
            "turns_ok": sum(turn.ok for turn in session.turns),
            "compactions": dict(Counter(r["trigger"] for r in session.compactions())),
            "requests": len(completions),
            "rejections": len(proxy.rejections()),
            "windows": sorted({t.window for t in session.turns if t.window}),
            "served_ctx": server.served_ctx(),
            "first_estimate": estimate,
            "first_server_prompt": first_prompt if first_ok else None,
            "reply_tokens": sum(replies) / len(replies) if replies else 0.0,
            "seconds": seconds,
        }


def estimate_error(figures: dict[str, Any]) -> float | None:
    server = figures["first_server_prompt"]
    if not server:
        return None
    return 100.0 * (figures["first_estimate"] - server) / server


def describe(figures: dict[str, Any]) -> str:
    compactions = ", ".join(f"{n} {t}" for t, n in sorted(figures["compactions"].items())) or "none"
    error = estimate_error(figures)
    first = (f"first request: estimate {figures['first_estimate']:,} vs server {figures['first_server_prompt']:,} "
             f"({error:+.1f}%)" if error is not None else "first request: rejected or no usage")
    return (f"{figures['turns_ok']}/{figures['turns']} turns ok, {figures['requests']} requests, "
            f"{figures['rejections']} server rejections, compactions: {compactions}, "
            f"window {'/'.join(f'{w:,}' for w in figures['windows'])} (served {figures['served_ctx']:,}), "
            f"{first}, replies {figures['reply_tokens']:.0f} tokens on average, {figures['seconds']:.0f} s")


def run(print_fn: PrintFn = print, turns: int = TURNS, words: int = WORDS, ctx: int = CTX,
        providers: tuple[str, ...] = PROVIDERS, reply_cap: int | None = None) -> dict[str, Any] | None:
    prepared = support.locate()
    if prepared is None:
        print_fn(f"bench_real_server: skipped, llama-server is not prepared: {support.PREPARE_HINT}")
        return None
    print_fn(f"llama-server -c {ctx}, SmolLM2-135M-Instruct Q4_1, {turns} turns of ~{words} words, "
             "no key, no --model" + (f", replies capped at {reply_cap} tokens" if reply_cap else ""))
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-real-logs-") as logs, \
            support.LlamaServer(prepared, ctx, log_dir=Path(logs)) as server:
        for provider in providers:
            figures = run_provider(provider, server, turns, words, print_fn, reply_cap)
            print_fn(f"  {provider:9} {describe(figures)}")
            results[provider] = figures
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--words", type=int, default=WORDS)
    parser.add_argument("--ctx", type=int, default=CTX)
    parser.add_argument("--provider", choices=PROVIDERS, action="append")
    parser.add_argument("--reply-cap", type=int, default=None,
                        help="lower each request's max_tokens to this before the server sees it (faster on a busy machine)")
    options = parser.parse_args()
    run(turns=options.turns, words=options.words, ctx=options.ctx,
        providers=tuple(options.provider or PROVIDERS), reply_cap=options.reply_cap)


if __name__ == "__main__":
    main()
