"""The embedded ``local`` judge tier: offline load, valid answers per gate, embedding cache, declared limits,
and ranking sanity on invented examples. No timing assertions (speed lives in scripts/bench_judge.py)."""

from __future__ import annotations

import math
import zlib

import pytest

from hive.judge.base import TierFailure
from hive.judge.local import LocalTier
from hive.judge.local.features import HASHED_DIM, hashed_ngrams, identifiers, overlap, text_features
from hive.judge.local.synthetic import HUNTS, compose_examples
from hive.judge.local.tier import note_text
from hive.judge.questions import BooleanQuestion, ChoiceQuestion

NEWS = BooleanQuestion("news", "Would this help the other bees?", "relate")
KIND = ChoiceQuestion("kind", "What is this note?", {
    "finding": "a fact", "dead_end": "a failed approach", "decision": "a committed approach",
    "blocker": "stops progress", "other": "routine"}, escape="other")
USEFUL = BooleanQuestion("useful", "Is the note useful for focus?", "relate")
RELATION = ChoiceQuestion("relation", "What does later say about earlier?", {
    "supersedes": "replaces", "contradicts": "conflicts", "supports": "confirms", "none": "no bearing"},
    escape="none")

PLAN = "Let's open the file `config/loader.py` and scroll down to see how the settings are read."
TRACEBACK_FINDING = (
    "Running `repro.py` reproduces the bug: `KeyError: 'timeout'` is raised in `config/loader.py` line 88, "
    "because `load_section` reads `section['timeout']` without a default when the key is missing."
)
ENV_BLOCKER = (
    "The test run fails with `ModuleNotFoundError: No module named 'lxml'`; lxml is not installed and cannot "
    "be installed here because there is no network access."
)
FOCUS_LOADER = "find why the config loader crashes when the timeout key is missing"
FOCUS_UNRELATED = "review how the web dashboard renders its CSS themes"


@pytest.fixture(scope="module")
def tier() -> LocalTier:
    local = LocalTier()
    local.load()
    return local


def test_constructing_the_tier_loads_nothing() -> None:
    fresh = LocalTier()
    assert fresh.embedder.texts_embedded == 0
    assert fresh.id == "local"
    assert fresh.timeout > 0


async def test_publish_answers_news_and_kind_with_valid_probabilities(tier: LocalTier) -> None:
    result = await tier.answer("publish", [NEWS, KIND], {"note": TRACEBACK_FINDING, "goal": "", "focus": "",
                                                         "bee": "b1"})
    news = result.answers["news"].p
    assert news is not None and 0.0 <= news <= 1.0
    probs = result.answers["kind"].probs
    assert probs is not None and set(probs) == set(KIND.options)
    assert all(0.0 <= p <= 1.0 for p in probs.values())
    assert math.isclose(sum(probs.values()), 1.0, abs_tol=1e-6)


async def test_deliver_and_relate_answer_with_valid_probabilities(tier: LocalTier) -> None:
    deliver = await tier.answer("deliver", [USEFUL], {"note": TRACEBACK_FINDING, "kind": "finding",
                                                      "from_bee": "b1", "focus": FOCUS_LOADER})
    useful = deliver.answers["useful"].p
    assert useful is not None and 0.0 <= useful <= 1.0
    relate = await tier.answer("relate", [RELATION], {"earlier": f"b1 (finding): {TRACEBACK_FINDING}",
                                                      "later": f"b2 (blocker): {ENV_BLOCKER}",
                                                      "same_bee": False, "goal": ""})
    probs = relate.answers["relation"].probs
    assert probs is not None and set(probs) == set(RELATION.options)
    assert math.isclose(sum(probs.values()), 1.0, abs_tol=1e-6)


async def test_a_note_is_embedded_once_across_the_three_gates() -> None:
    local = LocalTier()
    note = "Setting `retries=0` in `Client.__init__` is replaced by the default 3, see `client.py` line 57."
    await local.answer("publish", [NEWS, KIND], {"note": note, "goal": "", "focus": "", "bee": "b1"})
    assert local.embedder.texts_embedded == 1
    await local.answer("deliver", [USEFUL], {"note": note, "kind": "finding", "from_bee": "b1",
                                             "focus": FOCUS_LOADER})
    assert local.embedder.texts_embedded == 2  # only the focus was new
    await local.answer("deliver", [USEFUL], {"note": note, "kind": "finding", "from_bee": "b1",
                                             "focus": FOCUS_LOADER})
    assert local.embedder.texts_embedded == 2
    await local.answer("relate", [RELATION], {"earlier": f"b2 (finding): {TRACEBACK_FINDING}",
                                              "later": f"b1 (finding): {note}", "same_bee": False, "goal": ""})
    assert local.embedder.texts_embedded == 3  # the rendered "<bee> (<kind>): " prefix does not defeat the cache


async def test_relation_stays_unsure_between_the_three_relations_and_says_so(tier: LocalTier) -> None:
    assert set(tier.unsure_by_design["relation"]) == {"supersedes", "contradicts", "supports"}
    same = ("Running `repro.py` shows `KeyError: 'timeout'` from `load_section` in `config/loader.py` line 88 "
            "when the key is missing from the file.")
    result = await tier.answer("relate", [RELATION], {"earlier": f"b1 (finding): {TRACEBACK_FINDING}",
                                                      "later": f"b2 (finding): {same}", "same_bee": False,
                                                      "goal": ""})
    probs = result.answers["relation"].probs
    assert probs is not None
    assert max(probs[o] for o in ("supersedes", "contradicts", "supports")) < 0.6
    assert "relation" in result.meta["unsure_by_design"]


async def test_ranking_sanity_on_obvious_examples(tier: LocalTier) -> None:
    async def publish(note: str) -> tuple[float, dict[str, float]]:
        result = await tier.answer("publish", [NEWS, KIND], {"note": note, "goal": "", "focus": "", "bee": "b"})
        news, probs = result.answers["news"].p, result.answers["kind"].probs
        assert news is not None and probs is not None
        return news, dict(probs)

    plan_news, plan_kind = await publish(PLAN)
    finding_news, finding_kind = await publish(TRACEBACK_FINDING)
    blocker_news, blocker_kind = await publish(ENV_BLOCKER)
    assert finding_news > plan_news
    assert plan_kind["other"] > finding_kind["other"]
    assert blocker_kind["blocker"] > plan_kind["blocker"]
    assert blocker_news > plan_news

    async def useful(focus: str) -> float:
        result = await tier.answer("deliver", [USEFUL], {"note": TRACEBACK_FINDING, "kind": "finding",
                                                         "from_bee": "b1", "focus": focus})
        p = result.answers["useful"].p
        assert p is not None
        return p

    assert await useful(FOCUS_LOADER) > await useful(FOCUS_UNRELATED)
    assert tier.related_probability(TRACEBACK_FINDING, TRACEBACK_FINDING.replace("bug", "error"), False) > \
        tier.related_probability(TRACEBACK_FINDING, "The CSS theme of the dashboard uses a dark palette.", False)


async def test_similarity_is_a_cosine(tier: LocalTier) -> None:
    assert tier.similarity(PLAN, PLAN) == pytest.approx(1.0, abs=1e-5)
    assert tier.similarity(TRACEBACK_FINDING, FOCUS_LOADER) > tier.similarity(TRACEBACK_FINDING, FOCUS_UNRELATED)


async def test_unknown_gates_and_questions_are_abstained(tier: LocalTier) -> None:
    assert (await tier.answer("tool.risk", [NEWS], {"note": PLAN})).answers == {}
    other = ChoiceQuestion("mood", "How does it feel?", {"happy": "", "sad": "", "none": ""}, escape="none")
    result = await tier.answer("publish", [other], {"note": PLAN, "goal": "", "focus": "", "bee": "b"})
    assert result.answers == {}


async def test_missing_state_text_is_a_bad_request(tier: LocalTier) -> None:
    with pytest.raises(TierFailure) as failure:
        await tier.answer("deliver", [USEFUL], {"note": PLAN, "focus": "  "})
    assert failure.value.kind == "bad_request"


def test_rendered_notes_are_unwrapped() -> None:
    assert note_text("verify-1 (dead_end): it (really) failed") == "it (really) failed"
    assert note_text("no prefix here") == "no prefix here"


def test_cue_features_and_overlap() -> None:
    assert len(text_features(PLAN)) == len(text_features(TRACEBACK_FINDING))
    assert "load_section" in identifiers(TRACEBACK_FINDING)
    assert overlap(set(), {"a"}) == (0.0, 0.0, 0.0)
    assert overlap({"a", "b"}, {"b"}) == (0.5, 1.0, 1.0)


def test_hashed_ngrams_are_stable_unit_vectors() -> None:
    row = hashed_ngrams(PLAN)
    assert len(row) == HASHED_DIM
    assert math.isclose(sum(v * v for v in row), 1.0, rel_tol=1e-9)
    assert row == hashed_ngrams(PLAN)
    assert row != hashed_ngrams(TRACEBACK_FINDING)
    assert hashed_ngrams("") == [0.0] * HASHED_DIM


def test_hashed_ngrams_tell_an_opening_from_the_same_words_later() -> None:
    """ "Let's open it" opens a plan; the same words after a fact do not make the utterance a plan."""
    opening_bucket = zlib.crc32(b"^let's") % HASHED_DIM
    assert hashed_ngrams("let's open the parser after the traceback")[opening_bucket] > 0
    later = hashed_ngrams("the traceback printed by the failing test names the parser, so let's open it")
    assert later[opening_bucket] == 0


def test_composed_examples_are_deterministic_and_follow_the_label_guidelines() -> None:
    examples = compose_examples(per_hunt=12)
    assert examples == compose_examples(per_hunt=12)
    assert len(examples) == 12 * len(HUNTS)
    assert {e.kind for e in examples} == {"routine", "finding", "dead_end", "decision", "blocker"}
    assert not any(e.news for e in examples if e.kind == "routine")
    assert all("{" not in e.text for e in examples)
    blockers = [e for e in examples if e.kind == "blocker"]
    assert all(e.news for e in blockers if "No module named" in e.text)
    assert not any(e.news for e in blockers if "interface" in e.text)
    # Some non-routine examples open with the marker bees are asked to use, always the one of their kind.
    markers = {"finding": "FOUND:", "dead_end": "DEAD END:", "decision": "DECIDED:", "blocker": "BLOCKED:"}
    marked = [e for e in examples if e.text.startswith(tuple(markers.values()))]
    assert 0.15 < len(marked) / sum(e.kind != "routine" for e in examples) < 0.45
    assert all(e.text.startswith(markers[e.kind]) for e in marked)
