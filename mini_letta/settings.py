"""Every ratio and limit of the engine, in one place: the context budget and compaction (flat), and
the loop, the tools, skills, MCP, subagents, providers and hooks (nested groups, ``SETTINGS.tools``).

The modules of the package read these values from :data:`SETTINGS` and define no ratios or limits of
their own; ``tests/test_settings.py`` scans every module and lists the numbers that are facts (a wire
format, an exit code, a Unicode range) with the reason they stay where they are used. The threshold
group is seed 000's formula and is exact: ``min(16384, max(1, floor(window * 0.2)))`` tokens stay free.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LoopSettings:
    """The agent loop (``loop/``, and ``app.py`` for the turn's default length)."""

    # Model calls in one user turn before the REPL asks whether to go on (-p stops: "max_turns").
    max_turns: int = 100
    # Tool calls of one reply that are run; the rest are answered "Not run" (loop/turn.py).
    max_tool_calls_per_reply: int = 32
    # The same failing tool call this many times in a row ends the turn (loop/turn.py).
    repeated_failure_limit: int = 3
    # A reply cut by its token limit in the middle of a tool call is asked for again this many times
    # a turn (loop/cut_replies.py), and the retry's reply budget is this many times the limit that cut
    # the call, where the window has room.
    cut_call_retries: int = 2
    cut_call_retry_growth: int = 2


@dataclass
class ToolSettings:
    """What the built-in tools return and how long they may run (``toolbox/``)."""

    # The output cap of a toolbox nobody sizes (the loop passes the budget's limit with every call).
    output_chars: int = 30_000
    # A tool call's one-line description in approvals and the transcript.
    describe_chars: int = 80
    # read_file: lines per call when the model names no limit, characters kept of one line, room kept
    # free for the closing notes when the output cap decides where reading stops.
    read_lines: int = 2_000
    read_line_chars: int = 2_000
    read_note_chars: int = 300
    # edit_file and write_file refuse a file larger than this.
    edit_max_bytes: int = 10 * 1024 * 1024
    # grep and glob: matches, characters of one matching line, context lines around a match, glob
    # results; room for the notes, and at most this much naming the binary files that match.
    search_matches: int = 200
    search_match_chars: int = 300
    search_context_lines: int = 10
    glob_results: int = 200
    search_note_chars: int = 200
    binary_note_chars: int = 160
    # grep searches at most this much of one file; binary files larger than the second are not searched
    # for a match (rg's --max-filesize, and the walk without rg): searched as text, a long run without
    # a newline is held in memory whole. A search of a very large tree still ends after the timeout.
    grep_file_bytes: int = 32 * 1024 * 1024
    grep_binary_max_bytes: int = 128 * 1024 * 1024
    grep_timeout_seconds: int = 60
    # bash: the timeout when the model names none, the longest it may name, and room for the notes
    # (exit code, cut output); the sandbox keeps more room for the note that explains a refusal.
    shell_timeout_seconds: int = 120
    shell_max_timeout_seconds: int = 600
    shell_note_chars: int = 600
    sandbox_note_chars: int = 700
    # Background commands (toolbox/background.py): what is kept of a command's output not read yet
    # (older output is dropped first, and counted), and how many may run at once.
    background_buffer_bytes: int = 1_000_000
    background_max_running: int = 8
    # While a command runs, a read stops at the last line end: an unfinished line of up to this
    # many bytes waits for the next read, so a key printed in two pieces is masked whole.
    background_held_line_bytes: int = 4_096
    # conversation_search: characters shown around a match, and room for the notes.
    recall_context_chars: int = 150
    recall_note_chars: int = 200


@dataclass
class SkillSettings:
    """Every size the skills room works with (``skills/``; a test holds the anchors' numbers)."""

    # The list of names and descriptions in the system prompt: Codex gives it about 2% of the
    # window, and 8,000 characters when the window is not known.
    list_share: float = 0.02
    list_chars_unknown_window: int = 8_000
    # The Agent Skills specification caps a description at 1,024 characters; shortening never goes
    # below this many (after that, skills are left out of the list instead).
    description_chars: int = 1_024
    min_description_chars: int = 24
    # Under this window (and in the compact floor) the list is names only.
    names_only_below_window: int = 8_192
    # After a compaction, Claude Code re-attaches each invoked skill's body capped at 5,000 tokens;
    # the total is ours (Claude Code's docs name a per-skill cap only), and never more than this
    # share of the window.
    reattach_tokens_per_skill: int = 5_000
    reattach_tokens_total: int = 25_000
    reattach_window_share: float = 0.25
    # A folder of a hostile repository could hold a million skill folders.
    max_skills_per_folder: int = 500
    # A SKILL.md larger than this is read up to it (the rest is cut, with a notice).
    skill_file_bytes: int = 256 * 1024


@dataclass
class McpSettings:
    """MCP servers and their tools (``mcp/``)."""

    # "auto" defers a server's tools behind tool_search once their schemas pass this percent of the window.
    deferral_share: float = 10.0
    # Tools tool_search loads when the model names no max_results.
    search_results: int = 5
    # A server's start and one tool call, when its config names no timeout.
    startup_timeout_seconds: float = 30.0
    tool_timeout_seconds: float = 120.0
    # A server that exits is started again this many times a session.
    max_restarts: int = 1


@dataclass
class SubagentSettings:
    """The task tool and the subagents it starts (``subagents/``)."""

    # The list of agent types in the task tool's description: this share of the window, as Codex
    # holds its skills list; even in a 4k window the built-ins fit with their descriptions. Each
    # description is its first sentence, at most listing_description_chars.
    listing_share: float = 0.02
    listing_min_tokens: int = 120
    listing_description_chars: int = 100
    # Read-only subagents run side by side, this many at once; any other one alone.
    max_parallel: int = 3
    # Model calls a subagent makes when its file sets no maxTurns.
    max_steps: int = 40
    # How deep subagents may start subagents: the parent's are depth 1, theirs depth 2.
    max_depth: int = 2
    # A long report keeps this share of its lines from the head, the rest from the tail; a line longer
    # than report_piece_chars is cut into pieces so one huge line can still be shortened; room is kept
    # for the loop's own note, should it still have to cut the report to its token limit.
    report_head_share: float = 2 / 3
    report_piece_chars: int = 400
    report_note_chars: int = 200


@dataclass
class ProviderSettings:
    """How long a provider is waited for, and how often asked again (``providers/``)."""

    connect_timeout_seconds: float = 10.0
    read_timeout_seconds: float = 120.0
    max_retries: int = 2
    # Retries wait twice as long each time from the first delay up to the longest, less up to this
    # share at random; a server's Retry-After is followed up to retry_after_max_seconds.
    retry_first_delay_seconds: float = 0.5
    retry_max_delay_seconds: float = 8.0
    retry_jitter: float = 0.25
    retry_after_max_seconds: float = 60.0
    # Questions about the window (providers/probe.py): one question, all of them to one server, and
    # loading a model from disk (only asked of the ollama provider).
    probe_timeout_seconds: float = 2.0
    probe_budget_seconds: float = 6.0
    ollama_load_timeout_seconds: float = 15.0


@dataclass
class HookSettings:
    """The user's hook commands (``hooks/``): how long one may run, how much of what it prints is read,
    and how much of that reaches the model."""

    # A hook's timeout when its entry names none, and the longest one may name.
    timeout_seconds: float = 60.0
    max_timeout_seconds: float = 86_400.0
    # Read of a hook's stdout and of its stderr each (the rest is read and dropped): a runaway hook
    # cannot flood the summarizer, the model or the user.
    output_chars: int = 8_000
    # Of a reason or context the hooks of one event give the model.
    model_chars: int = 4_000
    # Stop hooks that send the model on ("decision": "block", exit 2) in one turn; then it stops anyway.
    stop_continuations: int = 5



@dataclass
class AcpSettings:
    """``mini-letta acp``, the editors' face (``acp/``)."""

    # The longest message line read from the editor (the SDK's default): a prompt may embed a large file.
    line_limit_bytes: int = 50 * 1024 * 1024
    # What a finished tool call shows of its output in the editor's panel (the model reads it all).
    shown_output_chars: int = 4_000
    # How long the editor's terminal may take to hand over its output and release, once a command ended.
    terminal_wrap_up_seconds: float = 10.0


@dataclass
class Settings:
    """Read as ``SETTINGS.name``; a test that needs another value sets it with ``monkeypatch.setattr``."""

    # --- When to compact and how much room the reply keeps (seed 000, exact)
    compaction_reserve_tokens: int = 16_384
    small_window_reserve_ratio: float = 0.2
    # Room for the reply: 8,192 is the default max_tokens of a request and enough for a long answer
    # with a tool call; a small local window keeps an eighth of itself (512 of a 4k Ollama window),
    # never less than 256 so a short answer fits. It never exceeds the compaction reserve, so a
    # request at the threshold plus a full reply always fits the window.
    output_reserve_max: int = 8_192
    output_reserve_min: int = 256
    output_reserve_fraction: int = 8

    # --- Levels, tool-output caps and calibration (context/budget.py)
    warning_percent: int = 20
    critical_percent: int = 10
    blocked_percent_manual: int = 5
    # Tool output caps in characters, by level (seed 002: no large tool outputs once space is tight).
    tool_output_chars: dict[str, int] = field(default_factory=lambda: {"ok": 40_000, "warning": 40_000, "critical": 8_000, "blocked": 2_000})
    # The one floor of a tool output, in characters (and, over CHARS_PER_TOKEN, in tokens): below it a
    # result could not hold the start of the output and the note that says how to get the rest. The
    # budget applies it; the toolbox and the loop take the budget's limit as it is.
    tool_output_min_chars: int = 500
    # Where a compaction aims, as a share of the threshold: well under it, or the next few turns refill
    # it and compaction runs again at once (the saw-tooth of seed 000, chapter 12). Tool outputs are
    # sized against the same point.
    comfort_ratio: float = 0.65
    calibration_min: float = 0.5
    calibration_max: float = 2.0
    calibration_smoothing: float = 0.3  # weight of the newest observation
    ollama_min_context: int = 8_192
    # Below this many local tokens of messages, (usage − served floor) / messages says more about
    # per-message framing than about the tokenizer; such a reply does not move the ratio.
    min_ratio_sample_tokens: int = 64

    # --- Before every request (loop/preflight.py)
    # A request that leaves less room than this for the reply is not sent: the answer would be cut off.
    min_reply_tokens: int = 64
    # Over the threshold, a request is still sent while its reply can have this many tokens (or the
    # usual reply room, in a window smaller than that).
    useful_reply_tokens: int = 256
    # A breaker, should a server keep rejecting what the estimate says fits: a turn's rejections
    # after this many compact whatever ``learn_from_rejection`` says.
    resizes_per_turn: int = 1

    # --- The compact floor of small windows (context/floor.py)
    compact_floor_share: float = 0.25
    recall_min_window: int = 6_000

    # --- The floor shown by usage reports (context/usage_floor.py)
    # Two replies whose messages differ by less than this say more about per-message framing than about
    # the slope, so they infer nothing.
    usage_floor_min_slope_sample_tokens: int = 256
    # Replies kept for the slope, and floors kept (each memory edit makes a new one).
    usage_floor_samples: int = 8
    usage_floor_floors: int = 4

    # --- The window when nothing names it (context/window.py)
    default_window: int = 200_000

    # --- Compaction targets and guards (compaction/plan.py, compaction/guards.py)
    summary_output_cap: int = 4_096
    summary_output_ratio: float = 0.2
    clear_min_tokens: int = 200
    # L1 clears only when the batch frees this share of the threshold: each clearing moves the point
    # where the provider's cached prefix ends, so it should happen rarely and free much each time.
    clear_batch_ratio: float = 0.1
    # One tool result above this share of the threshold would leave no room for anything else.
    dwarf_ratio: float = 0.5
    drop_ratio: float = 0.9
    # A compaction that frees less than this share of the request is thrash: not applied, and the
    # turn stops (the request cannot be made to fit by compacting again).
    thrash_min_freed: float = 0.05
    # The cache-sharing summarizer request is the largest one sent; this share of the window (at least
    # shared_margin_min tokens) stays free beside it for what the corrected count still misses: another
    # tokenizer, template tokens, and instructions that tokenize unlike the conversation the ratio was
    # learned on (SmolLM2 counts them 5% higher: 21 tokens over our count at 2,048, past a 1% margin).
    shared_margin_ratio: float = 0.01
    shared_margin_min: int = 48
    # A reply shrunk to what the window leaves keeps this much free beside the request for what the
    # usage-anchored estimate misses (a tool call's prompt form against its reported output tokens).
    reply_margin_ratio: float = 0.01
    reply_margin_min: int = 48
    breaker_limit: int = 3
    max_overflow_retries: int = 3
    # A tool result is told apart by its start: the same output cut to another size (the cap follows
    # the room left, and the smallest cap is a few lines with a note on how to page on) is not new.
    progress_result_head_chars: int = 80

    # --- Compaction ahead of time (compaction/ahead.py)
    # Prepare once the request passes this share of the compaction threshold.
    ahead_early_ratio: float = 0.8

    # --- What a compaction keeps, as shares of its room (compaction/keep.py)
    # Shares of the compaction threshold. The user's messages get the most (Codex keeps up to 20k
    # tokens of them); the total stays small next to the tail, which is ~30% of the threshold.
    keep_user_ratio: float = 0.08
    keep_user_cap_tokens: int = 20_000
    keep_facts_ratio: float = 0.03
    keep_audit_ratio: float = 0.03
    keep_min_budget_tokens: int = 40
    # The same parts as shares of the room under the target, for windows where the floor leaves little.
    keep_summary_room_share: float = 0.3
    keep_user_room_share: float = 0.15
    keep_facts_room_share: float = 0.05
    keep_audit_room_share: float = 0.05
    # A summary shorter than this says too little to be worth a model call.
    min_summary_tokens: int = 128
    keep_tail_ratio: float = 0.3
    keep_tail_cap_tokens: int = 20_000
    # Below this much room under the target (a small window) the tail is only the newest step, and
    # old tool results are cleared whenever compaction runs: every compaction rewrites the prefix anyway.
    keep_small_room_tokens: int = 4_096
    # Never more than this share of the compacted request without them: a good summary leaves little to
    # add, and a poor one must not make the request after compaction much bigger.
    keep_max_added_share: float = 0.15

    # --- The summarizer's request (compaction/summarizer.py)
    # The summarizer request carries the system prompt, the instructions and the reply; this margin
    # covers message framing the count of one text does not see.
    summarizer_framing_tokens: int = 64
    # Words a model may aim for per token of its reply limit: prose runs about 0.75 words a token, and
    # Markdown headings and paths cost more.
    summarizer_words_per_token: float = 0.6
    # A summary cut at its limit is asked for once more only when the window leaves at least this much
    # more room for the reply (less would be cut again).
    summarizer_retry_growth: float = 1.25
    summarizer_max_chunks: int = 6
    # The length line never asks for fewer words than this; the split turn's request is quoted up to
    # summarizer_request_chars.
    summarizer_min_words: int = 10
    summarizer_request_chars: int = 4_000

    # --- The quoted transcript (compaction/transcript.py)
    transcript_tool_result_chars: int = 2_000
    transcript_tool_argument_chars: int = 400

    # --- The carry-over (compaction/carryover.py)
    # Typed messages are stored up to this size; the full text stays in the session file.
    carryover_stored_user_chars: int = 4_000
    carryover_short_user_chars: int = 160
    carryover_rule_chars: int = 200
    carryover_task_chars: int = 100
    # A summary that quotes this much of a message's opening has kept the message (the rest is searchable).
    carryover_quoted_chars: int = 100
    carryover_line_chars: int = 200
    carryover_max_commands: int = 30
    carryover_max_files: int = 60
    # The summary message lists at most this many files read, the newest (its metadata keeps them all):
    # the list grows with every file a session reads and is sent with every request after a compaction.
    summary_files_listed: int = 20
    carryover_max_errors: int = 5
    carryover_max_todos: int = 8

    # --- The must-keep audit (compaction/audit.py)
    audit_snippet_chars: int = 60
    audit_max_item_chars: int = 80

    # --- Which model summaries are refused (compaction/acceptance.py)
    # Below this size the measures say little (zlib's own overhead dominates), and a short summary
    # costs little anyway.
    acceptance_min_chars: int = 400
    # Compressed size / raw size: English prose and code compress to about 0.35–0.5; a text that
    # repeats itself far below (the SmolLM2 summary in tests/ to 0.15). With the source known, the
    # summary's ratio is taken relative to the source's: a summary quoting a repetitive conversation
    # compresses as well as the conversation does, one that loops on its own phrases far better.
    acceptance_min_compression_ratio: float = 0.2
    acceptance_min_relative_compression: float = 0.5
    # Lines of at least acceptance_line_words words that are a copy of an earlier line, as a share of such lines.
    acceptance_line_words: int = 4
    acceptance_max_repeated_lines: float = 0.3
    # Word n-grams that occur more than once, as a share of all n-grams.
    acceptance_ngram: int = 6
    acceptance_max_repeated_ngrams: float = 0.35
    # While a summary streams: a passage of at least loop_min_chars said loop_repeats times in a row
    # at its end (whitespace aside) is a model stuck in a loop; the summary stops there instead of
    # running to its limit (SmolLM2-135M at 4k: 743 tokens, about 70 s, for one repeated sentence).
    loop_repeats: int = 4
    loop_min_chars: int = 24
    loop_min_words: int = 5
    loop_check_every_chars: int = 256
    # The end searched for a loop: this many times loop_check_every_chars.
    loop_tail_checks: int = 16

    # --- The task list (todos/): small, since it is sent again after every compaction
    todo_max_items: int = 30
    todo_max_chars: int = 300  # of one step's content or activeForm
    # Below this window the tool is not offered: at 4k its schema alone would take a fifth of the floor's share.
    todo_min_window: int = 8_192

    # --- What a server may send (providers/http_stream.py, the one client every request goes through)
    # A body read whole (an error, a JSON reply, a probe's answer), counted after decompression: a
    # model list of a hosted proxy is a few MB; a 1 MB gzip body of zeros inflates to 1 GB.
    http_body_max_bytes: int = 16 * 1024 * 1024
    # One server-sent event (a whole tool call's arguments may come in one), and a whole stream.
    http_event_max_bytes: int = 8 * 1024 * 1024
    http_stream_max_bytes: int = 256 * 1024 * 1024
    # A whole reply, from the request to its last event (MINI_LETTA_REPLY_DEADLINE sets it): keep-alive
    # comments reset no clock, and the read timeout (MINI_LETTA_TIMEOUT) is the longest pause between events.
    reply_deadline_seconds: float = 1800.0
    # Redirects followed within the server's own origin (another origin is never followed).
    http_max_redirects: int = 5

    # --- What L3 and L4 do without a model or a limit (compaction/layers.py, compaction/summary_stage.py)
    # L4 with no limit known drops this many of the oldest turns.
    drop_turns_without_limit: int = 3
    # The extractive summary's tries, largest first, until one fits: characters kept of each user
    # message, and user messages kept (the first few and the newest, the middle left out).
    extractive_sizes: tuple[tuple[int, int], ...] = ((600, 40), (200, 15), (80, 5))
    extractive_first_users: int = 5
    # Its other parts: the previous summary, the current request's newest steps, the latest errors
    # (each cut to extractive_error_chars), and the last assistant reply.
    extractive_previous_summary_chars: int = 8_000
    extractive_steps: int = 30
    extractive_errors: int = 5
    extractive_error_chars: int = 400
    extractive_last_reply_chars: int = 1_500
    # L2 keeps at least this much of a collapsed message.
    collapse_min_chars: int = 200
    # A call, a message or a result's first line quoted in one line of a summary or transcript; a
    # path or command argument, or the first line of a result, gets the longer quote.
    quote_chars: int = 80
    quote_long_chars: int = 120

    # --- Core memory (memory.py): characters a block may hold (the project block more).
    memory_block_chars: int = 2_000
    memory_project_block_chars: int = 4_000

    # --- Cutting a text to a token count (compaction/summarizer.py, toolbox/outcome.py)
    # The text is cut to this share of the length its count suggests, so the next count usually fits.
    cut_undershoot: float = 0.9

    # --- The workspace's instructions (instructions.py): AGENTS.md / CLAUDE.md kept up to this size.
    instructions_cap_chars: int = 20_000

    # --- Checkpoints (checkpoints/retention.py): kept this many days unless MINI_LETTA_CHECKPOINT_DAYS says.
    checkpoint_retention_days: int = 30

    # --- The nested groups
    loop: LoopSettings = field(default_factory=LoopSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    skills: SkillSettings = field(default_factory=SkillSettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    subagents: SubagentSettings = field(default_factory=SubagentSettings)
    providers: ProviderSettings = field(default_factory=ProviderSettings)
    hooks: HookSettings = field(default_factory=HookSettings)
    acp: AcpSettings = field(default_factory=AcpSettings)


SETTINGS = Settings()
