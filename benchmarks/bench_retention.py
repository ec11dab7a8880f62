"""Retention across compactions: is every planted fact still in the request, or found by search?

Run from the repository root:  python -m benchmarks.bench_retention [--turns 64] [--window 8192]
                                [--variants good,useless,error,useless-bare,llama] [--no-simulation]

A scripted session through the real agent loop (a lean agent: short system prompt, read_file,
edit_file, bash, grep and conversation_search; a session file on disk) plants facts of several
kinds across its turns: user constraints, a decision and its reason, a file path, a function name
seen only in a tool output, numbers, an open TODO the model wrote, an error to fix and an edit.
The window is small, so the session compacts several times. At the first request after each
compaction, every fact planted so far is checked: present in that request (summary, carry-over or
verbatim tail)? If not, does conversation_search on the session file find it at its turn? If
neither, it is lost.

Summarizers: ``good`` (a scripted summary that keeps the user's requests, paths, errors and the
work in progress), ``useless`` (answers "OK."), ``error`` (fails, so the extractive layer runs),
``llama`` (SmolLM2-135M through llama.cpp's server, when the cache of
``scripts/llama_server.sh prepare`` holds both; skipped with a message otherwise), and for
comparison ``useless-bare``: the useless summarizer without carry-over and audit.

Also printed: what the carry-over and audit add to the request after each compaction with the good
summarizer (goal: at most 15%), and the 300-turn simulation's thrash-guard figures
(``benchmarks/simulate.py``) at 4k and 32k.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "real_server"))

import real_server_support as real_server  # noqa: E402  (llama-server, started and always stopped)

from agent_support import make_agent, tool_call  # noqa: E402  (the tests' own wiring)

from mini_letta.errors import MiniLettaError, ProviderError  # noqa: E402
from mini_letta.messages import Message  # noqa: E402
from mini_letta.providers.base import Request, complete  # noqa: E402
from mini_letta.providers.scripted import ScriptedProvider  # noqa: E402
from mini_letta.sessions.store import SessionWriter, read_history  # noqa: E402
from mini_letta.toolbox.recall import search_history  # noqa: E402

LEAN_SYSTEM = "You are a careful coding agent working in the user's project folder."
TOOLS = ("read_file", "edit_file", "bash", "grep", "conversation_search")
KEEP_SECTIONS = ("## Also keep", "## Carried over from the session record")

WORDS = ("the parser config value empty handle request response cache file path error return list update "
         "check module import function class method field index token window budget retry timeout "
         "session memory tool output test case branch commit review").split()


@dataclass
class Fact:
    kind: str
    turn: int
    keys: tuple[str, ...]  # all must be present
    constraint: bool = False


# What each planting turn says or does. Turns not listed are filler.
FACTS = [
    Fact("constraint", 2, ("tests/legacy",), constraint=True),
    Fact("file path", 5, ("src/billing/invoice_totals.py",)),
    Fact("constraint", 9, ("ruff check",), constraint=True),
    Fact("function name (tool output)", 12, ("reconcile_ledger_entries",)),
    Fact("number", 17, ("4173",)),
    Fact("decision and reason", 24, ("SQLite", "no Postgres"), constraint=True),
    Fact("open TODO", 30, ("LRU policy",)),
    Fact("error to fix", 36, ("compute_vat_share", "ZeroDivisionError")),
    Fact("file edited", 42, ("src/billing/vat.py",)),
    Fact("constraint", 47, ("new dependencies",), constraint=True),
    Fact("number (tool output)", 53, ("8821",)),
    Fact("file path", 58, ("docs/releases/2026-12.md",)),
]


def _prose(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 13) % len(WORDS)] for i in range(words))


def make_workspace(root: Path) -> None:
    (root / "src" / "billing").mkdir(parents=True)
    (root / "tests" / "legacy").mkdir(parents=True)
    (root / "docs").mkdir()
    for n in range(12):
        lines = [f'"""Module {n}: {_prose(n, 12)}."""', ""]
        for k in range(5):
            lines += [f"def step_{n}_{k}(value, cache):", f"    # {_prose(n + k, 10)}",
                      f"    return cache.get(value, {k})", ""]
        (root / "src" / f"module_{n}.py").write_text("\n".join(lines), encoding="utf-8")
    (root / "src" / "billing" / "invoice_totals.py").write_text(
        "def invoice_total(lines):\n    return sum(line.amount for line in lines)\n", encoding="utf-8")
    (root / "src" / "billing" / "ledger.py").write_text(
        "def reconcile_ledger_entries(ledger, bank):\n    return [e for e in ledger if e not in bank]\n",
        encoding="utf-8")
    (root / "src" / "billing" / "vat.py").write_text(
        "def compute_vat_share(total, rate):\n    return total / rate\n", encoding="utf-8")
    (root / "src" / "settings.py").write_text("MAX_BATCH = 8821\nTIMEOUT = 30\n", encoding="utf-8")
    (root / "check_vat.py").write_text(
        "import sys\nsys.path.insert(0, 'src')\nfrom billing.vat import compute_vat_share\n"
        "compute_vat_share(100, 0)\n", encoding="utf-8")


def turn_plan(turn: int) -> tuple[str, list[Message | str]]:
    """The user's message for ``turn`` and the scripted model's replies (tool calls, then text)."""
    filler = f"Turn {turn}: look at module {turn % 12} and tell me what {_prose(turn, 30)} means."
    read = tool_call("read_file", path=f"src/module_{turn % 12}.py")
    answer = f"Module {turn % 12}: {_prose(turn + 1, 90)}."
    plans: dict[int, tuple[str, list[Message | str]]] = {
        2: ("Before anything else: never touch tests/legacy, it is frozen for the audit. " + filler, [read, answer]),
        5: (filler, [tool_call("read_file", path="src/billing/invoice_totals.py"),
                     "The totals live in src/billing/invoice_totals.py; " + answer]),
        9: ("Always run ruff check before you say a change is done. " + filler, [read, answer]),
        12: ("Where is the ledger reconciled?", [tool_call("grep", pattern="def reconcile", path="src"),
                                                  "It is in the billing package. " + answer]),
        17: ("The API rate limit is 4173 requests per minute; remember it. " + filler, [read, answer]),
        24: ("We decided to use SQLite because the deploy box has no Postgres. " + filler, [read, answer]),
        30: (filler, [read, "Plan:\n- [ ] switch the cache to an LRU policy\n" + answer]),
        36: ("Run check_vat.py and tell me what breaks.",
             [tool_call("bash", command=f"{sys.executable} check_vat.py"), "It crashes; see the error."]),
        42: ("Make the VAT share safe for a zero rate.",
             [tool_call("edit_file", path="src/billing/vat.py", old_string="    return total / rate",
                        new_string="    return total / rate if rate else 0"), "Guarded the division."]),
        47: ("Do not add new dependencies; the standard library only. " + filler, [read, answer]),
        53: (filler, [tool_call("read_file", path="src/settings.py"), answer]),
        58: ("The release notes go in docs/releases/2026-12.md when we are done. " + filler, [read, answer]),
    }
    return plans.get(turn, (filler, [read, answer]))


# --- summarizers ---------------------------------------------------------------------------------
def good_summary(request: Request) -> str:
    """What a capable model writes: the requests, paths, errors, TODOs and decisions, merged with the
    previous summary and condensed (oldest requests first) to the output budget."""
    prompt = request.messages[0].text
    previous = re.search(r"<previous-summary>\n(.*?)\n</previous-summary>", prompt, re.S)
    history = re.search(r"<conversation>\n(.*?)\n</conversation>", prompt, re.S)
    text = history.group(1) if history else ""
    old = previous.group(1) if previous else ""

    def section(name: str) -> list[str]:
        found = re.search(rf"## {name}\n(.*?)(?=\n## |\Z)", old, re.S)
        return [line for line in found.group(1).splitlines() if line.startswith("- ")] if found else []

    asks = section("Requests") + [f"- {line[7:167]}" for line in text.splitlines() if line.startswith("[user] ")]
    paths = dict.fromkeys(section("Files") + [f"- {p}" for p in re.findall(r'"path": ?"([^"]+)"', text)])
    errors = section("Errors") + [f"- {line.strip()[:160]}" for line in text.splitlines() if "Error:" in line]
    todos = section("Pending") + [f"- {todo}" for todo in re.findall(r"- \[ \] (.+)", text)]
    while True:
        body = "\n".join(["## Requests", *asks, "## Files", *paths, "## Errors", *errors[-3:],
                          "## Pending", *todos])
        if len(body) <= request.max_tokens * 3 or len(asks) <= 1:
            return body
        asks.pop(0)


def failing_summary(request: Request) -> str:
    raise ProviderError("the summarizer is down (scripted failure)", provider="scripted")


# --- the run -------------------------------------------------------------------------------------
@dataclass
class Check:
    compaction: int
    kept: int = 0
    searched: int = 0
    lost: list[str] = field(default_factory=list)
    constraints_missing: list[str] = field(default_factory=list)
    overhead: float | None = None  # what carry-over and audit add, when this compaction summarised


@dataclass
class Run:
    variant: str
    checks: list[Check] = field(default_factory=list)
    layers: list[list[str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def request_text(request: Request) -> str:
    parts = [request.system]
    for message in request.messages:
        parts.append(message.text)
        parts += [call.arguments for call in message.tool_calls]
    return "\n".join(parts).lower()


def run_session(variant: str, summarize, turns: int, window: int) -> Run:
    run = Run(variant)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "project"
        workspace.mkdir()
        make_workspace(workspace)
        session = SessionWriter.create(Path(folder) / "home", workspace, "scripted", "scripted")
        plan: list[Message | str] = []
        state = {"turn": 0, "seen": 0}
        agent = None

        def answer(request: Request) -> Message | str:
            if request.purpose == "summary":
                return summarize(request)
            if agent is not None and len(agent.compactions) > state["seen"]:
                state["seen"] = len(agent.compactions)
                run.checks.append(check(agent, request, state["turn"], session.path))
                item = run.checks[-1]
                print(f"  {variant}: compaction {item.compaction} at turn {state['turn']} "
                      f"({'+'.join(agent.compactions[-1].layers)}): {item.kept} in the request, "
                      f"{item.searched} found by search, {len(item.lost)} lost", file=sys.stderr, flush=True)
            return plan.pop(0)

        provider = ScriptedProvider(default=answer)
        agent = make_agent(provider, workspace, window=window, lean_system=LEAN_SYSTEM, tool_names=TOOLS,
                           session=session)
        started = time.perf_counter()
        for turn in range(1, turns + 1):
            state["turn"] = turn
            text, plan[:] = turn_plan(turn)
            try:
                agent.run_turn(text)
            except MiniLettaError as error:
                run.errors.append(f"turn {turn}: {error}")
            provider.requests.clear()
        run.seconds = time.perf_counter() - started
        run.layers = [record.layers for record in agent.compactions]
        session.close()
    return run


def check(agent, request: Request, turn: int, session_path: Path) -> Check:
    """Each fact planted before ``turn``: in this request, found by search at its turn, or lost."""
    result = Check(len(agent.compactions))
    text = request_text(request)
    history = read_history(session_path)
    limit = agent.sizing.tool_output_limit(agent.conversation)
    for fact in FACTS:
        if fact.turn >= turn:
            continue
        if all(key.lower() in text for key in fact.keys):
            result.kept += 1
            continue
        if fact.constraint:
            result.constraints_missing.append(f"{fact.kind} (turn {fact.turn})")
        found = search_history(history, " ".join(fact.keys), max_chars=limit)
        if f"[turn {fact.turn}," in found:
            result.searched += 1
        else:
            result.lost.append(f"{fact.kind} (turn {fact.turn})")
    summary = agent.conversation.messages[0]
    record = agent.compactions[-1]
    if summary.kind == "summary" and {"summarize", "extractive"} & set(record.layers):
        starts = [summary.text.find(h) for h in KEEP_SECTIONS if h in summary.text]
        added = agent.budget.counter.count_text(summary.text[min(starts):]) if starts else 0
        result.overhead = added / max(1, record.tokens_after - added)
    else:
        result.overhead = None
    return result


def run_without_carry_over(turns: int, window: int) -> Run:
    """The useless summarizer with neither carry-over nor audit: what compaction kept before them."""
    from mini_letta.compaction import summary_stage as controller

    real = controller.render, controller.must_keep
    controller.render = lambda *args, **kwargs: ""
    controller.must_keep = lambda carried: []
    try:
        return run_session("useless, no carry-over", lambda request: "OK.", turns, window)
    finally:
        controller.render, controller.must_keep = real


# --- a real small model --------------------------------------------------------------------------
def llama_summarizer(url: str):
    """The summarizer calls of a session, sent to llama-server's OpenAI-compatible API at ``url``."""
    from mini_letta.providers.openai_provider import OpenAIProvider

    provider = OpenAIProvider("smollm2", base_url=url + "/v1", api_key="local", timeout=600, max_retries=0)

    def summarize(request: Request) -> str:
        return complete(provider, request).text

    return summarize


# --- report --------------------------------------------------------------------------------------
def table(runs: list[Run]) -> str:
    """One row per summarizer; after each compaction: facts kept in context / found by search / lost
    (of those planted so far), then the share reached and whether every rule stayed in the request."""
    width = max((len(run.checks) for run in runs), default=0)
    head = ["summarizer", *(f"after {n}" for n in range(1, width + 1)), "reached", "rules in request"]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (width + 1) + " --- |"]
    for run in runs:
        cells = [f"{c.kept} / {c.searched} / {len(c.lost)}" for c in run.checks] + [""] * (width - len(run.checks))
        planted = sum(c.kept + c.searched + len(c.lost) for c in run.checks)
        reached = sum(c.kept + c.searched for c in run.checks)
        missing = sorted({m for c in run.checks for m in c.constraints_missing})
        rules = "all, every time" if not missing else "missing: " + ", ".join(missing)
        lines.append(f"| {run.variant} | " + " | ".join(cells) +
                     f" | {reached / planted:.0%} | {rules} |" if planted else f"| {run.variant} | no compaction |")
    return "\n".join(lines)


def summary_lines(run: Run) -> list[str]:
    planted = sum(c.kept + c.searched + len(c.lost) for c in run.checks)
    reached = sum(c.kept + c.searched for c in run.checks)
    share = f"{reached / planted:.0%}" if planted else "-"
    layers = ", ".join("+".join(layer) for layer in run.layers)
    out = [f"{run.variant}: {len(run.checks)} compactions ({layers}); in request or found: {share} of "
           f"{planted} fact checks; turns ended by an error: {len(run.errors)}; {run.seconds:.1f} s"]
    out += [f"    {error}" for error in run.errors[:3]]
    return out


def main() -> None:
    # A stopped benchmark (timeout, Ctrl-C) still stops the llama-server it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=64)
    parser.add_argument("--window", type=int, default=8_192)
    parser.add_argument("--variants", default="good,useless,error,useless-bare,llama")
    parser.add_argument("--no-simulation", action="store_true")
    args = parser.parse_args()

    runs: list[Run] = []
    for variant in args.variants.split(","):
        if variant == "llama":
            prepared = real_server.locate()
            if prepared is None:
                print("llama: skipped, no llama-server or model prepared "
                      "(scripts/llama_server.sh prepare builds them)", flush=True)
                continue
            with real_server.LlamaServer(prepared, ctx=args.window) as server:
                runs.append(run_session("llama (SmolLM2-135M)", llama_summarizer(server.url), args.turns, args.window))
        elif variant == "useless-bare":
            runs.append(run_without_carry_over(args.turns, args.window))
        else:
            summarize = {"good": good_summary, "useless": lambda request: "OK.", "error": failing_summary}[variant]
            runs.append(run_session(variant, summarize, args.turns, args.window))
        for line in summary_lines(runs[-1]):
            print(line, flush=True)

    print(f"\nRetention over {args.turns} turns, window {args.window:,}, {len(FACTS)} facts planted; after each "
          f"compaction: kept in context / found by conversation_search / lost:\n")
    print(table(runs))
    good = next((run for run in runs if run.variant == "good"), None)
    if good is not None and good.checks:
        shares = [c.overhead for c in good.checks if c.overhead is not None]
        if shares:
            print(f"\nWhat carry-over + audit add to the request after a summarising compaction (good "
                  f"summarizer): {', '.join(f'{s:.1%}' for s in shares)}; max {max(shares):.1%} (goal: at most 15%)")
    if not args.no_simulation:
        from benchmarks.simulate import simulate

        for window in (4_096, 32_000):
            result = simulate(window, turns=300)
            shares = result.after_shares()
            print(f"300-turn simulation at {window:,}: {len(result.compactions)} compactions, "
                  f"over the window {result.over_window}, turns ended by an error {len(result.errors)}, "
                  f"after/threshold max {max(shares) if shares else 0:.0%} (thrash guard holds: "
                  f"{result.over_window == 0 and not result.errors and all(s <= 1 for s in shares)})", flush=True)


if __name__ == "__main__":
    main()
