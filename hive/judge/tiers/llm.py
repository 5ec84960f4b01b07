"""``llm:<provider>:<model>``: a chat model as a judge tier, over the shared provider layer.

All questions of one gate call go in one request. Two ways to get probabilities:

- **logprobs** (first choice): the model answers with one code per question (``Y``/``N`` for a boolean, a
  letter per option for a choice, a digit per level for a score), separated by spaces, and the
  probabilities are read off each code token's ``top_logprobs``: the mass of every spelling of each valid
  code, renormalized over the valid codes.
- **verbalized** (when the endpoint gives no logprobs; Anthropic's never does, so its tier starts here): the
  model answers with JSON holding a stated probability per question. For a choice, the mass the model did
  not give its pick is spread evenly over the other options. Prose or code fences around the JSON are
  tolerated. Such answers are marked ``verbalized`` in the ledger.

The tier learns from the first reply which way its endpoint works and keeps to it (a logprob request
refused as a bad request, when the plain JSON request after it is answered, also means JSON from then on, and
so does a reply whose tokens come with no alternatives in ``top_logprobs``).
A question the reply does not answer makes the call an ``invalid_response``.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from hive.errors import ModelAPIError
from hive.judge.base import RawAnswer, TierFailure, TierResult
from hive.judge.questions import BooleanQuestion, ChoiceQuestion, Question
from hive.judge.tiers import DEFAULT_TIMEOUTS
from hive.judge.tiers.http import status_failure
from hive.providers.base import Message, Model, ModelResponse, ModelSettings, ProviderError, TokenUsage
from hive.providers.openai import is_reasoning_model

SYSTEM_PROMPT = (
    "You are a careful, literal classifier for a team of software investigators (called bees) who work "
    "on one goal at the same time. You are shown a small state (named fields) and typed questions about "
    "it. Judge only what the state's text says; do not guess beyond it. Follow the reply format exactly."
)
TOP_LOGPROBS = 10
NO_LOGPROBS_PROVIDERS = frozenset({"anthropic"})
"""Providers whose API has no token log probabilities: their tier asks for JSON from the first call, in one
request, rather than learning it from a wasted code request."""
REASONING_ALLOWANCE = 2048
"""Output tokens a reasoning model may think in before its JSON answer, on top of the answer's own: its hidden
reasoning counts against the cap, and a cap sized for the answer alone gets an empty reply every time."""


def codes_of(question: Question) -> list[str]:
    """The one-character answer codes of a question, in option or level order."""
    if isinstance(question, BooleanQuestion):
        return ["Y", "N"]
    if isinstance(question, ChoiceQuestion):
        return list(string.ascii_uppercase[: len(question.options)])
    return [str(level) for level in range(len(question.levels))]


def _state_block(state: Mapping[str, Any]) -> str:
    lines = []
    for name, value in state.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        lines.append(f"<{name}>\n{text}\n</{name}>")
    return "\n".join(lines)


def _question_block(questions: Sequence[Question], *, with_codes: bool) -> str:
    lines = []
    for number, question in enumerate(questions, 1):
        if isinstance(question, BooleanQuestion):
            lines.append(f"{number}. {question.name} (yes/no): {question.text}")
        elif isinstance(question, ChoiceQuestion):
            lines.append(f"{number}. {question.name} (choose one): {question.text}")
            for code, (option, meaning) in zip(codes_of(question), question.options.items(), strict=False):
                label = f"{code} = {option}" if with_codes else option
                lines.append(f"   {label}: {meaning}")
        else:
            lines.append(f"{number}. {question.name} (a level): {question.text}")
            for code, level in zip(codes_of(question), question.levels, strict=True):
                lines.append(f"   {code} = {level}")
    return "\n".join(lines)


def code_prompt(questions: Sequence[Question], state: Mapping[str, Any]) -> str:
    """The user message asking for one answer code per question."""
    example = " ".join(codes_of(q)[0] for q in questions)
    return (
        f"State:\n{_state_block(state)}\n\nQuestions:\n{_question_block(questions, with_codes=True)}\n\n"
        "Reply with only the answer codes, in question order, separated by single spaces: Y or N for a "
        "yes/no question, the option's letter for a choice, the level's digit for a level. "
        f"For example: {example}"
    )


def json_prompt(questions: Sequence[Question], state: Mapping[str, Any]) -> str:
    """The user message asking for a JSON object with a stated probability per question."""
    shape = {}
    for question in questions:
        if isinstance(question, BooleanQuestion):
            shape[question.name] = {"p": "<probability that the answer is yes, 0 to 1>"}
        elif isinstance(question, ChoiceQuestion):
            shape[question.name] = {
                "pick": "<one option>",
                "p": "<probability that the pick is right, 0 to 1>",
            }
        else:
            shape[question.name] = {"level": f"<0 to {len(question.levels) - 1}>"}
    return (
        f"State:\n{_state_block(state)}\n\nQuestions:\n{_question_block(questions, with_codes=False)}\n\n"
        f"Reply with one JSON object only, of this shape:\n{json.dumps(shape, indent=1)}\n"
        "Give calibrated probabilities: 0.5 when unsure, near 0 or 1 only when the text makes it clear."
    )


_LOGPROB_SLACK = 1e-6
"""Servers round: a near-certain token may come back as 1e-7 rather than 0."""


def _normalized(token: str) -> str:
    return token.strip().strip("`'\"*.,:;()[]").upper()


def _code_masses(top: Mapping[str, float], codes: Sequence[str]) -> dict[str, float]:
    aliases = {"YES": "Y", "NO": "N"} if codes == ["Y", "N"] else {}
    masses = dict.fromkeys(codes, 0.0)
    for token, logprob in top.items():
        code = _normalized(token)
        code = aliases.get(code, code)
        if code in masses and math.isfinite(logprob):
            masses[code] += math.exp(logprob)
    return masses


def _raw_from_masses(question: Question, masses: Mapping[str, float]) -> RawAnswer:
    total = sum(masses.values())
    probs = {code: mass / total for code, mass in masses.items()}
    if isinstance(question, BooleanQuestion):
        return RawAnswer(p=probs["Y"])
    if isinstance(question, ChoiceQuestion):
        return RawAnswer(
            probs={option: probs[code] for code, option in zip(codes_of(question), question.options, strict=True)}
        )
    return RawAnswer(level=sum(int(code) * p for code, p in probs.items()))


def parse_logprobs(questions: Sequence[Question], response: ModelResponse) -> dict[str, RawAnswer]:
    """Read each question's distribution off the top log probabilities of its code token, in order."""
    positions = list(response.top_logprobs or ())
    # A log probability above 0 (a probability above 1) is not a distribution: the endpoint is broken.
    if any(logprob > _LOGPROB_SLACK for top in positions for logprob in top.values()):
        raise TierFailure("invalid_response", "a token log probability above 0")
    answers: dict[str, RawAnswer] = {}
    cursor = 0
    for question in questions:
        codes = codes_of(question)
        while cursor < len(positions):
            top = positions[cursor]
            cursor += 1
            if not top:
                continue
            best = max(top, key=lambda token: top[token])
            masses = _code_masses({best: top[best]}, codes)
            if sum(masses.values()) > 0:
                answers[question.name] = _raw_from_masses(question, _code_masses(top, codes))
                break
        else:
            raise TierFailure("invalid_response", f"no answer code for {question.name!r} in {response.text[:80]!r}")
    return answers


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text``, tolerating prose and code fences around it."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _stated(value: Any, key: str) -> float | None:
    if isinstance(value, dict):
        value = value.get(key)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_verbalized(questions: Sequence[Question], text: str) -> dict[str, RawAnswer]:
    """Read the stated probabilities from a JSON reply (see :func:`json_prompt`)."""
    data = find_json_object(text)
    if data is None:
        raise TierFailure("invalid_response", f"no JSON object in the reply: {text[:80]!r}")
    answers: dict[str, RawAnswer] = {}
    for question in questions:
        value = data.get(question.name)
        if value is None:
            raise TierFailure("invalid_response", f"the reply does not answer {question.name!r}")
        if isinstance(question, BooleanQuestion):
            p = _stated(value, "p")
            if p is None:
                raise TierFailure("invalid_response", f"{question.name}: no probability in {value!r}")
            answers[question.name] = RawAnswer(p=p, verbalized=True)
        elif isinstance(question, ChoiceQuestion):
            answers[question.name] = RawAnswer(probs=_stated_choice(question, value), verbalized=True)
        else:
            level = _stated(value, "level")
            if level is None:
                raise TierFailure("invalid_response", f"{question.name}: no level in {value!r}")
            answers[question.name] = RawAnswer(level=level, verbalized=True)
    return answers


def _stated_choice(question: ChoiceQuestion, value: Any) -> dict[str, float]:
    if isinstance(value, dict) and isinstance(value.get("probs"), dict):
        return {str(option): float(p) for option, p in value["probs"].items() if isinstance(p, int | float)}
    pick = value.get("pick") if isinstance(value, dict) else value
    if pick not in question.options:
        raise TierFailure("invalid_response", f"{question.name}: {pick!r} is not one of its options")
    p = _stated(value, "p") if isinstance(value, dict) else None
    if p is None:
        raise TierFailure("invalid_response", f"{question.name}: no probability for the pick {pick!r}")
    others = [option for option in question.options if option != pick]
    return {pick: p} | dict.fromkeys(others, (1.0 - p) / len(others))


class LlmTier:
    """A chat model asked all of a gate's questions in one request."""

    untrusted: frozenset[str] = frozenset()

    def __init__(self, model: Model, *, id: str | None = None, timeout: float = DEFAULT_TIMEOUTS["llm"]) -> None:
        self.model = model
        self.id = id or f"llm:{model.name}"
        self.timeout = timeout
        provider, _, name = model.name.partition(":")
        self.reasoning = is_reasoning_model(provider, name)
        """Asked in JSON from the first call, with room to think, and told to think little."""
        known = provider in NO_LOGPROBS_PROVIDERS or self.reasoning
        self.logprobs: bool | None = False if known else None
        """Whether the endpoint gives token logprobs; unknown until the first reply, unless its API never does."""

    async def _request(self, prompt: str, settings: ModelSettings) -> ModelResponse:
        messages = [Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=prompt)]
        try:
            return await self.model.request(messages, None, settings)
        except ProviderError as e:
            raise TierFailure(e.kind, str(e)) from e
        except ModelAPIError as e:
            raise (status_failure(e.status, e.body or "") if e.status else TierFailure("unreachable", str(e))) from e
        except httpx.TimeoutException as e:
            raise TierFailure("timeout", str(e)) from e
        except httpx.TransportError as e:
            raise TierFailure("unreachable", str(e)) from e

    async def answer(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> TierResult:
        """Ask in codes with logprobs; if the endpoint gives none, ask again (and from then on) in JSON. A
        failure carries the tokens (and their cost) already spent, so the ledger counts what was paid for."""
        used = TokenUsage()
        refused = False
        try:
            if self.logprobs is not False:
                response = await self._ask_in_codes(questions, state)
                if response is not None:
                    used += response.usage
                    # Some servers answer a logprob request with the sampled tokens' logprobs and empty lists of
                    # alternatives: without alternatives there is no distribution to read, so that is no logprobs.
                    if response.top_logprobs and any(response.top_logprobs):
                        self.logprobs = True
                        return TierResult(answers=parse_logprobs(questions, response), tokens=used.total,
                                          cost_usd=used.cost_usd, meta={"mode": "logprobs"})
                    self.logprobs = False  # it answered without them: it does not give them
                else:
                    refused = True
            settings = ModelSettings(
                max_tokens=60 * len(questions) + 40 + (REASONING_ALLOWANCE if self.reasoning else 0),
                temperature=0.0, timeout=self.timeout, json_output=True,
                reasoning_effort="low" if self.reasoning else None,
            )
            response = await self._request(json_prompt(questions, state), settings)
            if refused:
                # Only a plain request that goes through shows the refusal was of logprobs, not of every request
                # (a model not yet pulled, a wrong URL, an over-long note: a 404 or 400 the next call may not get).
                self.logprobs = False
            used += response.usage
            return TierResult(answers=parse_verbalized(questions, response.text), tokens=used.total,
                              cost_usd=used.cost_usd, meta={"mode": "verbalized"})
        except TierFailure as e:
            e.tokens, e.cost_usd = used.total, used.cost_usd
            raise

    async def _ask_in_codes(self, questions: Sequence[Question], state: Mapping[str, Any]) -> ModelResponse | None:
        """The reply to the code prompt with logprobs asked for; None when the endpoint refuses logprob requests
        (400), which is learnt once."""
        settings = ModelSettings(
            max_tokens=2 * len(questions) + 4, temperature=0.0, timeout=self.timeout, top_logprobs=TOP_LOGPROBS
        )
        try:
            return await self._request(code_prompt(questions, state), settings)
        except TierFailure as e:
            if e.kind != "bad_request" or self.logprobs is not None:
                raise
            return None

    async def aclose(self) -> None:
        await self.model.aclose()
