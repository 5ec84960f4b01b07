"""``hive resume``: what a stopped run left behind, and whether it can go on.

A run stops for good only when it finishes. One whose coordinator was killed, that was interrupted, or that
failed on a full disk keeps everything it wrote: ``run.json``, the board, the gate ledger and every bee's
transcript. Resuming reads them back (this module, read-only) and the coordinator goes on with the same run
directory: the board is folded into the pipeline's state, ids continue past the highest written, bees that
reported keep their reports, and every other bee is started again on its own transcript, where it picks up
its conversation (:mod:`hive.bee.resume`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from hive.bee.transcript import spent as transcript_spent
from hive.board import fold
from hive.coordinator.options import StartOptions
from hive.coordinator.pipeline import inbox_item, verifier_angle
from hive.errors import StoreError, UsageError
from hive.providers.base import TokenUsage
from hive.records import (
    BOARD_ADAPTER,
    BoardRecord,
    Delivery,
    GateDecision,
    InboxItem,
    Note,
    RunInfo,
    TranscriptEntry,
    Utterance,
)
from hive.runs import RunPaths, effective_status, load_run_info
from hive.store import read_all


@dataclass(frozen=True)
class EarlierRun:
    """A stopped run as its files tell it."""

    paths: RunPaths
    info: RunInfo
    board: list[BoardRecord]
    gate_ids: list[str]
    answered: str | None
    """The note the ``answer`` gate had accepted (``--race``), if it had."""
    reports: dict[str, str]
    """The last report each bee handed in, by bee id."""
    utterances: dict[str, int]
    """By bee id: utterances the pipeline took in (one publish row each), counted from the ledger because
    ``run.json`` is rewritten only now and then."""
    unread: dict[str, list[InboxItem]]
    """By bee id: what was delivered to the bee but never reached its model (it was waiting in the bee's inbox
    when the run stopped). It is handed over again when the bee starts."""
    unjudged: dict[str, list[Utterance]]
    """By bee id: utterances the bee sent that the ledger has no publish decision for (the run stopped before
    the pipeline judged them). They are judged before the bees start again."""
    warnings: list[str]
    """Corrupt lines skipped while reading (a torn last line is normal after a kill and is not one)."""
    spent: dict[str, TokenUsage]
    """By bee id: what its model calls spent, from the ``usage`` line its transcript has for each call."""

    def restarted(self) -> list[str]:
        """The bees to start again: every one that did not hand in a full report."""
        return [b.id for b in self.info.bees if b.outcome != "reported"] + list(self.untracked_verifiers())

    def untracked_verifiers(self) -> dict[str, str]:
        """Verifier id → angle, for each verifier the board names on a still open dispute but ``run.json``
        does not: the run stopped (a full disk fails a new file before an append, or a kill) between writing
        the one and the other. The board is the truth: they are started too."""
        state = fold(self.board)
        known = {b.id for b in self.info.bees}
        untracked: dict[str, str] = {}
        for dispute in state.open_disputes():
            sides = [state.notes[n] for n in dispute.notes if n in state.notes]
            if dispute.verifier is not None and dispute.verifier not in known and len(sides) == 2:
                untracked[dispute.verifier] = verifier_angle(*sides)
        return untracked


def check_resumable(paths: RunPaths) -> RunInfo:
    """The run's ``run.json``, or a one-line :class:`UsageError` saying why it cannot be resumed."""
    info = load_run_info(paths)
    status = effective_status(info)
    if status == "running":
        raise UsageError(f"run {info.id} is still running (coordinator pid {info.pid}); stop it first")
    if status == "finished":
        raise UsageError(f"run {info.id} finished; there is nothing to resume")
    if not info.bees:
        raise UsageError(f"run {info.id} stopped before its bees were planned; start it again with 'hive start'")
    return info


def load_earlier(paths: RunPaths, info: RunInfo) -> EarlierRun:
    """The run's records, read back; a file that cannot be read is a one-line :class:`UsageError`."""
    try:
        return _load_earlier(paths, info)
    except StoreError as e:
        raise UsageError(f"cannot resume run {info.id}: {e}") from e


def _load_earlier(paths: RunPaths, info: RunInfo) -> EarlierRun:
    board, warnings = read_all(paths.board, BOARD_ADAPTER)
    decisions, gate_warnings = read_all(paths.gate, GateDecision)
    answered = next((d.note for d in decisions if d.gate == "answer" and d.outcome == "answered"), None)
    judged = {d.utterance for d in decisions if d.gate == "publish" and d.utterance}
    reports: dict[str, str] = {}
    unread: dict[str, list[InboxItem]] = {}
    unjudged: dict[str, list[Utterance]] = {}
    spent: dict[str, TokenUsage] = {}
    for bee in info.bees:
        entries, bee_warnings = read_all(paths.transcript(bee.id), TranscriptEntry)
        warnings += bee_warnings
        texts = [e.content for e in entries if e.event == "report" and e.content]
        if texts:
            reports[bee.id] = texts[-1]
        unread[bee.id] = unread_items(bee.id, board, entries)
        unjudged[bee.id] = unjudged_utterances(bee.id, entries, judged)
        spent[bee.id] = transcript_spent(entries) or TokenUsage()
    utterances = Counter(d.bee for d in decisions if d.gate == "publish" and d.bee)
    return EarlierRun(paths, info, board, [d.id for d in decisions], answered, reports, dict(utterances), unread,
                      unjudged, warnings + gate_warnings, spent)


def earlier_usage(recorded: TokenUsage, transcript: TokenUsage) -> TokenUsage:
    """What a bee spent before a resume. ``run.json`` is rewritten only now and then (a bee's end, a spawn), so a
    coordinator killed between two rewrites leaves it behind the transcript, where the bee writes every call's
    usage as it comes: the larger of the two is the true one."""
    return transcript if transcript.total > recorded.total else recorded


def unjudged_utterances(bee: str, entries: Sequence[TranscriptEntry], judged: Collection[str]) -> list[Utterance]:
    """The utterances ``bee``'s transcript says it sent (each is written down before it is sent) whose id
    ``judged`` (the publish rows' utterance ids) lacks, in the order they were said."""
    said = []
    for entry in entries:
        seq = (entry.data or {}).get("seq")
        if entry.event == "utterance" and entry.content and isinstance(seq, int) and seq > 0:
            said.append(Utterance(bee=bee, seq=seq, text=entry.content))
    return [u for u in said if u.uid not in judged]


def unread_items(bee: str, board: Sequence[BoardRecord], entries: Sequence[TranscriptEntry]) -> list[InboxItem]:
    """The deliveries to ``bee`` whose note its transcript never shows it took in (or dropped as stale), in
    board order."""
    seen = {note for e in entries if e.event == "notes"
            for key in ("delivered", "withheld") for note in (e.data or {}).get(key, [])}
    notes = {r.id: r for r in board if isinstance(r, Note)}
    return [inbox_item(r, notes) for r in board
            if isinstance(r, Delivery) and r.to == bee and r.note in notes and r.note not in seen]


def resume_options(info: RunInfo, runs_dir: Path, deadline: float | None) -> StartOptions:
    """The options the run was started with, from ``run.json``. The run's deadline counts afresh from the
    resume (the time the run spent stopped is unknown), unless ``deadline`` replaces it."""
    settings = info.settings
    return StartOptions(
        problem=info.problem,
        repo=Path(info.repo),
        model=info.model,
        bees=sum(b.id.startswith("bee-") for b in info.bees),
        angles=tuple(b.angle for b in info.bees if b.id.startswith("bee-")),
        judge=tuple(info.judge),
        gate_modes=dict(info.gate_modes),
        role=settings.get("role", "investigator"),
        time_limit=settings.get("time_limit", 600.0),
        deadline=deadline if deadline is not None else settings.get("deadline"),
        dispute_timeout=settings.get("dispute_timeout", 60.0),
        max_verifiers=settings.get("max_verifiers", 2),
        runs_dir=runs_dir,
        unsafe_bash=settings.get("unsafe_bash", False),
        delivery_cap=settings.get("delivery_cap", 10),
        grace=settings.get("grace", 90.0),
        stall_timeout=settings.get("stall_timeout", 300.0),
        max_steps=settings.get("max_steps"),
        race=settings.get("race", False),
    )
