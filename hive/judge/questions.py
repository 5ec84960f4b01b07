"""Typed questions. Wording is short, concrete, single-predicate: ask what a thing *is*.

A choice must name an escape option (``none``, ``other``, ``unclear`` or ``unknown``): without one a judge
would be forced to pick a real option for off-topic input. Defining a choice without one raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Capability = Literal["classify", "relate", "rate", "meta"]
ESCAPE_OPTIONS = ("none", "other", "unclear", "unknown")


@dataclass(frozen=True)
class BooleanQuestion:
    name: str
    text: str
    capability: Capability = "classify"
    yes_at: float | None = None
    """The probability a yes needs where a gate asks for more than the default 0.8 (the race's stop needs 0.9).
    Below it the answer is unsure, so the cascade escalates it, as it does a choice below its option's bar."""
    type: Literal["boolean"] = field(default="boolean", init=False)

    def __post_init__(self) -> None:
        if self.yes_at is not None and not 0.5 < self.yes_at <= 1.0:
            raise ValueError(f"boolean {self.name!r}: yes_at must be above 0.5 and at most 1, not {self.yes_at!r}")


@dataclass(frozen=True)
class ChoiceQuestion:
    name: str
    text: str
    options: dict[str, str]
    """option → its one-line meaning, escape option included."""
    escape: str
    capability: Capability = "classify"
    pick_bars: dict[str, float] = field(default_factory=dict)
    """option → the probability it needs to be picked, where a gate asks for more than the default 0.6
    (e.g. a cross-bee ``supersedes`` needs 0.9). The cascade escalates an answer below its option's bar."""
    type: Literal["choice"] = field(default="choice", init=False)

    def __post_init__(self) -> None:
        if self.escape not in ESCAPE_OPTIONS:
            raise ValueError(
                f"choice {self.name!r}: escape option must be one of {ESCAPE_OPTIONS}, not {self.escape!r}"
            )
        if self.escape not in self.options:
            raise ValueError(f"choice {self.name!r} has no escape option {self.escape!r} among its options")
        if len(self.options) < 2:
            raise ValueError(f"choice {self.name!r} needs at least one real option besides {self.escape!r}")
        unknown = sorted(set(self.pick_bars) - set(self.options))
        if unknown:
            raise ValueError(f"choice {self.name!r}: pick_bars name unknown options {unknown}")


@dataclass(frozen=True)
class ScoreQuestion:
    name: str
    text: str
    levels: tuple[str, ...]
    """Ordered from lowest to highest."""
    capability: Capability = "rate"
    type: Literal["score"] = field(default="score", init=False)

    def __post_init__(self) -> None:
        if len(self.levels) < 2:
            raise ValueError(f"score {self.name!r} needs at least two levels")


Question = BooleanQuestion | ChoiceQuestion | ScoreQuestion
