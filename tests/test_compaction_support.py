"""Builders shared by the compaction tests: histories, a chars/4 measure and a fake summarizer."""

from __future__ import annotations

import json
import math
import time

from hypothesis import strategies as st

from mini_letta.compaction import summary_message
from mini_letta.conversation import Conversation
from mini_letta.errors import ContextOverflowError
from mini_letta.messages import Message, ToolCall

FLOOR = 500


def count(message: Message) -> int:
    chars = len(message.text) + sum(len(c.name) + len(c.arguments) for c in message.tool_calls)
    return math.ceil(chars / 4) + 4


def measure(messages: list[Message]) -> int:
    return FLOOR + sum(count(m) for m in messages)


class FakeSummarizer:
    """Records what it was asked; answers with a fixed summary, or fails the way it is told to."""

    def __init__(self, reply: str = "## 1. Primary request and intent\nThe user wants the parser fixed.",
                 fail: Exception | None = None, overflow_times: int = 0):
        self.reply = reply
        self.fail = fail
        self.overflow_times = overflow_times
        self.calls: list[tuple[str, str, int]] = []

    def __call__(self, system: str, prompt: str, max_tokens: int) -> str:
        self.calls.append((system, prompt, max_tokens))
        if self.overflow_times > 0:
            self.overflow_times -= 1
            raise ContextOverflowError("prompt is too long", limit=None)
        if self.fail is not None:
            raise self.fail
        return self.reply


class History:
    """Builds a conversation turn by turn, with real sequence numbers."""

    def __init__(self, summary: str | None = None):
        self.conversation = Conversation()
        self._calls = 0
        if summary is not None:
            self.conversation.append(summary_message(summary, ["old/read.py"], ["old/changed.py"],
                                                     summary_body=summary))

    @property
    def messages(self) -> list[Message]:
        return self.conversation.messages

    def user(self, text: str) -> History:
        self.conversation.append(Message.user(text))
        return self

    def say(self, text: str) -> History:
        self.conversation.append(Message.assistant(text))
        return self

    def tool_round(self, *results: tuple[str, dict, str] | tuple[str, dict, str, bool], text: str = "") -> History:
        calls = []
        for result in results:
            self._calls += 1
            calls.append(ToolCall(f"call_{self._calls}", result[0], json.dumps(result[1])))
        self.conversation.append(Message.assistant(text, calls))
        for call, result in zip(calls, results):
            is_error = len(result) > 3 and result[3]
            self.conversation.append(Message.tool_result(call, result[2], is_error=is_error))
        return self


def read(path: str, size: int, fill: str = "x") -> tuple[str, dict, str]:
    return ("read_file", {"path": path}, "\n".join([fill * 79] * (size // 80)))


class FakeMeasure:
    """``compaction.plan.Measure`` over the chars/4 ``measure`` and ``count`` above."""

    def __init__(self, threshold: int, window: int):
        self.threshold, self.window = threshold, window

    measure = staticmethod(measure)
    count = staticmethod(count)

    @staticmethod
    def count_text(text: str) -> int:
        return count(Message.user(text))


class FakeSummaryModel:
    """``compaction.summary_stage.SummaryModel`` around a FakeSummarizer (no in-conversation form)."""

    def __init__(self, summarizer, window: int):
        self.quoted, self.window, self.in_conversation = summarizer, window, None
        self.count = count


class Controller:
    """The loop's ``Compacting`` over a conversation each call names: the triggers as the loop
    asks them, with the chars/4 measure and a fake summarizer."""

    def __init__(self, summarizer, *, threshold: int, window: int, auto: bool, files, clock):
        from mini_letta.hooks import Hooks
        from mini_letta.loop.compacting import Compacting
        from mini_letta.loop.journal import Journal
        from mini_letta.loop.state import SessionState

        self.state = SessionState()
        self.recall = lambda: False  # whether the model can call conversation_search
        self.measure = FakeMeasure(threshold, window)
        self.compacting = Compacting(
            state=self.state, measure=self.measure, summarizer=FakeSummaryModel(summarizer, window), hooks=Hooks(),
            journal=Journal(self.state), auto_enabled=lambda: auto, workspace=".",
            context=lambda: {"files": files(), "recall": self.recall()}, clock=clock)
        self.guards, self.records = self.compacting.guards, self.compacting.records

    def _on(self, conversation: Conversation):
        from mini_letta.loop.agent import AgentEvents

        self.state.conversation = conversation
        return AgentEvents()

    def _room(self, conversation: Conversation, trigger: str, tokens: int | None = None, **options):
        from mini_letta.context.budget import RequestSize, StepSize

        events = self._on(conversation)
        total = measure(conversation.messages) if tokens is None else tokens
        room = self.compacting.make_room(events, StepSize(RequestSize(total, 0, total, False, 0, total)), trigger,
                                         **options)
        if room.stopped:
            raise room.error()
        return room.record

    def before_request(self, conversation: Conversation, tokens: int | None = None):
        return self._room(conversation, "context_pressure", tokens)

    def after_overflow(self, conversation: Conversation, error: ContextOverflowError):
        return self._room(conversation, "context_overflow", error=error)

    def manual(self, conversation: Conversation, focus: str | None = None):
        return self._room(conversation, "manual", focus=focus)

    def preview(self, conversation: Conversation, focus: str | None = None):
        return self.compacting.preview(self._on(conversation), measure(conversation.messages), focus)

    def apply(self, conversation: Conversation, plan, summary: str | None = None):
        return self.compacting.apply(self._on(conversation), plan, summary)

    def prepare(self, messages: list[Message]):
        return self.compacting.plan_ahead(messages)

    def apply_prepared(self, conversation: Conversation, plan):
        return self.compacting.install_prepared(self._on(conversation), prepared=plan)


def controller(summarizer=None, *, threshold: int = 10_000, window: int = 12_000, auto: bool = True,
               files=lambda: ([], []), clock=time.monotonic) -> Controller:
    return Controller(summarizer or FakeSummarizer(), threshold=threshold, window=window, auto=auto, files=files,
                      clock=clock)


@st.composite
def histories(draw) -> History:
    """Random but well-formed histories: optional previous summary, turns of text and tool rounds
    (some long), results from empty to huge, errors, and a last turn that may stop anywhere."""
    history = History(summary=draw(st.sampled_from([None, "Earlier: the user asked for a CSV parser."])))
    turns = draw(st.integers(1, 7))
    for turn in range(turns):
        history.user(f"request {turn}: " + "u" * draw(st.integers(0, 600)))
        rounds = draw(st.integers(0, 6))
        for _ in range(rounds):
            results = [
                (draw(st.sampled_from(["read_file", "bash", "edit_file"])), {"path": f"src/f{turn}.py"},
                 "r" * draw(st.sampled_from([0, 10, 900, 3_000, 12_000])), draw(st.booleans()))
                for _ in range(draw(st.integers(1, 3)))
            ]
            history.tool_round(*results, text=draw(st.sampled_from(["", "looking", "a" * 400])))
        last = turn == turns - 1
        if not last or draw(st.booleans()):
            if rounds == 0 or draw(st.booleans()):
                history.say("done " + "d" * draw(st.integers(0, 300)))
    return history
