"""The fast feature code of the local judge gives the numbers the heads were trained on.

``features.py`` searches lower-cased text with case-sensitive cues, skips per-sentence searches a whole-text
miss rules out, and counts hashed n-grams with numpy. The reference below is the plain form those replace
(every cue searched with IGNORECASE, every sentence searched, a Python list of buckets); the two must agree
bit for bit, or ``heads.npz`` would need a rebuild. ``scripts/check_judge_features.py`` runs the same
comparison over the whole narration corpus against the committed version of ``features.py``.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import zlib
from pathlib import Path

import pytest

from hive.judge.local import features as F
from hive.judge.local.heads import relate_inputs

NARRATION = Path(F.__file__).parent / "data" / "narration" / "n1-notes.jsonl"
EDGE_CASES = (
    "",
    "   \n  ",
    "FOUND: `Parser.Load()` RAISES KeyError: 'x' at parser.py:12. Let's open it.",
    "The run printed 3 passed. Next, let's check the Docs!\nI'll open `docs/index.rst` and search for TIMEOUT.",
    "I can't reach the index — No module named 'lxml' → pip install fails… Perhaps a proxy?",
    # Cased letters beyond ASCII, which take the IGNORECASE path: the long s matches "s" only case-folded,
    # the dotted capital I lower-cases to two characters, the Kelvin sign lower-cases to k.
    "Running it rai\u017fes an error: the call \u017feems to fail.",
    "\u0130STANBUL locale: the test still fails. We should check the \u212aEY handling.",
    "The fix is to cast the value. It would be helpful to add a test. Works fine now.",
)


def reference_text_features(text: str) -> list[float]:
    def is_plan(sentence: str) -> bool:
        return bool(F.CUES["plan_start"].search(sentence) or F.CUES["plan_phrase"].search(sentence))

    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n+", text.strip()) if s.strip()] or [text]
    plans = [is_plan(s) for s in sentences]

    def any_unplanned(cue: str) -> float:
        return 1.0 if any(F.CUES[cue].search(s) and not plan for s, plan in zip(sentences, plans, strict=True)) \
            else 0.0

    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return [
        *(1.0 if pattern.search(text) else 0.0 for pattern in F.CUES.values()),
        math.log1p(len(re.findall(r"\.\w{1,4}:\d+|\bline \d+|\blines \d+", text, re.IGNORECASE))) / math.log(10),
        math.log1p(len(re.findall(r"`[^`]+`", text))) / math.log(10),
        math.log1p(len(re.findall(r"\b\d+(\.\d+)?\b", text))) / math.log(10),
        math.log1p(len(text)) / 7.0,
        1.0 if is_plan(first) else 0.0,
        any_unplanned("observed"),
        any_unplanned("negative_result"),
        1.0 if any(F.CUES["fix_commit"].search(s) for s in sentences) else 0.0,
        sum(plans) / len(sentences),
        1.0 if plans[-1] else 0.0,
    ]


def reference_hashed_ngrams(text: str) -> list[float]:
    row = [0.0] * F.HASHED_DIM
    words = re.findall(r"[a-z']+", text.lower())
    grams = (*words, *(f"{a} {b}" for a, b in itertools.pairwise(words)), *(f"^{w}" for w in words[:F.OPENING_WORDS]))
    for gram in grams:
        row[zlib.crc32(gram.encode()) % F.HASHED_DIM] += 1.0
    logs = [math.log1p(c) for c in row]
    norm = math.sqrt(sum(v * v for v in logs)) or 1.0
    return [v / norm for v in logs]


def sample_texts() -> list[str]:
    narration = [json.loads(line)["text"] for line in NARRATION.read_text().splitlines()[:60]]
    return [*EDGE_CASES, *narration]


def test_lower_casing_the_cues_changes_no_escape() -> None:
    """Lower-casing a pattern would turn ``\\S``, ``\\W``, ``\\D``, ``\\B`` or ``\\A`` into other escapes."""
    assert not any(re.search(r"\\[A-Z]", pattern.pattern) for pattern in F.CUES.values())


@pytest.mark.parametrize("text", sample_texts())
def test_fast_features_equal_the_reference_bit_for_bit(text: str) -> None:
    assert F.text_features(text) == reference_text_features(text)
    assert F.hashed_ngrams(text) == reference_hashed_ngrams(text)
    assert F.cue_hits(text) == {name for name, pattern in F.CUES.items() if pattern.search(text)}


def test_case_folding_beyond_ascii_keeps_the_ignorecase_semantics() -> None:
    """The long s matches "s" under IGNORECASE though ``str.lower`` keeps it: the cue must still fire."""
    text = "Running it rai\u017fes an error."
    assert not F._LOWERED_CUES["traceback"].search(text.lower())
    assert "traceback" in F.cue_hits(text)


def test_cached_lexical_sets_are_immutable_and_env_pairs_follow_the_cue() -> None:
    words = F.content_words(EDGE_CASES[2])
    assert isinstance(words, frozenset) and F.content_words(EDGE_CASES[2]) is words
    env = "No module named 'lxml'; it is not installed."
    probs = {"other": 0.5, "blocker": 0.5}
    assert relate_inputs(0.5, env, env.upper(), False, probs, probs)[8] == 1.0
    assert relate_inputs(0.5, env, "The parser reads the key.", False, probs, probs)[8] == 0.0
