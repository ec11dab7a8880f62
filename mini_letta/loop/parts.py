"""The parts an :class:`~mini_letta.loop.agent.Agent` is made of, built in order by one function.

``build_parts`` makes each part from those before it: the model in use (provider, budget and
summarizer model), the ledger of spend, the journal over the session state, the prompt (of
``prompt_class``: a subagent type's, or a test's short one), the request measure, then the
compaction with its summarizer and the hooks. It returns them as :class:`AgentParts`, with what
they were built over (state, toolbox, workspace, skills, notice channel), and the Agent only
stores them. ``app.assemble`` calls it; a benchmark that wants an agent without the tools may too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mini_letta.context import ContextBudget
from mini_letta.cost import PriceTable, builtin_prices
from mini_letta.hooks import Hooks
from mini_letta.loop.compacting import Compacting, Reattacher
from mini_letta.loop.journal import Journal
from mini_letta.loop.prompt import Prompt
from mini_letta.loop.sizing import ModelSummarizer, RequestMeasure
from mini_letta.loop.state import Ledger, ModelInUse, SessionState
from mini_letta.notices import Say, quiet
from mini_letta.providers.base import Provider
from mini_letta.toolbox import Toolbox


@dataclass(frozen=True)
class AgentParts:
    """What an Agent holds, each part built once. The first five are given to ``build_parts``
    (``state`` made when none was), the rest built by it over them."""

    state: SessionState
    toolbox: Toolbox
    workspace: Path
    skills: Any  # skills.SkillSet, or None: it answers with values and never calls back
    say: Say  # the run's notice channel (notices.Notices.say): what the user is told between turns
    model: ModelInUse
    ledger: Ledger
    journal: Journal
    prompt: Prompt
    sizing: RequestMeasure
    compacting: Compacting


def build_parts(*, provider: Provider, budget: ContextBudget, toolbox: Toolbox, workspace: Path,
                state: SessionState | None = None, memory: Any = None, instructions: str = "",
                summarizer_model: str | None = None, hooks: Hooks | None = None,
                prices: PriceTable | None = None, skills: Any = None, reattachers: Sequence[Reattacher] = (),
                prompt_class: type[Prompt] = Prompt, say: Say = quiet) -> AgentParts:
    """The agent's parts, in order. ``reattachers``: besides the skills, what a compaction adds
    back (``todos.reattach.TodoReattacher``); ``hooks`` None: none run (no commands)."""
    state = state or SessionState()
    workspace = Path(workspace)
    model = ModelInUse(provider, budget, summarizer_model)
    ledger = Ledger(prices or builtin_prices())
    journal = Journal(state)
    prompt = prompt_class(model=model, toolbox=toolbox, workspace=workspace, memory=memory,
                          instructions=instructions, skills=skills)
    sizing = RequestMeasure(model, prompt)
    # The cache key is read when a summary is asked for: the state's session changes with /clear.
    summarizer = ModelSummarizer(model, prompt, ledger, lambda: state.cache_key, say=say)

    def context() -> dict:
        return {"files": (list(toolbox.files_read), list(toolbox.files_modified)),
                "recall": any(spec.name == "conversation_search" for spec in prompt.tools())}

    compacting = Compacting(state=state, measure=sizing, summarizer=summarizer,
                            hooks=hooks or Hooks(workspace=workspace), journal=journal,
                            auto_enabled=lambda: model.budget.auto_compact,
                            reattachers=[part for part in (skills, *reattachers) if part is not None],
                            context=context, workspace=workspace,
                            ahead_key=lambda: (model.provider.model, model.summarizer_model, model.budget.window,
                                               model.budget.threshold))
    return AgentParts(state=state, toolbox=toolbox, workspace=workspace, skills=skills, say=say, model=model,
                      ledger=ledger, journal=journal, prompt=prompt, sizing=sizing, compacting=compacting)
