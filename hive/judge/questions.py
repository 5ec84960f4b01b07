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
    type: Literal["boolean"] = field(default="boolean", init=False)


@dataclass(frozen=True)
class ChoiceQuestion:
    name: str
    text: str
    options: dict[str, str]
    """option → its one-line meaning, escape option included."""
    escape: str
    capability: Capability = "classify"
    type: Literal["choice"] = field(default="choice", init=False)

    def __post_init__(self) -> None:
        if self.escape not in ESCAPE_OPTIONS:
            raise ValueError(f"choice {self.name!r}: escape option must be one of {ESCAPE_OPTIONS}, not {self.escape!r}")
        if self.escape not in self.options:
            raise ValueError(f"choice {self.name!r} has no escape option {self.escape!r} among its options")
        if len(self.options) < 2:
            raise ValueError(f"choice {self.name!r} needs at least one real option besides {self.escape!r}")


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
