"""The two protocols compaction talks through, over the model in use and the request's parts.

``RequestMeasure`` is ``compaction.plan.Measure``: how big a request of some messages would be, as
the provider counts it (our counts calibrated, the floor as served). ``ModelSummarizer`` is
``compaction.summary_stage.SummaryModel``: the summarizer's window, count and two request forms.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mini_letta.compaction.acceptance import SummaryRejected, check, check_ending, looping
from mini_letta.compaction.summarizer import QuotedFormNeeded, SummaryUnavailable
from mini_letta.conversation import Conversation
from mini_letta.context.budget import RequestSize, StepSize
from mini_letta.loop.prompt import Prompt
from mini_letta.loop.state import Ledger, ModelInUse
from mini_letta.compaction.native import NativeSummary
from mini_letta.compaction.native import mode as parse_native_mode
from mini_letta.errors import ContextOverflowError, ProviderError
from mini_letta.messages import Message
from mini_letta.providers.base import Done, Request, TextDelta
from mini_letta.settings import SETTINGS


class RequestMeasure:
    def __init__(self, model: ModelInUse, prompt: Prompt):
        self.model = model
        self.prompt = prompt

    @property
    def threshold(self) -> int:
        return self.model.budget.threshold

    @property
    def window(self) -> int:
        return self.model.budget.window

    def measure(self, messages: list[Message]) -> int:
        """Whole-request tokens for a candidate message list, floor included."""
        return self.model.budget.calibration.request(self.prompt.system(), self.prompt.tools(), messages)

    def count(self, message: Message) -> int:
        return self.model.budget.counter.count_message(message)

    def count_text(self, text: str) -> int:
        return self.model.budget.counter.count_text(text)

    def request_size(self, conversation: Conversation) -> RequestSize:
        """The next request's size: provider usage first, local counts for what came after."""
        return self.model.budget.size(self.prompt.system(), self.prompt.tools(), conversation)

    def step_size(self, conversation: Conversation) -> StepSize:
        """The one size of the next model call, handed to compaction, the reply budget and the
        tool-output caps of its tools (``StepSize``); the loop asks it once per call. The server is
        asked to count the call's floor first, when it can (once per floor)."""
        self.ask_server()
        return StepSize(self.request_size(conversation))

    # -- what the calibration learns: its one owner (reads elsewhere never write it) ---------------
    def ask_server(self, *, as_sent: bool = True) -> None:
        """Have the server count the floor as it is now (a llama.cpp server can; once per floor):
        the usual floor first, which decides whether a small window gets the compact one, then,
        with ``as_sent``, the floor as sent. Only the usual one while the tools are still being
        registered: the floor as sent decides the form for the window, once, and a form decided
        before the last tools were in would keep a small window on the usual floor."""
        calibration = self.model.budget.calibration
        if calibration.floor_counter is None:  # most providers: nothing to ask, so nothing to render
            return
        calibration.ask_server("".join(self.prompt.parts(compact=False)), self.prompt.toolbox.specs())
        if as_sent:
            calibration.ask_server(self.prompt.system(), self.prompt.tools())

    def learn_from_reply(self, reply: Message, request: Request, local_messages: int) -> None:
        """The provider's size of a request it answered (its usage) against ours of the same request."""
        if reply.usage is not None:
            self.model.budget.calibration.observe_request(reply.usage.prompt_tokens, request.system, request.tools,
                                                          local_messages)

    def learn_from_rejection(self, error: ContextOverflowError, request: Request) -> int | None:
        """What a rejection says is better than what we assumed: the server's own count of the request
        sets the tokenizer ratio (at once, since the next request must fit by it), and the limit it
        names becomes the window. Returns that window when it is new (the caller says so and saves it
        with the session), else None."""
        budget = self.model.budget
        if error.actual:
            budget.calibration.observe_request(error.actual, request.system, request.tools,
                                               budget.counter.count_messages(request.messages), weight=1.0)
        limit = error.limit
        return limit if limit and budget.learn_window(limit) else None

    def resume(self, messages: list[Message]) -> None:
        """Start from what a resumed session had learned (its replies' usage and our counts)."""
        self.model.budget.calibration.calibrate_from(messages)

    def size(self, conversation: Conversation) -> int:
        """The size now, between steps (the status bar, ``/context``, what the user attaches)."""
        return self.request_size(conversation).total

    def tool_output_limit(self, conversation: Conversation, tokens: bool = False, step: StepSize | None = None) -> int:
        """What one tool output may keep now, in characters (or ``tokens``): sized to the room left
        (``ContextBudget.tool_output_token_limit``) by ``step``'s size as it stands (the model
        call whose tools are running), else by the size now."""
        budget = self.model.budget
        step = step or self.step_size(conversation)
        room = budget.tool_output_room(step.now, step.floor, conversation)
        return budget.tool_output_token_limit(**room) if tokens else budget.tool_output_limit(**room)


class ModelSummarizer:
    """The compactor's model calls. One at a time: a summary prepared in the background and a
    foreground one never overlap (a server of one slot would queue them, and the user pays twice)."""

    def __init__(self, model: ModelInUse, prompt: Prompt, ledger: Ledger, cache_key: Callable[[], str | None],
                 say: Callable[[str], None] = lambda text: None):
        self.model = model
        self.prompt = prompt
        self.ledger = ledger
        self.cache_key = cache_key
        self.shared = True  # False: never the in-conversation form (a benchmark's baseline)
        self.say = say
        self.native_mode = native_mode(say)  # compaction.native: auto, on, off
        self._said: set[str] = set()  # native compaction refusals told (once each per provider)
        self._lock = threading.Lock()

    def native(self, messages: list[Message], focus: str | None) -> NativeSummary | None:
        """The provider's own compaction of ``messages`` (``compaction/native.py``), or None: off,
        not the session's own model, not offered by the provider or the model, or refused (said
        once: our own summary runs instead)."""
        provider = self.model.provider
        if self.native_mode == "off" or not self.model.own_summarizer:
            return None
        compacts = getattr(provider, "compacts", None)
        if compacts is None or not compacts(provider.model):
            if self.native_mode == "on":
                self._say_once(f"unsupported:{provider.name}", f"compaction.native is on, but {provider.name}:"
                               f"{provider.model} has no compaction of its own; mini-letta's own summary runs.")
            return None
        # The tools go too: an API that reads the conversation (Anthropic's) wants the tools its
        # calls name, and the same prefix as the turn's requests is read from the provider's cache.
        system, tools = self.prompt.system(), self.prompt.tools()
        minimum = getattr(provider, "compaction_minimum", 0)
        if minimum and self.model.budget.calibration.request(system, tools, list(messages)) < minimum:
            if self.native_mode == "on":
                self._say_once(f"small:{provider.name}", f"compaction.native is on, but {provider.name} compacts "
                               f"only a request of {minimum:,} tokens or more; mini-letta's own summary runs "
                               "for smaller ones.")
            return None
        request = Request(system=system, messages=list(messages), tools=tools,
                          max_tokens=SETTINGS.summary_output_cap, purpose="summary", cache_key=self.cache_key(),
                          system_stable_chars=self.prompt.stable_chars(system))
        try:
            with self._lock:
                summary, usage = provider.compact(request, focus)
        except ProviderError as error:
            self._say_once(f"refused:{provider.name}", f"{provider.name} did not compact the conversation itself "
                           f"({error}); mini-letta's own summary runs instead.")
            return None
        self.ledger.add(provider.model, usage)
        if summary.text is not None:  # a summary in words is checked as a model's summary is
            try:
                check(summary.text, list(messages))
            except SummaryRejected as rejected:
                self._say_once(f"rejected:{provider.name}", f"{provider.name}'s own compaction was not kept "
                               f"({rejected}); mini-letta's own summary runs instead.")
                return None
        return summary

    def _say_once(self, key: str, text: str) -> None:
        if key not in self._said:
            self._said.add(key)
            self.say(text)

    @property
    def window(self) -> int:
        """The summarizer model's window: the session's own when it is the same model."""
        if self.model.own_summarizer:
            return self.model.budget.window
        from mini_letta.context import resolve_window

        # Quietly: a bad window setting was said when the session's budget was made.
        return resolve_window(self.model.summarizer_model).window

    def count(self, message: Message) -> int:
        return self.model.budget.calibration.count_message(message)

    @property
    def in_conversation(self) -> Callable[[list[Message], str, int], str] | None:
        return self._in_conversation if self.shared and self.model.own_summarizer else None

    def quoted(self, system: str, prompt: str, max_tokens: int) -> str:
        """One user message in, text out, no tools."""
        request = Request(system=system, messages=[Message.user(prompt)], tools=[], max_tokens=max_tokens,
                          model=self.model.summarizer_model, purpose="summary", cache_key=self.cache_key())
        return self._ask(request).text

    def _in_conversation(self, messages: list[Message], instructions: str, max_tokens: int) -> str:
        """The conversation as sent (same system prompt, tools and messages, so the provider reads
        it from its cache) with the instructions last. A reply with a tool call raises
        QuotedFormNeeded, an empty one SummaryUnavailable."""
        system = self.prompt.system()
        request = Request(system=system, messages=list(messages) + [Message.user(instructions)],
                          tools=self.prompt.tools(), max_tokens=max_tokens, purpose="summary",
                          cache_key=self.cache_key(), system_stable_chars=self.prompt.stable_chars(system))
        reply = self._ask(request)
        if reply.tool_calls:
            raise QuotedFormNeeded("the model called a tool instead of writing the summary")
        if not reply.text.strip():
            raise SummaryUnavailable("the summarizer returned an empty summary")
        return reply.text

    def _ask(self, request: Request) -> Any:
        provider = self.model.provider
        with self._lock:
            reply = _complete_unless_looping(provider, request)
        self.ledger.add(request.model or provider.model, reply.usage)
        check_ending(reply, request.max_tokens)
        return reply


def _complete_unless_looping(provider, request: Request) -> Message:
    """``complete``, but a reply that loops on one passage is stopped there (the stream closed, so
    the server stops too) and rejected as degenerate, rather than waited for up to its limit."""
    text, checked = [], 0
    stream = provider.stream(request)
    try:
        for event in stream:
            if isinstance(event, Done):
                return event.message
            if isinstance(event, TextDelta):
                text.append(event.text)
                checked += len(event.text)
                if checked >= SETTINGS.loop_check_every_chars:
                    checked = 0
                    if looping("".join(text)):
                        raise SummaryRejected("degenerate", "the model's summary was degenerate: it repeated "
                                                            "one passage over and over (stopped there)")
    finally:
        stream.close()
    raise RuntimeError(f"provider {provider.name} ended its stream without a Done event")


NATIVE_ENV = "MINI_LETTA_COMPACTION_NATIVE"


def native_mode(say: Callable[[str], None]) -> str:
    """``compaction.native``: ``MINI_LETTA_COMPACTION_NATIVE``, else ``{"compaction": {"native": ...}}``
    in the data folder's ``settings.json``, else "auto"; a value that is none of auto, on, off is
    said and "auto" used."""
    import json
    import os

    from mini_letta import config

    value, where = os.environ.get(NATIVE_ENV), NATIVE_ENV
    if value is None:
        try:
            settings = json.loads((config.home() / "settings.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            settings = {}
        group = settings.get("compaction") if isinstance(settings, dict) else None
        value, where = (group.get("native") if isinstance(group, dict) else None), "settings.json compaction.native"
        if value is not None and not isinstance(value, str):
            value = repr(value)
    if value is None:
        return "auto"
    chosen = parse_native_mode(value)
    if chosen is None:
        say(f"{where} is {value!r}, not auto, on or off; using auto.")
        return "auto"
    return chosen
