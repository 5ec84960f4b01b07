"""The three-zone policy and answer validation: pure functions, no event loop."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hive.judge.base import RawAnswer, TierFailure
from hive.judge.policy import (
    boolean_zone,
    choice_zone,
    is_confident,
    neutral_answer,
    to_answer,
    validate,
)
from hive.judge.questions import BooleanQuestion, ChoiceQuestion, Question, ScoreQuestion

YES_NO = BooleanQuestion("news", "Is `note` news?")
COLOUR = ChoiceQuestion(
    "colour", "What colour is `thing`?", {"red": "red", "blue": "blue", "none": "no colour"}, escape="none"
)
STRICT = ChoiceQuestion(
    "colour",
    "What colour is `thing`?",
    {"red": "red", "blue": "blue", "none": "no colour"},
    escape="none",
    pick_bars={"red": 0.9},
)
SIZE = ScoreQuestion("size", "How big is `thing`?", ("small", "medium", "large"))


@pytest.mark.parametrize(
    ("p", "zone"),
    [
        (1.0, "yes"),
        (0.8, "yes"),
        (0.79, "unsure"),
        (0.5, "unsure"),
        (0.21, "unsure"),
        (0.2, "no"),
        (0.0, "no"),
    ],
)
def test_boolean_zones(p: float, zone: str) -> None:
    assert boolean_zone(p) == zone


@pytest.mark.parametrize(
    ("probs", "pick", "zone"),
    [
        ({"red": 0.7, "blue": 0.2, "none": 0.1}, "red", "picked"),
        ({"red": 0.6, "blue": 0.3, "none": 0.1}, "red", "picked"),
        ({"red": 0.55, "blue": 0.35, "none": 0.1}, "red", "unsure"),
        ({"red": 0.1, "blue": 0.2, "none": 0.7}, "none", "escape"),
        ({"red": 0.3, "blue": 0.2, "none": 0.5}, "none", "unsure"),
    ],
)
def test_choice_zones(probs: dict[str, float], pick: str, zone: str) -> None:
    assert choice_zone(COLOUR, probs)[::2] == (pick, zone)


def test_an_option_with_its_own_bar_needs_more_to_be_picked() -> None:
    assert choice_zone(STRICT, {"red": 0.85, "blue": 0.1, "none": 0.05})[2] == "unsure"
    assert choice_zone(STRICT, {"red": 0.95, "blue": 0.05, "none": 0.0})[2] == "picked"
    assert choice_zone(STRICT, {"red": 0.05, "blue": 0.65, "none": 0.3})[2] == "picked"


def test_a_choice_without_an_escape_option_cannot_be_defined() -> None:
    with pytest.raises(ValueError, match="escape"):
        ChoiceQuestion("x", "?", {"a": "a", "b": "b"}, escape="b")
    with pytest.raises(ValueError, match="no escape option"):
        ChoiceQuestion("x", "?", {"a": "a", "b": "b"}, escape="none")
    with pytest.raises(ValueError, match="unknown options"):
        ChoiceQuestion("x", "?", {"a": "a", "none": "-"}, escape="none", pick_bars={"b": 0.9})


@pytest.mark.parametrize(
    ("question", "raw", "message"),
    [
        (YES_NO, RawAnswer(p=math.nan), "not a probability"),
        (YES_NO, RawAnswer(p=1.2), "not a probability"),
        (YES_NO, RawAnswer(p=-0.1), "not a probability"),
        (YES_NO, RawAnswer(), "not a number"),
        (COLOUR, RawAnswer(probs={"red": 0.5, "blue": 0.2, "none": 0.1}), "add up"),
        (COLOUR, RawAnswer(probs={"red": 0.9, "blue": 0.9, "none": 0.1}), "add up"),
        (COLOUR, RawAnswer(probs={"red": 0.5, "green": 0.4, "none": 0.1}), "unknown options"),
        (COLOUR, RawAnswer(probs={"red": 0.5, "none": 0.5}), "missing options"),
        (COLOUR, RawAnswer(probs={"red": math.nan, "blue": 0.5, "none": 0.5}), "not a probability"),
        (COLOUR, RawAnswer(p=0.9), "no option probabilities"),
        (SIZE, RawAnswer(level=3.0), "outside"),
        (SIZE, RawAnswer(level=math.nan), "outside"),
    ],
)
def test_invalid_answers_are_an_invalid_response(question: Question, raw: RawAnswer, message: str) -> None:
    with pytest.raises(TierFailure, match=message) as caught:
        validate(question, raw)
    assert caught.value.kind == "invalid_response"


def test_probabilities_within_the_tolerance_are_scaled_to_one() -> None:
    checked = validate(COLOUR, RawAnswer(probs={"red": 0.7, "blue": 0.2, "none": 0.11}))
    assert checked.probs is not None
    assert sum(checked.probs.values()) == pytest.approx(1.0)
    assert checked.probs["red"] == pytest.approx(0.7 / 1.01)


def test_the_bars_hold_at_exactly_their_value_after_rescaling() -> None:
    kind = ChoiceQuestion("kind", "What is it?", {o: "" for o in ("finding", "dead_end", "decision", "blocker",
                                                                  "other")}, escape="other")
    probs = {"finding": 0.6, "dead_end": 0.05, "decision": 0.05, "blocker": 0.2, "other": 0.1}
    checked = validate(kind, RawAnswer(probs=probs))  # sums to 1.0000000000000002, rescaled below 0.6
    assert to_answer(kind, checked, "t").zone == "picked"
    for total in (0.98, 1.02):  # the tolerance is inclusive
        edge = {"red": total - 0.2, "blue": 0.1, "none": 0.1}
        assert validate(COLOUR, RawAnswer(probs=edge)).probs is not None


def test_answers_carry_zone_tier_and_pick() -> None:
    answer = to_answer(COLOUR, validate(COLOUR, RawAnswer(probs={"red": 0.1, "blue": 0.8, "none": 0.1})), "t1")
    assert (answer.pick, answer.p, answer.zone, answer.tier) == ("blue", 0.8, "picked", "t1")
    boolean = to_answer(YES_NO, RawAnswer(p=0.1, verbalized=True), "t2")
    assert (boolean.zone, boolean.verbalized) == ("no", True)
    assert is_confident(boolean)
    assert is_confident(to_answer(SIZE, RawAnswer(level=1.5), "t3"))


def test_neutral_answers_are_unsure() -> None:
    for question in (YES_NO, COLOUR, SIZE):
        answer = neutral_answer(question, "untrusted")
        assert answer.zone == "unsure" and not is_confident(answer)
    assert neutral_answer(COLOUR, "none").probs == pytest.approx({"red": 1 / 3, "blue": 1 / 3, "none": 1 / 3})


@given(
    st.dictionaries(
        st.sampled_from(["red", "blue", "none", "green"]),
        st.floats(allow_nan=True, allow_infinity=True) | st.integers(-2, 2),
        max_size=4,
    )
)
def test_any_choice_answer_is_either_valid_and_sums_to_one_or_an_invalid_response(probs: dict[str, float]) -> None:
    try:
        checked = validate(COLOUR, RawAnswer(probs=probs))
    except TierFailure as e:
        assert e.kind == "invalid_response"
        return
    assert checked.probs is not None and set(checked.probs) == set(COLOUR.options)
    assert sum(checked.probs.values()) == pytest.approx(1.0)
    assert to_answer(COLOUR, checked, "t").zone in {"picked", "escape", "unsure"}
