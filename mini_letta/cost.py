"""What the model calls cost: a price table by model-name pattern applied to the normalised usage.

The table ships as ``mini_letta/data/prices.json`` (US dollars per million tokens, with the date the
prices were checked); ``prices.json`` in the data folder adds or replaces entries. A model that no
pattern matches has no price: it is shown with its tokens only, never with a guessed figure.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_letta.notices import Say, quiet
from mini_letta.context.window import split_one_million_suffix
from mini_letta.context.budget import short_tokens
from mini_letta.messages import Usage

PRICES_FILE = "prices.json"
_RATES = ("input", "output", "cache_read", "cache_write")


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens; ``long_context`` takes over for a prompt above ``above_input_tokens``."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    long_context: Price | None = None
    above_input_tokens: int = 0

    def cost(self, usage: Usage) -> float:
        if self.long_context is not None and usage.prompt_tokens > self.above_input_tokens:
            return self.long_context.cost(usage)
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_read_tokens * self.cache_read + usage.cache_write_tokens * self.cache_write) / 1e6


@dataclass
class PriceTable:
    entries: list[tuple[str, Price]] = field(default_factory=list)
    checked: str = ""

    def price(self, model: str | None) -> Price | None:
        """The first entry whose pattern matches ``model`` (lower-cased, without a ``provider/``
        prefix or the ``[1m]`` suffix), or None."""
        if not model:
            return None
        name = split_one_million_suffix(model)[0].strip().lower().rsplit("/", 1)[-1]
        for pattern, price in self.entries:
            if fnmatch.fnmatchcase(name, pattern):
                return price
        return None


def _price(entry: dict[str, Any]) -> Price:
    rates = {key: float(entry[key]) for key in _RATES}
    if any(value < 0 for value in rates.values()):
        raise ValueError("a price is negative")
    long_context = entry.get("long_context")
    if isinstance(long_context, dict):
        return Price(**rates, long_context=_price(long_context),
                     above_input_tokens=int(long_context["above_input_tokens"]))
    return Price(**rates)


def parse_prices(data: Any) -> PriceTable:
    """A table from the JSON form of ``prices.json``; raises ValueError when it is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise ValueError('it has no "models" list')
    entries = []
    for entry in data["models"]:
        try:
            entries.append((str(entry["pattern"]).lower(), _price(entry)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"an entry is not a pattern with input, output, cache_read and cache_write prices "
                             f"({type(exc).__name__}: {exc})") from None
    return PriceTable(entries, str(data.get("checked", "")))


def builtin_prices() -> PriceTable:
    from mini_letta.resources import data

    return parse_prices(data(PRICES_FILE))


def load_prices(home: Path | None, say: Say = quiet) -> PriceTable:
    """The built-in table with the user's ``prices.json`` (in ``home``) in front of it. A user file
    that cannot be read is said and left out."""
    table = builtin_prices()
    path = home / PRICES_FILE if home is not None else None
    if path is None or not path.is_file():
        return table
    try:
        user = parse_prices(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        say(f"Ignoring {path}: {exc}. Fix or remove it to use your own prices.")
        return table
    return PriceTable(user.entries + table.entries, user.checked or table.checked)


@dataclass
class Spend:
    """Tokens and dollars of a session's model calls. ``usd`` is None as soon as one call used a
    model without a price: a partial sum would understate the cost."""

    table: PriceTable
    usage: Usage = field(default_factory=Usage)
    priced_usd: float = 0.0
    unpriced_calls: int = 0
    calls: int = 0

    def add(self, model: str | None, usage: Usage | None) -> None:
        if usage is None:
            return
        self.calls += 1
        self.usage = self.usage + usage
        price = self.table.price(model)
        if price is None:
            self.unpriced_calls += 1
        else:
            self.priced_usd += price.cost(usage)

    @property
    def usd(self) -> float | None:
        if self.unpriced_calls or not self.calls:
            return None
        return self.priced_usd

    def merge(self, other: Spend) -> None:
        """Count ``other``'s calls here too (a subagent's, in its parent's spend)."""
        self.usage = self.usage + other.usage
        self.priced_usd += other.priced_usd
        self.unpriced_calls += other.unpriced_calls
        self.calls += other.calls

    def snapshot(self) -> Spend:
        return dataclasses.replace(self)

    def since(self, earlier: Spend) -> Spend:
        """The calls made after ``earlier`` was taken."""
        usage = Usage(*(getattr(self.usage, f.name) - getattr(earlier.usage, f.name)
                        for f in dataclasses.fields(Usage)))
        return Spend(self.table, usage, self.priced_usd - earlier.priced_usd,
                     self.unpriced_calls - earlier.unpriced_calls, self.calls - earlier.calls)


def cache_hit_share(usage: Usage) -> float | None:
    """The share of prompt tokens read from the provider's cache (None before any prompt)."""
    return usage.cache_read_tokens / usage.prompt_tokens if usage.prompt_tokens > 0 else None


def dollars(usd: float) -> str:
    return f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"


def spend_line(spend: Spend) -> str:
    """One line: "12.3k in (85% from cache) · 230 out · $0.0042"; tokens only without a price."""
    usage = spend.usage
    share = cache_hit_share(usage)
    cached = f" ({share:.0%} from cache)" if share else ""
    line = f"{short_tokens(usage.prompt_tokens)} in{cached} · {short_tokens(usage.output_tokens)} out"
    return line + (f" · {dollars(spend.usd)}" if spend.usd is not None else "")
