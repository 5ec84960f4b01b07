"""Features the embeddings miss: cue words, code references, lexical overlap. Pure functions of text.

Sentence embeddings capture the topic of an utterance well but not its speech act: "the script raises
KeyError" and "let's run the script to see if it raises KeyError" land close together. The cues below
separate an observed fact from a plan, a failure from a success, an environment blocker from the agent's
own limits, and they measure how much two texts share in concrete terms (identifiers, paths, numbers).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import zlib
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

_I = re.IGNORECASE

# name → pattern; each becomes one 0/1 feature (or a damped count where noted in ``text_features``).
CUES: dict[str, re.Pattern[str]] = {
    "traceback": re.compile(r"traceback|\b\w+(error|exception)\b:|\braises?\b|\braised\b", _I),
    "error_word": re.compile(r"\b\w*(error|exception|failure)s?\b|\bfail(s|ed|ing)?\b|\bcrash", _I),
    "env_missing": re.compile(
        r"no module named|not installed|modulenotfounderror|cannot import|could not (find|import)|"
        r"not built|needs? (a )?(c )?compiler|no network|network (error|access)|index is unreachable|"
        r"cannot reach|settings are not configured|improperlyconfigured|no such table|timed out|"
        r"\btimeout\b after|permission denied|python 3\.[0-7]\b|address already in use|not available in|"
        r"not supported in the (version|python)|older version of python|version of python (being )?used|"
        r"connection refused|could not connect|cannot open shared object|is not available",
        _I,
    ),
    "capability": re.compile(
        r"\bI (can ?not|can't|am unable|am not able|do not have the ability|don't have)|\bI'm (unable|not able)|"
        r"\bas an ai\b|(in|of) this (interface|session|platform)|(limitations|constraints) of (this|our)|"
        r"unable to (proceed|perform|run|execute|start|search)|not feasible",
        _I,
    ),
    "plan_start": re.compile(
        r"^\s*(let's|let me|let us|i'll|i will|next,? |now,? let's|now that|to (start|begin|reproduce|understand|"
        r"investigate|find)|first,? |we (should|need to) (look|find|search|examine|check|open|start)|"
        r"the issue (says|describes|mentions|reports|is)|given (that|the))",
        _I,
    ),
    "plan_phrase": re.compile(
        r"\blet's\b|\blet me\b|\bI'll (now )?(open|search|look|scroll|create|run|go|check|start|write|set)|"
        r"\bwe (should|need to|can|will) (look|find|search|examine|check|open|scroll|review|understand|explore|"
        r"navigate|investigate|locate|take a (closer )?look)|it would be (helpful|important|useful)|to proceed|"
        r"the next step (is|would be) to (locate|find|look|examine|open|search|review|check|understand)",
        _I,
    ),
    "navigation": re.compile(r"\b(scroll|open the|open `|navigate|go to|search for|search_\w+|jump to)\b", _I),
    "fix_commit": re.compile(
        r"the (right |proper |safest |best )?fix (is|should|will|belongs)|fix (is|will be) to|"
        r"\bI will (change|fix|make|keep|remove|add|implement|modify|go)|\bI'll (change|fix|keep|remove|add|implement|"
        r"go with|make)|\bI'm going to\b|\bwe will (add|replace|change|fix|modify)|bug location|the patch will|"
        r"the (change|solution) (to make )?is|to (address|resolve|fix) (this|the issue)|we (should|need to|can|could|"
        r"must|will) (modify|change|fix|handle|add|replace|cast|validate|ensure|update|adjust|implement|make sure|"
        r"return)|\bI've decided|the (most likely|proper) (bug |)(location|place)|rather than|instead of changing|"
        r"this approach|(a|the) (potential|possible|proposed) (fix|solution|patch)|buggy location|needs? to be "
        r"(changed|modified|fixed)",
        _I,
    ),
    "observed": re.compile(
        r"\b(reproduces?|reproduced|confirms?|confirmed|shows?|showed|indicates?|prints?|printed|returns?|"
        r"returned|output|passes|passed|is set to|defaults? to|calls|is called|contains|occurs|is responsible for|"
        r"is where|we've located|we have located|the search results|results (show|indicate)|replicated|"
        r"successfully|is raised|raises)\b",
        _I,
    ),
    "tests_pass": re.compile(r"\b\d+ (tests|passed)\b|tests? pass|passes all|all \d+ tests", _I),
    "negative_result": re.compile(
        r"did not (help|work|fix|reproduce|resolve|show|change)|does not (reproduce|show|help|fix)|didn't|doesn't|"
        r"not the (cause|problem|right)|is not (where|involved|the)|was not|still (fails|fail|wait|misplac|missing|"
        r"is|shows|raises|occurs|present|persists|happens)|no longer|not enough|dead end|reverted|not acceptable|"
        r"discarded|is fine|never (reached|hit|called)|works fine|nothing that|persists|not resolved|"
        r"without (encountering|raising|any|the) [^.]{0,40}(error|exception|issue)|not (be )?reproduc|"
        r"(unable|failed|could not|couldn't) (to )?reproduc|contradicts the issue|no (results|matches) (were )?found|"
        r"(was|were) unsuccessful",
        _I,
    ),
    "edit_narration": re.compile(
        r"the edit (has been|was)|edit command|indentation|syntax error|duplicate line|i've made the edit|"
        r"has been (applied|updated|created)|i've reverted|unmatched parenthesis|closing parenthesis",
        _I,
    ),
    "wrap_up": re.compile(r"\bsubmit\b|\bsummari[sz]e\b|clean up|no longer needed", _I),
    "hedge": re.compile(r"\b(seems?|might|may|perhaps|possibly|probably|likely|could be|appears? to)\b", _I),
    "restate": re.compile(
        r"\bthe issue (says|describes|mentions|reports|is about)|according to the (issue|reporter)", _I
    ),
    "located_only": re.compile(
        r"\b(we have found|search found|found the|is defined in|lives in|is located|as (one would )?expect|"
        r"as expected|as documented|which is the standard|as its name suggests|the same function)\b",
        _I,
    ),
    "after_fix": re.compile(r"\bafter (the|my|applying|resolving|removing|forwarding|the) ?(change|fix|patch)?|"
                            r"\bnow (prints|returns|runs|shows|passes)|with the (change|fix|fallback)", _I),
    "marker": re.compile(r"^\s*(FOUND|DEAD END|DECIDED|BLOCKED):", _I),
}

_PATH_LINE = re.compile(r"\.\w{1,4}:\d+|\bline \d+|\blines \d+", _I)
_CODE_SPAN = re.compile(r"`[^`]+`")
_NUMBER = re.compile(r"\b\d+(\.\d+)?\b")
_WORD = re.compile(r"[a-z0-9_][a-z0-9_./-]{2,}", _I)
_IDENT = re.compile(r"[A-Za-z_][\w.]*\w")
_STOP = frozenset((
    "the", "and", "for", "with", "that", "this", "from", "are", "was", "were", "not", "but", "can", "have",
    "has", "had", "its", "it's", "into", "out", "our", "your", "their", "them", "they", "then", "than",
    "there", "here", "what", "when", "where", "which", "while", "who", "why", "how", "all", "any", "some",
    "each", "let's", "let", "lets", "now", "next", "will", "would", "should", "could", "may", "might",
    "must", "also", "just", "only", "very", "more", "most", "see", "seems", "like", "use", "used", "using",
    "does", "did", "done", "been", "being", "about", "above", "after", "again", "against", "before",
    "below", "between", "both", "during", "further", "once", "other", "same", "such", "too", "under",
    "until", "own", "off", "over", "these", "those", "issue", "problem", "code", "file", "files",
    "function", "method", "class", "line", "lines", "check", "look", "find", "run",
))

SENTENCE_FEATURES = ("fact_sentence", "negative_sentence", "commit_sentence", "plan_share", "last_sentence_plan")
TEXT_FEATURES = (*CUES, "path_line", "code_spans", "numbers", "length", "first_sentence_plan", *SENTENCE_FEATURES)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_FIRST_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_LOWERED_CUES: dict[str, re.Pattern[str]] = {name: re.compile(p.pattern.lower()) for name, p in CUES.items()}
r"""The cues without IGNORECASE, for lower-cased text: ``re`` runs case-folded alternations two to four times
slower. The cue patterns use no upper-case escapes (``\S``, ``\W``...), which lower-casing would change."""
_UNANCHORED_CUES = frozenset(name for name, p in CUES.items() if not re.search(r"(?<!\[)\^|\$", p.pattern))
"""Cues with no ``^``/``$`` anchor (a ``[^`` class is no anchor) match a sentence only if they match the whole
text: sentences are split at white space, so a match inside one sees the same characters and the same word
boundaries in the whole text."""
CACHE_SIZE = 4096


def _damp(count: int) -> float:
    return math.log1p(count) / math.log(10)


def _cue_view(text: str) -> tuple[str, Mapping[str, re.Pattern[str]]]:
    """The text and the cue patterns to search it with, equivalent to ``CUES`` on ``text``.

    Where every character is ASCII or has no case, an IGNORECASE match is a case-sensitive match of the
    lower-cased pattern in the lower-cased text, at the same offsets; other text keeps the IGNORECASE cues
    (Unicode case folding pairs some letters, such as the long s with s, that ``str.lower`` keeps apart)."""
    if all(c.isascii() or c.lower() == c == c.upper() for c in set(text)):
        return text.lower(), _LOWERED_CUES
    return text, CUES


@functools.lru_cache(maxsize=CACHE_SIZE)
def cue_hits(text: str) -> frozenset[str]:
    """Names of the ``CUES`` found anywhere in ``text`` (cached: publish, deliver and relate share it)."""
    subject, cues = _cue_view(text)
    return frozenset(name for name, pattern in cues.items() if pattern.search(subject))


def _is_plan(sentence: str, cues: Mapping[str, re.Pattern[str]], hits: frozenset[str]) -> bool:
    return bool(cues["plan_start"].search(sentence) or ("plan_phrase" in hits and cues["plan_phrase"].search(sentence)))


def _sentence_features(subject: str, cues: Mapping[str, re.Pattern[str]], hits: frozenset[str]) -> list[float]:
    sentences = [s for s in _SENTENCE_END.split(subject.strip()) if s.strip()] or [subject]
    plans = [_is_plan(s, cues, hits) for s in sentences]

    def any_sentence(cue: str, unplanned: bool) -> float:
        if cue in _UNANCHORED_CUES and cue not in hits:
            return 0.0
        pattern = cues[cue]
        found = any(pattern.search(s) and not (unplanned and plan) for s, plan in zip(sentences, plans, strict=True))
        return 1.0 if found else 0.0

    return [
        any_sentence("observed", unplanned=True),
        any_sentence("negative_result", unplanned=True),
        any_sentence("fix_commit", unplanned=False),
        sum(plans) / len(sentences),
        1.0 if plans[-1] else 0.0,
    ]


def sentence_features(text: str) -> list[float]:
    """Cues per sentence. Agents write a fact and then a plan ("X confirms the bug. Next, let's open Y");
    the text is worth what its most informative sentence is worth, so a plan tail must not hide the fact."""
    subject, cues = _cue_view(text)
    return _sentence_features(subject, cues, cue_hits(text))


def text_features(text: str) -> list[float]:
    """One row of cue features for a single utterance, in the order of ``TEXT_FEATURES``."""
    hits = cue_hits(text)
    subject, cues = _cue_view(text)
    row = [1.0 if name in hits else 0.0 for name in CUES]
    first = _FIRST_SENTENCE_END.split(subject.strip(), maxsplit=1)[0]
    row += [
        _damp(len(_PATH_LINE.findall(text))),
        _damp(len(_CODE_SPAN.findall(text))),
        _damp(len(_NUMBER.findall(text))),
        math.log1p(len(text)) / 7.0,
        1.0 if _is_plan(first, cues, hits) else 0.0,
        *_sentence_features(subject, cues, hits),
    ]
    return row


HASHED_DIM = 1024
OPENING_WORDS = 8
_HASH_WORD = re.compile(r"[a-z']+")


def hashed_ngrams(text: str, dim: int = HASHED_DIM) -> list[float]:
    """Word unigrams and bigrams, plus the opening words marked as such, hashed into ``dim`` buckets (log
    counts, unit length).

    The cue families above are hand-picked; real narration words its speech acts in more ways than we can
    list ("ran successfully without", "is not present in", "the next step is"). Hashed n-grams let the heads
    learn such phrasing from the labelled examples; the heads' L2 penalty keeps any one bucket from ruling.
    The opening words get buckets of their own because an utterance's first words usually say what it is
    ("The output shows", "Let's", "It appears", "Given the"). CRC32 rather than ``hash()`` so the buckets are
    the same in every process."""
    words = _HASH_WORD.findall(text.lower())
    grams = (*words, *(f"{a} {b}" for a, b in itertools.pairwise(words)), *(f"^{w}" for w in words[:OPENING_WORDS]))
    counts = np.bincount(np.fromiter((zlib.crc32(g.encode()) for g in grams), np.int64) % dim, minlength=dim)
    buckets = np.flatnonzero(counts).tolist()
    # math.log1p and a left-to-right sum over the filled buckets (empty ones add exact zeros), so the values
    # are bit for bit those the heads were trained on.
    logs = [math.log1p(c) for c in counts[buckets].tolist()]
    norm = math.sqrt(sum(v * v for v in logs)) or 1.0
    row = [0.0] * dim
    for bucket, value in zip(buckets, logs, strict=True):
        row[bucket] = value / norm
    return row


@functools.lru_cache(maxsize=CACHE_SIZE)
def content_words(text: str) -> frozenset[str]:
    """Lower-case words of three or more characters that carry content (stop words removed); cached, since
    deliver and relate ask for the same note's words several times."""
    return frozenset({w.lower().strip("./-") for w in _WORD.findall(text)} - _STOP - {""})


@functools.lru_cache(maxsize=CACHE_SIZE)
def identifiers(text: str) -> frozenset[str]:
    """Code-like names: what appears inside backticks, split into dotted and underscored parts too (cached)."""
    names: set[str] = set()
    for span in _CODE_SPAN.findall(text):
        for ident in _IDENT.findall(span):
            lowered = ident.lower()
            if len(lowered) >= 3:
                names.add(lowered)
                names.update(p for p in re.split(r"[._/]", lowered) if len(p) >= 4)
    return frozenset(names)


def overlap(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> tuple[float, float, float]:
    """(Jaccard, overlap coefficient, share of ``b`` found in ``a``); zeros for empty sets."""
    if not a or not b:
        return 0.0, 0.0, 0.0
    shared = len(a & b)
    return shared / len(a | b), shared / min(len(a), len(b)), shared / len(b)


def text_matrix(texts: Sequence[str]) -> npt.NDArray[np.float64]:
    """Cue features and hashed n-grams, one row per text."""
    return np.array([text_features(t) + hashed_ngrams(t) for t in texts], dtype=np.float64)
