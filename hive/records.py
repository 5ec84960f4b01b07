"""Every record that crosses a file or process boundary, as pydantic models.

Files of a run directory (see docs/formats.md for the full description):

- ``run.json``                     one :class:`RunInfo`
- ``board.jsonl``                  :data:`BoardRecord` lines (notes, relations, disputes, ...)
- ``gate.jsonl``                   :class:`GateDecision` lines, one per gate decision, judged or by rule
- ``bees/<bee>/transcript.jsonl``  :class:`TranscriptEntry` lines, written by the bee itself
- ``bees/<bee>/brief.json``        one :class:`BeeBrief`, the bee's start-up instructions

The coordinator and a bee speak JSON lines over the bee's stdin/stdout: :data:`BeeMessage` upward and
:data:`CoordinatorMessage` downward (protocol version :data:`PROTOCOL_VERSION`).

Records are never rewritten: a state change is a new line. Unknown extra fields are kept on read
(``extra="allow"``) so that newer writers do not break older readers.
"""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

# The vocabulary lives in hive.kinds (no heavy imports) and is re-exported here with the records using it.
from hive.kinds import (
    ANSWER_GATE as ANSWER_GATE,
)
from hive.kinds import (
    GATES as GATES,
)
from hive.kinds import (
    JUDGED_GATES as JUDGED_GATES,
)
from hive.kinds import (
    NOTE_KINDS as NOTE_KINDS,
)
from hive.kinds import (
    BeeOutcome as BeeOutcome,
)
from hive.kinds import (
    DecisionSource as DecisionSource,
)
from hive.kinds import (
    GateMode as GateMode,
)
from hive.kinds import (
    NoteKind as NoteKind,
)
from hive.kinds import (
    RelationKind as RelationKind,
)
from hive.kinds import (
    RunStatus as RunStatus,
)

PROTOCOL_VERSION = 1



def now_iso() -> str:
    """The current time as ISO 8601 UTC with milliseconds, e.g. ``2026-11-30T03:04:05.123Z``."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(at: str) -> _dt.datetime:
    """Parse a timestamp written by :func:`now_iso` (or any ISO 8601 form; one without a zone is UTC).

    Always timezone-aware, so that any two parsed timestamps can be compared and subtracted.
    """
    parsed = _dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=_dt.UTC)


def _iso_time(value: str) -> str:
    try:
        parse_iso(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 time such as 2026-11-30T03:04:05.123Z") from None
    return value


IsoTime = Annotated[str, AfterValidator(_iso_time), Field(json_schema_extra={"format": "date-time"})]
"""A time as :func:`now_iso` writes it (any ISO 8601 form is read; one without a zone is UTC)."""
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


# Schemas are built on first use, not at import: `hive --help` and a bee's start-up never pay for
# validators they do not run.
_DEFERRED = ConfigDict(defer_build=True)


class Record(BaseModel):
    """Base of all records: tolerant of unknown fields, immutable once built.

    NaN and infinity are refused when a record is built: JSON has no such numbers (orjson would write
    ``null``), so the line could not be read back.
    """

    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False, defer_build=True)


# --------------------------------------------------------------------------- run.json


class BeeInfo(Record):
    id: str
    """``bee-1`` … ``bee-N`` in angle order; verifiers are ``verify-1``, ``verify-2``, …"""
    angle: str
    role: str = "investigator"
    model: str = ""
    outcome: BeeOutcome | None = None
    reason: str | None = None


class CoordinatorUsage(Record):
    """The coordinator's own model calls (planning the angles, writing the answer), over the run and its resumes."""

    model: str = ""
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


class RunInfo(Record):
    """``run.json``: what was asked, with what, and how it ended. Rewritten atomically as the run goes."""

    id: str
    problem: str
    repo: str
    repo_head: str | None = None
    bees: list[BeeInfo] = Field(default_factory=list)
    model: str = ""
    judge: list[str] = Field(default_factory=list)
    gate_modes: dict[str, GateMode] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    started_at: str = Field(default_factory=now_iso)
    resumed_at: list[str] | None = None
    """When ``hive resume`` took the run up again, once per resume; absent for a run never resumed."""
    ended_at: str | None = None
    status: RunStatus = "running"
    exit_reason: str | None = None
    pid: int | None = None
    """The coordinator's process id, so a reader can tell a crashed run from a running one."""
    host: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    coordinator: CoordinatorUsage | None = None
    """Absent until the coordinator calls a model (not for a run with ``--angle`` given and no answer yet)."""


# --------------------------------------------------------------------------- board.jsonl


class Note(Record):
    """A published note: the bee's words verbatim, with the kind the judge (or rule) gave it."""

    type: Literal["note"] = "note"
    id: str
    bee: str
    kind: NoteKind
    text: str
    score: Probability
    at: IsoTime = Field(default_factory=now_iso)
    utterance: str | None = None
    """Id of the utterance this note was published from (``<bee>#<seq>``)."""
    decision: str | None = None
    """Id of the publish decision in ``gate.jsonl``."""


class Relation(Record):
    """What a later note says about an earlier one, as the relate gate (or a rule) decided."""

    type: Literal["relation"] = "relation"
    later: str
    earlier: str
    relation: RelationKind
    score: Probability
    at: IsoTime = Field(default_factory=now_iso)
    same_bee: bool = False
    decision: str | None = None


class Dispute(Record):
    """Two notes from different bees that contradict each other. Both stay on the board."""

    type: Literal["dispute"] = "dispute"
    id: str
    notes: tuple[str, str]
    """(earlier, later) note ids."""
    at: IsoTime = Field(default_factory=now_iso)
    """The contradicting relation's own timestamp: the dispute clock starts here."""


class Resolution(Record):
    """A dispute ended: one side was superseded (never by the judge picking a winner)."""

    type: Literal["resolution"] = "resolution"
    dispute: str
    superseded: str
    by: str
    """The note that superseded one side."""
    at: IsoTime = Field(default_factory=now_iso)


class Delivery(Record):
    """A note handed to a bee's inbox. ``how`` says why it was sent."""

    type: Literal["delivery"] = "delivery"
    note: str
    to: str
    how: Literal["judge", "rule", "correction", "conflict"]
    at: IsoTime = Field(default_factory=now_iso)
    replaces: str | None = None
    """For a correction, the note that no longer stands."""


class Verifier(Record):
    """A verifier bee spawned on an unsettled dispute."""

    type: Literal["verifier"] = "verifier"
    bee: str
    dispute: str
    notes: tuple[str, str]
    at: IsoTime = Field(default_factory=now_iso)


BoardRecord = Annotated[
    Note | Relation | Dispute | Resolution | Delivery | Verifier,
    Field(discriminator="type"),
]
BOARD_ADAPTER: TypeAdapter[BoardRecord] = TypeAdapter(BoardRecord, config=_DEFERRED)


# --------------------------------------------------------------------------- gate.jsonl


class Answer(Record):
    """A typed answer with its probability, as one tier gave it."""

    question: str
    type: Literal["boolean", "choice", "score"]
    p: float | None = None
    """boolean: probability of yes. choice: probability of the picked option."""
    probs: dict[str, float] | None = None
    """choice: probability of each option."""
    pick: str | None = None
    """choice: the most probable option."""
    level: float | None = None
    """score: the (fractional) level index."""
    zone: Literal["yes", "no", "unsure", "picked", "escape"] | None = None
    tier: str | None = None
    """The tier whose answer was kept; ``untrusted`` when no tier may answer, ``none`` when all failed."""
    verbalized: bool = False
    """True when the probability was stated by an LLM in words, not read off token logprobs."""


class TierCall(Record):
    """One tier's part in one decision."""

    tier: str
    asked: list[str] = Field(default_factory=list)
    kept: list[str] = Field(default_factory=list)
    latency_ms: float = 0.0
    tokens: int = 0
    cost_usd: float | None = None
    """What its tokens cost, where the tier's model has a known price (absent otherwise)."""
    error: str | None = None


class GateDecision(Record):
    """One line of ``gate.jsonl``: one decision of a gate, by the judge or by a rule.

    ``gate`` is ``publish``, ``deliver`` or ``relate`` for judged gates (and ``answer``, the early stop of
    ``hive start --race``, outcome ``answered`` or ``continue``), and names the rule otherwise:
    ``correct``, ``conflict``, ``withheld``, ``verify``. Duplicate drops are ``publish`` decisions with
    outcome ``duplicate`` and source ``rule``; over-cap deliveries are ``deliver`` decisions with
    outcome ``capped``.
    """

    always_written: ClassVar[frozenset[str]] = frozenset({"reason", "version", "mode", "verdict", "state_digest"})
    """Written as ``null`` when they do not apply, so that every row has the ledger's full set of fields."""

    id: str
    gate: str
    at: IsoTime = Field(default_factory=now_iso)
    outcome: str
    source: DecisionSource
    reason: str | None = None
    version: int | None = None
    mode: GateMode | None = None
    verdict: str | None = None
    """What the judge's answers meant, also when they were not used (shadow, below a bar)."""
    bee: str | None = None
    utterance: str | None = None
    note: str | None = None
    to: str | None = None
    later: str | None = None
    earlier: str | None = None
    dispute: str | None = None
    kind: str | None = None
    score: Probability | None = None
    text: str | None = None
    """For publish: the candidate's full text, so nothing withheld is lost."""
    answers: dict[str, Answer] = Field(default_factory=dict)
    tiers: list[TierCall] = Field(default_factory=list)
    latency_ms: float = 0.0
    tokens: int = 0
    cost_usd: float | None = None
    """What the judge's tokens cost, where a tier's model has a known price (absent otherwise)."""
    state_digest: str | None = None


GATE_ADAPTER: TypeAdapter[GateDecision] = TypeAdapter(GateDecision)


# --------------------------------------------------------------------------- bee files


class BeeBrief(Record):
    """``bees/<bee>/brief.json``: everything a bee process needs to start."""

    bee: str
    problem: str
    angle: str
    others: dict[str, str] = Field(default_factory=dict)
    """The other bees' angles, so this one does not repeat them."""
    repo: str
    run_dir: str
    role: str = "investigator"
    model: str
    time_limit: float = 600.0
    max_steps: int = 40
    token_budget: int | None = None
    context_tokens: int = Field(default=100_000, ge=1_000)
    """The conversation is kept under about this many tokens by eliding the oldest tool results (see
    :mod:`hive.bee.context`); a model that refuses a longer prompt makes it shorter still."""
    grace: float = 90.0
    unsafe_bash: bool = False
    checkpoint_every: int = 4
    resume: bool = False
    """Pick up the conversation of this bee's earlier run from its transcript (``hive resume``)."""


class TranscriptEntry(Record):
    """One line of a bee's transcript: a message to or from its model, or a tool call and result."""

    at: IsoTime = Field(default_factory=now_iso)
    event: Literal[
        "message", "reply", "tool_call", "tool_result", "notes", "usage", "error", "report", "utterance", "elided"
    ]
    role: str | None = None
    content: str | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    call_id: str | None = None
    data: dict[str, Any] | None = None


# --------------------------------------------------------------------------- bee <-> coordinator


class Ready(Record):
    type: Literal["ready"] = "ready"
    bee: str
    pid: int
    protocol: int = PROTOCOL_VERSION
    at: IsoTime = Field(default_factory=now_iso)


class Utterance(Record):
    """A piece of the bee's own prose (≥ 40 characters): a publish candidate."""

    type: Literal["utterance"] = "utterance"
    bee: str
    seq: int
    text: str
    at: IsoTime = Field(default_factory=now_iso)

    @property
    def uid(self) -> str:
        return f"{self.bee}#{self.seq}"


class Activity(Record):
    """One line per tool call (and per context elision, without a ``tool``), written by rules, for people
    watching."""

    type: Literal["activity"] = "activity"
    bee: str
    text: str
    tool: str | None = None
    step: int = 0
    at: IsoTime = Field(default_factory=now_iso)


class Usage(Record):
    type: Literal["usage"] = "usage"
    bee: str
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    at: IsoTime = Field(default_factory=now_iso)


class Received(Record):
    """The bee put these notes into its context (``delivered``) or dropped stale copies (``withheld``)."""

    type: Literal["received"] = "received"
    bee: str
    delivered: list[str] = Field(default_factory=list)
    withheld: list[str] = Field(default_factory=list)
    at: IsoTime = Field(default_factory=now_iso)


class Report(Record):
    """The bee's final report and outcome."""

    type: Literal["report"] = "report"
    bee: str
    text: str
    outcome: BeeOutcome
    reason: str | None = None
    at: IsoTime = Field(default_factory=now_iso)


BeeMessage = Annotated[Ready | Utterance | Activity | Usage | Received | Report, Field(discriminator="type")]
BEE_MESSAGE_ADAPTER: TypeAdapter[BeeMessage] = TypeAdapter(BeeMessage, config=_DEFERRED)


class InboxItem(Record):
    """One item for a bee's inbox. The bee renders it as one line under the notes header."""

    kind: Literal["note", "correction", "conflict"]
    note: str
    """The note being delivered (for a correction: the later note; for a conflict: the later side)."""
    bee: str
    """Who posted ``note``."""
    note_kind: NoteKind
    text: str
    replaces: str | None = None
    """correction: the earlier note id; conflict: the other side's note id."""
    other_bee: str | None = None
    other_text: str | None = None


class Notes(Record):
    type: Literal["notes"] = "notes"
    items: list[InboxItem]


class WrapUp(Record):
    type: Literal["wrap_up"] = "wrap_up"
    reason: str


class Stop(Record):
    type: Literal["stop"] = "stop"


CoordinatorMessage = Annotated[Notes | WrapUp | Stop, Field(discriminator="type")]
COORDINATOR_MESSAGE_ADAPTER: TypeAdapter[CoordinatorMessage] = TypeAdapter(CoordinatorMessage, config=_DEFERRED)


SCHEMAS: dict[str, Any] = {
    "run.json": RunInfo,
    "board.jsonl": BOARD_ADAPTER,
    "gate.jsonl": GateDecision,
    "transcript.jsonl": TranscriptEntry,
    "brief.json": BeeBrief,
    "bee-to-coordinator": BEE_MESSAGE_ADAPTER,
    "coordinator-to-bee": COORDINATOR_MESSAGE_ADAPTER,
}
"""What ``hive schema`` prints: file or channel name → model or adapter."""


def json_schema(name: str) -> dict[str, Any]:
    target = SCHEMAS[name]
    if isinstance(target, TypeAdapter):
        return target.json_schema()
    schema: dict[str, Any] = target.model_json_schema()
    return schema
