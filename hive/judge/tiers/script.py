"""``script:<file>``: a deterministic judge from JSON rules, for tests, demos and reproducible runs.

The file is a JSON list of rules::

    [{"gate": "publish", "when": {"note": "(?i)traceback"},
      "answers": {"news": 0.9, "kind": {"finding": 0.8}}},
     {"gate": "relate", "when": {"later": "same cause"}, "answers": {"relation": {"supports": 0.85}}}]

Each ``when`` regex is searched, unanchored, in the text of that state field: a note's verbatim text; for
``earlier`` and ``later``, the notes of relate, their verbatim text or the rendered ``<bee> (<kind>): <text>``
(either matching will do, so ``^`` anchors at the note's first word and the bee and kind can be matched too);
booleans read ``true``/``false``. A rule with no ``when`` always matches. The first matching rule of the
gate answers; no match is an abstention, which the engine turns into a neutral (unsure) answer. A boolean
answer is a probability; a choice answer maps options to probabilities, and the options it leaves out share
what is left evenly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from hive.errors import UsageError
from hive.judge.base import RawAnswer, TierFailure, TierResult, note_text
from hive.judge.questions import BooleanQuestion, ChoiceQuestion, Question
from hive.judge.tiers import DEFAULT_TIMEOUTS
from hive.records import JUDGED_GATES

Contract = Mapping[str, tuple[Sequence[str], Sequence[Question]]]
"""gate → (its state fields, its questions), e.g. :data:`hive.gates.GATE_CONTRACT`."""


class ScriptRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    gate: str
    when: dict[str, str] = {}
    answers: dict[str, float | dict[str, float]]


def field_text(value: Any) -> str:
    """A state field as the rules see it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


RENDERED_NOTE_FIELDS = frozenset({"earlier", "later"})
"""State fields holding a note rendered with its bee and kind (the relate gate's)."""


def _texts(field: str, value: Any) -> tuple[str, ...]:
    """The texts a rule's pattern for ``field`` is searched in."""
    text = field_text(value)
    if field in RENDERED_NOTE_FIELDS and isinstance(value, str):
        verbatim = note_text(value)
        if verbatim != text:
            return (verbatim, text)
    return (text,)


class ScriptTier:
    """Answers from the first rule of the gate whose patterns all match the state."""

    untrusted: frozenset[str] = frozenset()

    def __init__(
        self, rules: Sequence[ScriptRule], *, id: str = "script", timeout: float = DEFAULT_TIMEOUTS["script"]
    ):
        self.id = id
        self.timeout = timeout
        self.rules = list(rules)
        self._patterns = [
            {field: re.compile(pattern) for field, pattern in rule.when.items()} for rule in rules
        ]

    @classmethod
    def from_file(cls, path: str | Path, contract: Contract | None = None) -> ScriptTier:
        """Load and check a rules file; raise :class:`UsageError` (one line) if it is not usable. With
        ``contract`` (gate → its state fields and questions), every rule is checked against its gate's."""
        where = Path(path)
        try:
            data = json.loads(where.read_text(encoding="utf-8-sig"))  # an editor's byte order mark is no JSON
        except OSError as e:
            raise UsageError(f"judge script {str(where)!r}: cannot read it ({e.strerror})") from e
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UsageError(f"judge script {str(where)!r} is not JSON: {e}") from e
        except RecursionError as e:
            raise UsageError(f"judge script {str(where)!r} is not a list of rules (nested too deeply)") from e
        if not isinstance(data, list):
            raise UsageError(f"judge script {str(where)!r} must be a JSON list of rules")
        rules: list[ScriptRule] = []
        for number, item in enumerate(data, 1):
            try:
                rule = ScriptRule.model_validate(item)
            except ValidationError as e:
                problem = e.errors()[0]
                place = ".".join(str(part) for part in problem["loc"]) or "rule"
                raise UsageError(
                    f"judge script {str(where)!r}: rule {number}: {place}: {problem['msg']}"
                ) from e
            if rule.gate not in JUDGED_GATES:
                raise UsageError(
                    f"judge script {str(where)!r}: rule {number}: unknown gate {rule.gate!r}; "
                    f"gates are {', '.join(JUDGED_GATES)}"
                )
            for field, pattern in rule.when.items():
                try:
                    re.compile(pattern)
                except re.error as e:
                    raise UsageError(
                        f"judge script {str(where)!r}: rule {number}: bad regex for {field!r}: {e}"
                    ) from e
            unusable = rule_problem(rule, contract) if contract is not None else None
            if unusable:
                raise UsageError(f"judge script {str(where)!r}: rule {number}: {unusable}")
            rules.append(rule)
        return cls(rules, id=f"script:{path}")

    def _matches(self, index: int, state: Mapping[str, Any]) -> bool:
        return all(
            field in state and any(pattern.search(text) is not None for text in _texts(field, state[field]))
            for field, pattern in self._patterns[index].items()
        )

    async def answer(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> TierResult:
        """The first matching rule's answers to ``questions``; no answers when no rule matches."""
        for index, rule in enumerate(self.rules):
            if rule.gate == gate and self._matches(index, state):
                return TierResult(
                    answers={
                        q.name: _raw(q, rule.answers[q.name]) for q in questions if q.name in rule.answers
                    },
                    meta={"rule": index + 1},
                )
        return TierResult(answers={})

    async def aclose(self) -> None:
        return None


def rule_problem(rule: ScriptRule, contract: Contract) -> str | None:
    """What makes ``rule`` unusable against its gate's contract (a state field or question it does not
    have, a probability out of range, an option the question does not offer), or None. A rule file with
    a typo would otherwise abstain, or fail, on every call without a word."""
    if rule.gate not in contract:
        return None
    fields, questions = contract[rule.gate]
    unknown = [f for f in rule.when if f not in fields]
    if unknown:
        return f"when: {unknown[0]!r} is not a field of the {rule.gate} state ({', '.join(fields)})"
    by_name = {q.name: q for q in questions}
    for name, value in rule.answers.items():
        question = by_name.get(name)
        if question is None:
            return f"answers: {rule.gate} asks {', '.join(by_name)}, not {name!r}"
        if isinstance(question, ChoiceQuestion):
            if not isinstance(value, dict):
                first = next(iter(question.options))
                return f"answers.{name}: a choice takes option → probability, e.g. {{{first!r}: 0.8}}"
            extra = [o for o in value if o not in question.options]
            if extra:
                return f"answers.{name}: {extra[0]!r} is not an option ({', '.join(question.options)})"
            if sum(value.values()) > 1.02:
                return f"answers.{name}: the probabilities add up to {sum(value.values()):.2f}, more than 1"
            if set(value) == set(question.options) and sum(value.values()) < 0.98:
                # nothing is left to share out: the engine would refuse the answer on every call
                return f"answers.{name}: all its options add up to {sum(value.values()):.2f}, not 1"
            probabilities = list(value.values())
        elif isinstance(value, dict):
            return f"answers.{name}: a boolean takes one probability, not options"
        else:
            probabilities = [value]
        if any(not 0.0 <= p <= 1.0 for p in probabilities):
            return f"answers.{name}: probabilities must be between 0 and 1"
    return None


def _raw(question: Question, value: float | dict[str, float]) -> RawAnswer:
    if isinstance(question, BooleanQuestion):
        if isinstance(value, dict):
            raise TierFailure("invalid_response", f"{question.name} is a boolean; the script gives options")
        return RawAnswer(p=value)
    if isinstance(question, ChoiceQuestion):
        if not isinstance(value, dict):
            raise TierFailure("invalid_response", f"{question.name} is a choice; the script gives a number")
        rest = [option for option in question.options if option not in value]
        left = 1.0 - sum(value.values())
        probs = dict(value) | {option: max(left, 0.0) / len(rest) for option in rest}
        return RawAnswer(probs=probs)
    if isinstance(value, dict):
        raise TierFailure("invalid_response", f"{question.name} is a score; the script gives options")
    return RawAnswer(level=value)
