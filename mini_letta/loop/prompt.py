"""What every request carries besides the messages: the system prompt (with core memory, project
instructions and the skills list) and the tool schemas, in their full or compact form."""

from __future__ import annotations

import datetime
import platform
from pathlib import Path
from typing import Any

from mini_letta import resources
from mini_letta.context.floor import COMPACT_PROMPT, FULL_PROMPT, FloorForm, compact_specs
from mini_letta.loop.state import ModelInUse
from mini_letta.messages import ToolSpec

# Where the system prompt template stops being the same for the whole session.
CACHE_BREAK = "{{cache_break}}"


class Prompt:
    def __init__(self, *, model: ModelInUse, toolbox: Any, workspace: Path, memory: Any = None,
                 instructions: str = "", skills: Any = None):
        self.model = model
        self.toolbox = toolbox
        self.workspace = workspace
        self.memory = memory
        self.instructions = instructions
        self.skills = skills
        self.floor_form = FloorForm()

    def system(self) -> str:
        return "".join(self.parts())

    def parts(self, compact: bool | None = None) -> tuple[str, str]:
        """The system prompt as (stable, volatile): the fixed instructions, the same for the whole
        session, then what changes (the date, core memory, project instructions). A provider with
        explicit cache breakpoints caches the stable part on its own, so a memory edit does not
        rewrite it. ``compact``: the floor's compact form, by default when the window calls for it."""
        compact = self.compact_floor() if compact is None else compact
        values = {
            "workspace": str(self.workspace),
            "date": datetime.date.today().isoformat(),
            "platform": platform.system(),
            "core_memory": self.core_memory(compact),
            "instructions": self.instructions,
            "skills": self.skills_list(compact),
        }
        text = resources.prompt(COMPACT_PROMPT if compact else FULL_PROMPT)
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        stable, _, volatile = text.partition(CACHE_BREAK)
        return stable, volatile.rstrip() + "\n"

    def stable_chars(self, system: str) -> int:
        """How much of ``system`` is its stable part (0 when the prompt is built otherwise)."""
        stable = self.parts()[0]
        return len(stable) if stable and system.startswith(stable) and stable != system else 0

    def skills_list(self, compact: bool | None = None) -> str:
        """The skills' names and descriptions within their share of the window (names only in the
        compact floor); empty without skills."""
        if self.skills is None:
            return ""
        compact = self.compact_floor() if compact is None else compact
        budget = self.model.budget
        text = self.skills.listing(budget.window, budget.counter.count_text, compact=compact).text
        return text + "\n" if text else ""

    def core_memory(self, compact: bool | None = None) -> str:
        if self.memory is None:
            return ""
        return self.memory.render(compact=self.compact_floor() if compact is None else compact)

    def tools(self) -> list[ToolSpec]:
        specs = self.toolbox.specs()
        return compact_specs(specs, self.model.budget.window) if self.compact_floor() else specs

    def compact_floor(self) -> bool:
        """Whether the usual floor would crowd this window, so its compact form is sent."""
        budget = self.model.budget
        return self.floor_form.compact(budget.window, lambda: budget.calibration.floor_calibrated(
            "".join(self.parts(compact=False)), self.toolbox.specs()))
