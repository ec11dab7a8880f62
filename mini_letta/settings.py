"""Every ratio and limit of the context budget and of compaction, in one place.

The modules of ``context/`` and ``compaction/`` read these values from :data:`SETTINGS` and define
no numbers of their own (``tests/test_settings.py`` holds them to that). The threshold group is
seed 000's formula and is exact: ``min(16384, max(1, floor(window * 0.2)))`` tokens stay free.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    tool_output_min_chars: int = 200  # enough for the start of the output and the truncation note
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

    # --- The task list (todos/): small, since it is sent again after every compaction
    todo_max_items: int = 30
    todo_max_chars: int = 300  # of one step's content or activeForm
    # Below this window the tool is not offered: at 4k its schema alone would take a fifth of the floor's share.
    todo_min_window: int = 8_192

    # --- Background commands (toolbox/background.py)
    # What is kept of a command's output not read yet; older output is dropped first, and counted.
    background_buffer_bytes: int = 1_000_000
    background_max_running: int = 8

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


SETTINGS = Settings()
