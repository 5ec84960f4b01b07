"""The tier protocol: what every judge backend (``local``, ``llm:``, ``http:``, ``script:``) implements."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hive.judge.questions import Question


@dataclass(frozen=True)
class RawAnswer:
    """A tier's answer to one question, before the policy reads it.

    boolean: ``p`` is the probability of yes. choice: ``probs`` maps every option to a probability.
    score: ``level`` is a fractional level index. The engine validates these (NaN, out of range, options
    that do not add up to 1, unknown options) and treats an invalid answer as a tier failure.
    """

    p: float | None = None
    probs: Mapping[str, float] | None = None
    level: float | None = None
    verbalized: bool = False


@dataclass(frozen=True)
class TierResult:
    answers: Mapping[str, RawAnswer]
    """question name → answer. A question the tier abstains on is simply missing."""
    tokens: int = 0
    cost_usd: float | None = None
    """What the tokens cost, where the tier's model has a known price."""
    meta: Mapping[str, Any] = field(default_factory=dict)


class TierFailure(Exception):
    """A tier could not answer. ``kind`` becomes the ledger reason ``error:<kind>``.

    Kinds: timeout, unreachable, auth, rate_limited, server, bad_request, invalid_response, unexpected.
    """

    def __init__(self, kind: str, detail: str = "", tokens: int = 0) -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail
        self.tokens = tokens
        """Tokens spent before it failed (a request answered, then its answer was unusable): still paid for."""
        self.cost_usd: float | None = None
        """What those tokens cost, where known."""


class Tier(Protocol):
    id: str
    """As written in ``--judge``, e.g. ``local`` or ``llm:openai:gpt-4.1-mini``."""
    untrusted: frozenset[str]
    """Capabilities (``classify``, ``relate``, ``rate``, ``meta``) or question names (e.g. ``relation``) this
    tier must not be asked about; the cascade sends those questions to the next tier."""
    timeout: float

    async def answer(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> TierResult:
        """Answer ``questions`` about ``state`` for ``gate``; raise :class:`TierFailure` when it cannot."""
        ...

    async def aclose(self) -> None: ...


def trusts(tier: Tier, question: Question) -> bool:
    """Whether ``tier`` may be asked ``question``: neither its capability nor its name is untrusted."""
    return question.capability not in tier.untrusted and question.name not in tier.untrusted


_RENDERED_NOTE = re.compile(r"^(?P<bee>[^\n()]{1,80}?) \((?P<kind>[a-z_]+)\): (?P<text>.*)$", re.DOTALL)


def note_text(rendered: str) -> str:
    """The verbatim note inside a relate state's ``"<bee> (<kind>): <text>"`` (how the gate shows a note with
    its bee and kind): the text a tier reads, embeds or matches as the note's own words."""
    match = _RENDERED_NOTE.match(rendered)
    return match.group("text") if match else rendered
