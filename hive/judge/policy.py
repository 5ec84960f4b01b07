"""The three-zone policy: how a probability becomes yes, no, a pick, the escape, or unsure. Pure.

- boolean: ``yes`` at p ≥ 0.8 (or the question's own bar, see :attr:`BooleanQuestion.yes_at`), ``no`` at
  p ≤ 0.2, ``unsure`` in between.
- choice: the most probable option is ``picked`` only at p ≥ 0.6 (or the option's own bar, see
  :attr:`ChoiceQuestion.pick_bars`); a confident pick of the escape option is ``escape``, which a gate
  reads as "no". Anything weaker is ``unsure``.
- score: the level index is taken as given (no gate uses scores yet); only a neutral answer is ``unsure``.

``unsure`` always sends a gate to its fallback. Tier answers are validated here before anything reads
them: NaN, values outside [0, 1], choice probabilities that do not add up to 1 (± 0.02), unknown or
missing options all make the whole tier call an ``invalid_response`` failure. Nothing is renormalized
beyond that tolerance: a tier that sends garbage is broken, and its other answers are not trusted either.
"""

from __future__ import annotations

import math
from typing import Literal

from hive.judge.base import RawAnswer, TierFailure
from hive.judge.questions import BooleanQuestion, ChoiceQuestion, Question
from hive.records import Answer

Zone = Literal["yes", "no", "unsure", "picked", "escape"]

YES_AT = 0.8
NO_AT = 0.2
PICK_AT = 0.6
SUM_TOLERANCE = 0.02
_ROUNDING = 1e-9
"""Float slack for the bars: a 0.6 that rescaling turned into 0.5999999999999999 is still 0.6."""

UNTRUSTED_TIER = "untrusted"
"""The ``tier`` of a neutral answer to a question no tier may answer."""
NO_TIER = "none"
"""The ``tier`` of a neutral answer to a question every trusted tier failed or abstained on."""

def boolean_zone(p: float, yes_at: float = YES_AT) -> Zone:
    """``yes`` at p ≥ 0.8 (or ``yes_at``), ``no`` at p ≤ 0.2, else ``unsure``."""
    if p >= yes_at - _ROUNDING:
        return "yes"
    if p <= NO_AT + _ROUNDING:
        return "no"
    return "unsure"


def pick_bar(question: ChoiceQuestion, option: str) -> float:
    """The probability ``option`` needs to be picked: its own bar if the question sets one, else 0.6."""
    return question.pick_bars.get(option, PICK_AT)


def choice_zone(question: ChoiceQuestion, probs: dict[str, float]) -> tuple[str, float, Zone]:
    """The most probable option, its probability, and the zone: ``picked``, ``escape`` or ``unsure``."""
    pick = max(question.options, key=lambda option: probs.get(option, 0.0))
    p = probs.get(pick, 0.0)
    if p < pick_bar(question, pick) - _ROUNDING:
        return pick, p, "unsure"
    return pick, p, "escape" if pick == question.escape else "picked"


def is_confident(answer: Answer) -> bool:
    """Whether the policy may act on ``answer`` (anything but ``unsure``)."""
    return answer.zone != "unsure"


def _probability(value: float | None, what: str) -> float:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        raise TierFailure("invalid_response", f"{what} is not a number: {value!r}")
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise TierFailure("invalid_response", f"{what} is not a probability: {value!r}")
    return number


def validate(question: Question, raw: RawAnswer) -> RawAnswer:
    """Check one raw answer against its question; raise ``TierFailure("invalid_response")`` if unusable.

    Returns the answer as the policy reads it: a boolean's ``p``, a choice's ``probs`` (every option, summing
    to 1 within 0.02, scaled to exactly 1), a score's ``level``.
    """
    if isinstance(question, BooleanQuestion):
        return RawAnswer(p=_probability(raw.p, f"{question.name}.p"), verbalized=raw.verbalized)
    if isinstance(question, ChoiceQuestion):
        if raw.probs is None:
            raise TierFailure("invalid_response", f"{question.name}: no option probabilities")
        unknown = sorted(set(raw.probs) - set(question.options))
        if unknown:
            raise TierFailure("invalid_response", f"{question.name}: unknown options {unknown}")
        missing = [option for option in question.options if option not in raw.probs]
        if missing:
            raise TierFailure("invalid_response", f"{question.name}: missing options {missing}")
        probs = {
            option: _probability(raw.probs[option], f"{question.name}.{option}")
            for option in question.options
        }
        total = sum(probs.values())
        if abs(total - 1.0) > SUM_TOLERANCE + _ROUNDING:
            raise TierFailure(
                "invalid_response", f"{question.name}: probabilities add up to {total:.3f}, not 1"
            )
        return RawAnswer(probs={option: p / total for option, p in probs.items()}, verbalized=raw.verbalized)
    level = raw.level
    top = len(question.levels) - 1
    if level is None or isinstance(level, bool) or not isinstance(level, int | float):
        raise TierFailure("invalid_response", f"{question.name}: no level")
    if math.isnan(level) or not 0.0 <= level <= top:
        raise TierFailure("invalid_response", f"{question.name}: level {level!r} outside 0..{top}")
    return RawAnswer(level=float(level), verbalized=raw.verbalized)


def to_answer(question: Question, raw: RawAnswer, tier: str) -> Answer:
    """The recorded :class:`Answer` for a validated raw answer, with its zone."""
    if isinstance(question, BooleanQuestion):
        assert raw.p is not None
        return Answer(
            question=question.name,
            type="boolean",
            p=raw.p,
            zone=boolean_zone(raw.p, question.yes_at or YES_AT),
            tier=tier,
            verbalized=raw.verbalized,
        )
    if isinstance(question, ChoiceQuestion):
        assert raw.probs is not None
        probs = dict(raw.probs)
        pick, p, zone = choice_zone(question, probs)
        return Answer(
            question=question.name,
            type="choice",
            p=p,
            probs=probs,
            pick=pick,
            zone=zone,
            tier=tier,
            verbalized=raw.verbalized,
        )
    assert raw.level is not None
    return Answer(question=question.name, type="score", level=raw.level, tier=tier, verbalized=raw.verbalized)


def neutral_answer(question: Question, tier: str) -> Answer:
    """The answer of nobody: p = 0.5, choices uniform, the middle level; always ``unsure``."""
    if isinstance(question, BooleanQuestion):
        return Answer(question=question.name, type="boolean", p=0.5, zone="unsure", tier=tier)
    if isinstance(question, ChoiceQuestion):
        share = 1.0 / len(question.options)
        return Answer(
            question=question.name,
            type="choice",
            p=share,
            probs=dict.fromkeys(question.options, share),
            pick=question.escape,
            zone="unsure",
            tier=tier,
        )
    middle = (len(question.levels) - 1) / 2
    return Answer(question=question.name, type="score", level=middle, zone="unsure", tier=tier)
