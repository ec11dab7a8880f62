"""Before every provider call: does the floor fit, may the request be sent, how big may the reply be?

Pure decisions over the context budget, asked by the turn loop (``loop/agent.py``), which does the
compacting itself: nothing here calls back into the agent. A server's rejection is turned into what
the next request is sized with (``loop/sizing.py`` ``learn_from_rejection``), and the loop is told what it learned.
"""

from __future__ import annotations

from mini_letta.context.budget import ContextBudget, ContextState, RequestSize
from mini_letta.context.threshold import output_reserve
from mini_letta.errors import ContextFullError, FloorTooHighError
from mini_letta.messages import Message, ToolSpec
from mini_letta.providers.base import Request
from mini_letta.settings import SETTINGS


def check_floor(budget: ContextBudget, system: str, tools: list[ToolSpec], provider_name: str) -> int:
    """The floor as the server counts it (a template that leaves out the tool schemas, as SmolLM2's
    under llama.cpp does, makes it far smaller than our count); FloorTooHighError when it leaves
    no room for any request."""
    floor = budget.calibration.floor_calibrated(system, tools)
    problem = budget.floor_problem(floor, provider_name)
    if problem:
        raise FloorTooHighError(problem)
    return floor


def useful_reply(budget: ContextBudget) -> int:
    """The smallest reply budget still worth sending a request for."""
    return min(SETTINGS.useful_reply_tokens, output_reserve(budget.window))


def sized_request(budget: ContextBudget, size: RequestSize, *, system: str, tools: list[ToolSpec],
                  messages: list[Message], cache_key: str | None, stable_chars: int) -> Request:
    """The request for a context of ``size`` (the step's one size value: usage-anchored, what a
    rejection is judged by too), its reply budget what the window leaves; raises ContextFullError
    (nothing sent) when it cannot be made to fit."""
    state = budget.state(size.total)
    max_tokens = size.reply
    # Over the threshold, the reply budget shrinks to what the window has left, down to a useful
    # answer's worth, before the turn is refused (with automatic compaction off, the blocked level
    # is where the user chooses, so it refuses there).
    blocked = state.level == "blocked" and (not budget.auto_compact or max_tokens < useful_reply(budget))
    if blocked or max_tokens < SETTINGS.min_reply_tokens:
        raise ContextFullError(_blocked_message(budget, state, max_tokens))
    return Request(system=system, messages=list(messages), tools=tools, max_tokens=max_tokens,
                   cache_key=cache_key, system_stable_chars=stable_chars)


def stable_chars(stable: str, system: str) -> int:
    """How much of ``system`` is its ``stable`` part (0 when the prompt is built otherwise)."""
    return len(stable) if stable and system.startswith(stable) and stable != system else 0


def refuse_if_too_big(budget: ContextBudget, floor: int, message: Message) -> None:
    """Refuse, before anything is sent or compacted, a message that could not fit even with the
    whole history compacted away (the caller withdraws it: kept in the session record, out of
    the context)."""
    tokens = budget.calibration.count_message(message)
    room = budget.limit - floor
    if tokens > room:
        raise ContextFullError(
            f"Your message is about {tokens:,} tokens, more than the {max(0, room):,} that this model's "
            f"{budget.window:,}-token window leaves for messages after the system prompt and tools; "
            f"it was not sent and is not part of the conversation. Send a shorter message, or a part of it.")


def explains(budget: ContextBudget, tokens: int, rejected: Request) -> bool:
    """Whether what was learned explains the rejection: the next request, of ``tokens`` (sized with
    the usage-anchored estimate, as every request is, not a count of the whole request: where the
    two disagreed, a rejection was "explained" while the next request was sized as fitting, and the
    same request was sent again), gives the reply less room than the rejected one had, so it
    compacts first when over the threshold. False: the caller should compact."""
    return budget.reply_budget(tokens) < rejected.max_tokens


def _blocked_message(budget: ContextBudget, state: ContextState, max_tokens: int) -> str:
    how = ("automatic compaction is off (CODEAGENT_DISABLE_COMPACT is set)"
           if not budget.auto_compact else
           f"compaction could not free enough room (a reply would have {max_tokens:,} tokens)")
    # /compact is the way out that automatic compaction being off leaves open: say that it works.
    works = " (it works with automatic compaction off)" if not budget.auto_compact else ""
    return (f"Context is full ({state.tokens:,} of {state.window:,} tokens) and {how}; the request was not "
            f"sent and your message is not kept in the conversation. Use /compact to summarise the "
            f"conversation{works}, /clear to start a new session, or a model with a larger window.")
