"""The embedded offline demo model: deterministic, no network, no key.

It lets a new user see the whole product before configuring a real model: replies stream, tools
run (in the sandbox, or with approval), the context indicator moves, compaction happens. It understands a few
documented command forms (see ``HELP``) and otherwise says what it received and what the request
cost. When asked to summarise (``Request.purpose == "summary"``) it writes an extractive summary
of the transcript it was given, so compaction works offline too.
"""

from __future__ import annotations

import json
import re
import time
from typing import Iterator

from mini_letta import endings
from mini_letta.compaction.transcript import serialise
from mini_letta.messages import Message, ToolCall, ToolSpec, Usage, new_id
from mini_letta.providers.base import Done, Request, StreamEvent, TextDelta, ToolCallStarted
from mini_letta.toolbox.outcome import summarize_output
from mini_letta.wording import counted

HELP = """\
I am the offline demo model. I can't think, but I can drive the tools so you can see how
mini-letta works. Try:

- `read <path>` — read a file (e.g. `read README.md`)
- `ls [pattern]` — list files matching a glob (default `*`)
- `grep <pattern> [path]` — search files
- `run <command>` — run a shell command (inside the sandbox without asking; asks where no
  sandbox runs: `/sandbox` says which)
- `write <path>: <text>` — write a file (asks for approval)
- `edit <path>: <old text> => <new text>` — change a file (asks for approval)
- `remember <fact>` — add a fact to core memory
- `skill <name> [args]` — load a skill's instructions (`/skills` lists them)
- `call <tool> {json}` — call any tool by name, e.g. an MCP server's (`/mcp` lists the servers)
- `delegate <request>` — hand one of these to a subagent (e.g. `delegate grep def app.py`): it works in
  a context of its own and only its report comes back
- `fill <n>` — ask me for a reply of about n tokens (watch the context indicator move)
- `fill <n> slowly` — the same, streamed at about a model's pace (watch the footer during a turn)

Anything else I echo back with what the request cost. To use a real model, set
`ANTHROPIC_API_KEY` or `OPENAI_API_KEY`, or run `mini-letta --provider ollama --model <name>`."""

DEMO_WINDOW = 16_384  # small on purpose: a few file reads show compaction at work
# How a refusal reads (toolbox/approval.py denial_text, Toolbox.run): not a failure of the tool.
REFUSALS = ("The user declined", "Not run:")
SLOW_WORD_SECONDS = 0.02  # "fill N slowly": about 50 words a second, a fast model's pace


def code_span(text: str) -> str:
    """``text`` as a Markdown code span, so the REPL shows it as written (``__init__.py`` is not
    bold ``init.py``): fenced by more backticks than it holds, padded where it touches one."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _chars_to_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _asks_slowly(request: Request) -> bool:
    last = request.messages[-1] if request.messages else None
    return (request.purpose != "summary" and last is not None and last.role == "user"
            and re.fullmatch(r"fill\s+\d+\s+slowly", last.text.strip().lower()) is not None)


class DemoProvider:
    name = "demo"
    served_window_source = "the demo model"

    def __init__(self, model: str = "demo"):
        self.model = model

    def served_window(self) -> int | None:
        return DEMO_WINDOW

    def served_floor(self, system: str, tools: list[ToolSpec]) -> None:
        return None  # counted with our own tokenizer, like everything the demo model reads

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        if request.purpose == "summary":
            message = Message.assistant(self._summarize(request))
        else:
            message = self._reply(request)
        message.usage = self._usage(request, message)
        message.stop_reason = message.stop_reason or ("tool_use" if message.tool_calls else "end_turn")
        endings.mark(message, endings.MAX_TOKENS if message.stop_reason == "max_tokens" else endings.END)
        pause = SLOW_WORD_SECONDS if _asks_slowly(request) else 0.0
        for word in re.findall(r"\S+\s*|\s+", message.text):
            if pause:
                time.sleep(pause)
            yield TextDelta(word)
        for call in message.tool_calls:
            yield ToolCallStarted(call.id, call.name)
        yield Done(message)

    # -- chat ----------------------------------------------------------------------------------
    def _reply(self, request: Request) -> Message:
        last = request.messages[-1] if request.messages else Message.user("")
        if last.role == "tool":
            return Message.assistant(self._describe_results(request.messages))
        text = last.text.strip()
        tool_names = {t.name for t in request.tools}
        call = self._tool_call_for(text, tool_names)
        if call is not None:
            return Message.assistant("", [call])
        lowered = text.lower()
        if lowered in {"help", "?", "/help demo"} or not text:
            return Message.assistant(HELP)
        fill = re.fullmatch(r"fill\s+(\d+)(?:\s+slowly)?", lowered)
        if fill:
            # Like a real model, it stops at the request's max_tokens, and says so.
            asked = min(int(fill.group(1)), 4000)
            return Message.assistant(self._filler(min(asked, request.max_tokens)),
                                     stop_reason="max_tokens" if asked > request.max_tokens else None)
        return Message.assistant(self._echo(text, request))

    def _tool_call_for(self, text: str, tools: set[str]) -> ToolCall | None:
        named = re.fullmatch(r"call\s+(\S+)(?:\s+(\{.*\}))?", text, flags=re.DOTALL)
        if named and named.group(1) in tools:
            return ToolCall(new_id("call_"), named.group(1), named.group(2) or "{}")
        patterns: list = [
            (r"(?:read|cat|show)\s+(\S+)", "read_file", lambda m: {"path": m.group(1)}),
            (r"ls(?:\s+(\S+))?", "glob", lambda m: {"pattern": m.group(1) or "*"}),
            (r"grep\s+(\S+)(?:\s+(\S+))?", "grep",
             lambda m: {"pattern": m.group(1), **({"path": m.group(2)} if m.group(2) else {})}),
            (r"(?:run|\$)\s+(.+)", "bash", lambda m: {"command": m.group(1)}),
            (r"write\s+(\S+?):\s?(.*)", "write_file", lambda m: {"path": m.group(1), "content": m.group(2) + "\n"}),
            (r"edit\s+(\S+?):\s?(.*?)\s?=>\s?(.*)", "edit_file",
             lambda m: {"path": m.group(1), "old_string": m.group(2), "new_string": m.group(3)}),
            (r"remember\s+(.+)", "core_memory_append", lambda m: {"label": "human", "content": m.group(1)}),
            (r"skill\s+(\S+)(?:\s+(.+))?", "skill",
             lambda m: {"name": m.group(1), **({"args": m.group(2)} if m.group(2) else {})}),
            (r"delegate\s+(.+)", "task", lambda m: {"description": " ".join(m.group(1).split()[:4]),
                                                     "prompt": m.group(1), "subagent_type": "explore"}),
        ]
        for pattern, tool, arguments in patterns:
            match = re.fullmatch(pattern, text, flags=re.IGNORECASE | re.DOTALL)
            if match and tool in tools:
                return ToolCall(new_id("call_"), tool, json.dumps(arguments(match)))
        return None

    def _describe_results(self, messages: list[Message]) -> str:
        results = []
        for message in reversed(messages):
            if message.role != "tool":
                break
            results.append(message)
        parts = []
        for result in reversed(results):
            told = summarize_output(result.text)
            if result.text.startswith(REFUSALS):
                parts.append(f"`{result.tool_name}` was not run: {code_span(told.first[:120])}")
                continue
            status = "failed" if result.is_error else "returned"
            exit_note = f" ({told.exit})" if told.exit else ""
            if not told.lines:
                parts.append(f"`{result.tool_name}` {status} no output{exit_note}.")
                continue
            parts.append(f"`{result.tool_name}` {status} {counted(told.lines, 'line')} of output{exit_note} "
                         f"(~{_chars_to_tokens(result.text):,} tokens), the first: {code_span(told.first[:120])}")
        return "\n\n".join(parts) + "\n\nThat output now sits in the context; the context indicator shows what is left."

    def _echo(self, text: str, request: Request) -> str:
        system = _chars_to_tokens(request.system)
        tools = _chars_to_tokens(json.dumps([t.to_dict() for t in request.tools]))
        history = sum(_chars_to_tokens(m.text) + sum(_chars_to_tokens(c.arguments) for c in m.tool_calls)
                      for m in request.messages)
        quoted = text if len(text) <= 200 else text[:200] + "…"
        return (f"You said: “{quoted}”\n\n"
                f"This request carried {counted(len(request.messages), 'message')}: system prompt ~{system:,} tokens, "
                f"tool schemas ~{tools:,}, conversation ~{history:,} (chars/4 estimates).\n\n"
                "I'm the offline demo model; type `help` to see what I can do.")

    @staticmethod
    def _filler(tokens: int) -> str:
        sentence = "The demo model is filling the context so you can watch compaction work."
        count = tokens * 4 // (len(sentence) + 1) + 1
        # Paragraphs, as a model writes: each settles and is rendered while the next streams.
        return "\n\n".join(" ".join([sentence] * min(6, count - start)) for start in range(0, count, 6))

    # -- summarizer ----------------------------------------------------------------------------
    def _summarize(self, request: Request) -> str:
        prompt = "\n".join(m.text for m in request.messages if m.role == "user")
        # Only the history counts: the instructions (quoted around it, or the last message after the
        # conversation itself) mention errors and files too.
        quoted = "\n".join(re.findall(r"<conversation>(.*?)</conversation>", prompt, flags=re.DOTALL))
        if not quoted:
            quoted = serialise(request.messages[:-1]) if len(request.messages) > 1 else prompt
        if not re.search(r"<previous-summary>", prompt) and request.messages and request.messages[0].kind == "summary":
            prompt += f"\n<previous-summary>\n{request.messages[0].text}\n</previous-summary>"
        user_lines = re.findall(r"^\[user\]\s*(.+)$", quoted, flags=re.MULTILINE)
        paths = sorted(set(re.findall(r"[\w./-]+\.(?:py|md|txt|json|toml|js|ts|rs|go|c|h|sh|yaml|yml)\b",
                                      _without_replies(quoted))))
        errors = re.findall(r"^.*(?:Error|error:|failed).*$", quoted, flags=re.MULTILINE)
        previous = re.search(r"<previous-summary>\s*(.*?)\s*</previous-summary>", prompt, flags=re.DOTALL)
        sections = [
            "1. Primary request and intent: " + (user_lines[0][:300] if user_lines else "(none recorded)"),
            "2. Key technical concepts: (demo model: extractive summary)",
            "3. Files and code sections: " + (", ".join(paths[:30]) or "none"),
            "4. Errors and fixes: " + ("; ".join(e.strip()[:160] for e in errors[-3:]) or "none"),
            "5. Problem solving: see the user messages below.",
            "6. All user messages:\n" + "\n".join(f"   - {line[:200]}" for line in user_lines[-30:]),
            "7. Pending tasks: " + (user_lines[-1][:200] if user_lines else "none"),
            "8. Current work: continuing the latest request.",
            "9. Optional next step: wait for the user.",
        ]
        if previous:
            sections.insert(0, "Earlier summary (merged):\n" + previous.group(1)[:2000])
        text = "\n".join(sections)
        return text[: max(200, request.max_tokens * 4)]

    @staticmethod
    def _usage(request: Request, reply: Message) -> Usage:
        prompt = _chars_to_tokens(request.system) + _chars_to_tokens(json.dumps([t.to_dict() for t in request.tools]))
        for message in request.messages:
            prompt += 4 + _chars_to_tokens(message.text)
            prompt += sum(_chars_to_tokens(c.name + c.arguments) for c in message.tool_calls)
        output = _chars_to_tokens(reply.text) + sum(_chars_to_tokens(c.name + c.arguments) for c in reply.tool_calls)
        return Usage(input_tokens=prompt, output_tokens=max(1, output))



def _without_replies(transcript: str) -> str:
    """The transcript without the assistant's prose (its tool calls kept): the files a summary
    names are those the user and the tools touched, not the examples of the demo's own help."""
    kept, in_reply = [], False
    for line in transcript.splitlines():
        if line.startswith("["):
            in_reply = line.startswith("[assistant]")
            line = line.removeprefix("[assistant]").strip() if in_reply else line
        if not in_reply or line.startswith("-> "):
            kept.append(line)
    return "\n".join(kept)
