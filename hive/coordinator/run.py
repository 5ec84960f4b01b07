"""One hive run, from ``run.json`` to ``answer.md``.

The coordinator is one asyncio process: it plans angles, spawns the bees, feeds their utterances to the
gate pipeline, watches budgets, the deadline, silent bees and disputes, and writes the answer. Every task
runs inside one TaskGroup; every bee process is reaped before :meth:`Coordinator.run` returns, and every
bee dies with the coordinator anyway (process group plus parent-death signal).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import platform
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from hive import __version__
from hive.board import DisputeState, fold
from hive.coordinator.answer import (
    ANSWER_TIMEOUT,
    PLANNING_TIMEOUT,
    BeeReport,
    compose_answer,
    digest,
    fallback_angles,
    plan_angles,
    synthesize,
)
from hive.coordinator.options import StartOptions
from hive.coordinator.pipeline import Pipeline, PipelineStats, verifier_angle
from hive.coordinator.process import BeeProcess
from hive.coordinator.resume import EarlierRun, earlier_usage
from hive.errors import HiveError, RunFailed, StoreError
from hive.gates import Gates, highest_number, sequential_ids
from hive.judge.base import Tier
from hive.judge.engine import Judge
from hive.judge.tiers import build_tiers
from hive.providers.base import Metered, TokenUsage
from hive.providers.registry import infer_model, model_timeout
from hive.records import (
    BeeBrief,
    BeeInfo,
    BeeOutcome,
    CoordinatorUsage,
    InboxItem,
    Notes,
    Ready,
    Received,
    Report,
    RunInfo,
    RunStatus,
    Stop,
    Usage,
    Utterance,
    WrapUp,
    now_iso,
    parse_iso,
)
from hive.roles import load_role
from hive.runs import RunPaths, new_run_id
from hive.secrets import Scrubber, secret_values
from hive.store import JsonlWriter, write_json_atomic, write_text_atomic
from hive.wording import plural

T = TypeVar("T")

TICK = 0.1
INTERRUPT_GRACE = 15.0
_STOP_REASONS = {"interrupted": "interrupted by the user", "deadline": "the run's deadline passed"}


@dataclass
class BeeRun:
    id: str
    angle: str
    role: str
    model: str
    proc: BeeProcess | None = None
    outcome: BeeOutcome | None = None
    reason: str | None = None
    report: str = ""
    utterances: list[str] = field(default_factory=list)
    utterances_before: int = 0
    """Utterances of this bee's runs before a resume."""
    resume: bool = False
    """Started again by ``hive resume``: the bee picks up its conversation from its transcript."""
    unread: list[InboxItem] = field(default_factory=list)
    """Delivered before the stop but never read: handed over again as soon as the bee starts."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    started: float = field(default_factory=time.monotonic)
    last_seen: float = field(default_factory=time.monotonic)
    wrap_sent: float | None = None
    kill_reason: str | None = None

    def info(self) -> BeeInfo:
        return BeeInfo(id=self.id, angle=self.angle, role=self.role, model=self.model, outcome=self.outcome,
                       reason=self.reason, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                       cost_usd=self.cost_usd, utterances=self.utterances_before + len(self.utterances))

    def partial_report(self) -> str:
        return "\n\n".join(self.utterances[-6:])


@dataclass
class RunResult:
    info: RunInfo
    paths: RunPaths
    answer: str
    stats: PipelineStats

    @property
    def exit_code(self) -> int:
        return {"finished": 0, "interrupted": 130}.get(self.info.status, 1)


class Coordinator:
    """Runs one hive. Given ``earlier`` (a stopped run, see :mod:`hive.coordinator.resume`), it goes on with
    that run in its own directory instead of starting a new one."""

    def __init__(self, opts: StartOptions, *, view: Any = None, tiers: list[Tier] | None = None,
                 on_created: Callable[[RunPaths], None] | None = None, earlier: EarlierRun | None = None) -> None:
        # A key pasted into the problem, or repeated by a model in an angle or the answer, reaches no file.
        self._scrub = Scrubber(secret_values())
        self.opts = opts = replace(opts, problem=self._scrub.text(opts.problem),
                                   angles=tuple(self._scrub.text(a) for a in opts.angles))
        self._given_tiers = tiers
        self.view = view
        self.on_created = on_created
        self.earlier = earlier
        self.paths = earlier.paths if earlier else RunPaths(opts.runs_dir / new_run_id())
        self.bees: dict[str, BeeRun] = {}
        self.stopping: str | None = None
        self.status: RunStatus = "running"
        self.exit_reason: str | None = None
        self.verifiers = 0
        self.started_at = now_iso()
        self.deadline = time.monotonic() + opts.deadline if opts.deadline else None
        self.angle_source = "user" if opts.angles else "model"
        self.answer_source = "model"
        self._kill_at: float | None = None
        self._tasks: asyncio.TaskGroup | None = None
        self._interrupts = 0
        self._told_waiting = False
        """Whether the view was told that the run waits for a dispute's verifier after every bee has ended."""
        self._model_task: asyncio.Future[Any] | None = None
        """The planning or answer call while it runs: Ctrl-C cuts it short (:meth:`_model_call`)."""
        self._active = 0
        """Bee tasks still running, their pipeline workers included."""
        self._repo_head = git_head(opts.repo)
        self.resumed_at: list[str] = []
        self.own_usage: CoordinatorUsage | None = None
        """What the coordinator's own model calls (planning, the answer) spent, resumes included."""
        if earlier is not None:
            self._take_up(earlier)

    def _take_up(self, earlier: EarlierRun) -> None:
        """Bees, counters and sources of a stopped run: reported bees keep their reports, the rest start again."""
        info = earlier.info
        self.started_at = info.started_at
        self._repo_head = info.repo_head  # what the earlier findings were made on; the CLI warns if HEAD moved
        self.resumed_at = [*(info.resumed_at or ()), now_iso()]
        self.angle_source = info.settings.get("angles_from", self.angle_source)
        self.own_usage = info.coordinator
        self.verifiers = sum(b.id.startswith("verify-") for b in info.bees)
        restarted = set(earlier.restarted())
        for b in info.bees:
            extra = b.model_extra or {}
            said = max(int(extra.get("utterances", 0)), earlier.utterances.get(b.id, 0))
            recorded = TokenUsage(int(extra.get("input_tokens", 0)), int(extra.get("output_tokens", 0)),
                                  extra.get("cost_usd"))
            used = earlier_usage(recorded, earlier.spent.get(b.id, TokenUsage()))
            bee = BeeRun(b.id, b.angle, b.role, b.model, utterances_before=said, input_tokens=used.input_tokens,
                         output_tokens=used.output_tokens, cost_usd=used.cost_usd)
            if b.id in restarted:
                bee.resume, bee.unread = True, earlier.unread.get(b.id, [])
            else:
                bee.outcome, bee.reason, bee.report = b.outcome, b.reason, earlier.reports.get(b.id, "")
            self.bees[b.id] = bee
        # Verifiers the board names but run.json does not (see untracked_verifiers): their ids are taken, and
        # those whose dispute is still open start (on their transcript, if they got as far as writing one).
        verifiers = {d.verifier for d in fold(earlier.board).disputes.values() if d.verifier is not None}
        self.verifiers = max(self.verifiers, highest_number(verifiers, "verify-"))
        role = load_role("verifier", cwd=self.opts.repo)
        for bee_id, angle in earlier.untracked_verifiers().items():
            self.bees[bee_id] = BeeRun(bee_id, angle, role.name, role.model or self.opts.model, resume=True)

    # ------------------------------------------------------------------ view and records

    def _say(self, text: str) -> None:
        if self.view is not None:
            self.view.message(text)

    def _observe(self, event: Any) -> None:
        if self.view is not None:
            self.view.on_event(event)

    def _run_info(self) -> RunInfo:
        return RunInfo(
            id=self.paths.id,
            problem=self.opts.problem,
            repo=str(self.opts.repo),
            repo_head=self._repo_head,
            bees=[b.info() for b in self.bees.values()],
            model=self.opts.model,
            judge=list(self.opts.judge),
            gate_modes={g: self.opts.gate_modes.get(g, "active") for g in ("publish", "deliver", "relate")},
            versions={"hive": __version__, "python": platform.python_version()},
            started_at=self.started_at,
            resumed_at=self.resumed_at or None,
            ended_at=None if self.status == "running" else now_iso(),
            status=self.status,
            exit_reason=self.exit_reason,
            pid=os.getpid(),
            host=socket.gethostname(),
            settings={
                "role": self.opts.role, "time_limit": self.opts.time_limit, "deadline": self.opts.deadline,
                "dispute_timeout": self.opts.dispute_timeout, "max_verifiers": self.opts.max_verifiers,
                "delivery_cap": self.opts.delivery_cap, "grace": self.opts.grace,
                "unsafe_bash": self.opts.unsafe_bash, "race": self.opts.race, "angles_from": self.angle_source,
                "answer_from": self.answer_source, "stall_timeout": self.opts.stall_timeout,
                "max_steps": self.opts.max_steps,
            },
            coordinator=self.own_usage,
        )

    def _save(self) -> None:
        write_json_atomic(self.paths.run_json, self._run_info())

    # ------------------------------------------------------------------ the run

    async def run(self) -> RunResult:
        if self.earlier is None:
            self._make_run_dir()
        try:
            self._save()
        except StoreError:
            if self.earlier is None:  # an empty directory would only be listed as an unreadable run
                with contextlib.suppress(OSError):
                    self.paths.dir.rmdir()
            raise
        if self.on_created is not None:
            self.on_created(self.paths)
        board = JsonlWriter(self.paths.board)
        gate_log = JsonlWriter(self.paths.gate)
        tiers = self._given_tiers if self._given_tiers is not None else build_tiers(list(self.opts.judge))
        judge = Judge(tiers)
        similarity = next((t.similarity for t in tiers if hasattr(t, "similarity")), None)
        gate_ids = sequential_ids(self.earlier.gate_ids if self.earlier else ())
        gates = Gates(judge, goal=self.opts.problem, modes=dict(self.opts.gate_modes), new_id=gate_ids)
        pipeline = Pipeline(gates, board, gate_log, self._send, delivery_cap=self.opts.delivery_cap,
                            similarity=similarity, observe=self._observe, race=self.opts.race)
        self.pipeline = pipeline
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._on_signal)
        try:
            if self.earlier is None:
                angles = await self._angles()
                investigator = load_role(self.opts.role, cwd=self.opts.repo)
                for i, angle in enumerate(angles, 1):
                    self.bees[f"bee-{i}"] = BeeRun(f"bee-{i}", angle, investigator.name,
                                                   investigator.model or self.opts.model)
                self._save()
            for bee in self.bees.values():
                pipeline.add_bee(bee.id, bee.angle).live = bee.outcome is None
            if self.earlier is not None:
                pipeline.restore(self.earlier.board, answered=self.earlier.answered,
                                 decisions=len(self.earlier.gate_ids), utterances=sum(self.earlier.utterances.values()))
                for bee in self.bees.values():
                    if bee.resume:
                        bee.unread += pipeline.catch_up(bee.id, self.earlier.board)
                await self._judge_unjudged(pipeline, self.earlier)
            async with asyncio.TaskGroup() as tg:
                self._tasks = tg
                # The local model loads while the bees start, so that the first decision does not wait for it; with
                # every gate off and no race nothing asks the judge, and the load would cost ~250 MB and 0.7 s of CPU.
                if self.opts.race or any(mode != "off" for mode in gates.modes.values()):
                    tg.create_task(judge.load())
                for bee in list(self.bees.values()):
                    if bee.outcome is None:
                        tg.create_task(self._bee_task(bee))
                tg.create_task(self._supervise())
        except* StoreError as group:
            self.status, self.exit_reason = "failed", str(group.exceptions[0])
        finally:
            await self._reap_all()
            await judge.aclose()
            board.close()
            gate_log.close()
        try:
            # Ctrl-C stays the coordinator's while the answer is written: it cuts the synthesis short.
            return await self._end(pipeline)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    def _make_run_dir(self) -> None:
        """A new run directory. Two runs started in the same second share a timestamp, and may, rarely, draw
        the same suffix: the later one draws again."""
        for _ in range(5):
            try:
                self.paths.dir.mkdir(parents=True, exist_ok=False)
                return
            except FileExistsError:
                self.paths = RunPaths(self.opts.runs_dir / new_run_id())
            except OSError as e:
                raise StoreError(f"cannot make the run directory {self.paths.dir}: {e.strerror}") from e
        raise StoreError(f"cannot make a new run directory in {self.opts.runs_dir}: every name drawn was taken")

    async def _end(self, pipeline: Pipeline) -> RunResult:
        """The answer and the run's final status, once every bee has ended."""
        answer = ""
        if self.status != "failed":
            try:
                answer = await self._answer()
            except StoreError as e:
                self.status, self.exit_reason = "failed", f"{e}; 'hive resume {self.paths.id}' writes it again"
        if self.status == "failed":
            with contextlib.suppress(StoreError):
                self._save()
            raise RunFailed(f"run {self.paths.id} stopped: {self.exit_reason}")
        if self.stopping == "interrupted":
            self.status, self.exit_reason = "interrupted", "interrupted by the user"
        elif not any(handed_in(b.outcome, b.report) for b in self.bees.values()):
            # The answer is written all the same (a digest of partial reports), but nobody investigated to the
            # end: a missing key or a dead provider must not read as success.
            self.status, self.exit_reason = "failed", "no bee reported: " + ", ".join(
                f"{b.id} {b.outcome or 'crashed'}{' (no report)' if b.outcome in _HANDED_IN else ''}"
                for b in self.bees.values()
            )
        else:
            self.status = "finished"
            self.exit_reason = self.exit_reason or ended_reason([b.outcome for b in self.bees.values()])
        self._save()
        return RunResult(self._run_info(), self.paths, answer, pipeline.stats)

    async def _angles(self) -> list[str]:
        n = self.opts.bees
        if self.opts.angles:
            return list(self.opts.angles)
        self._say(f"planning {n} angles with {self.opts.model}")
        try:
            model = Metered(infer_model(self.opts.model, agent="planner"))
            try:
                timeout = model_timeout() or PLANNING_TIMEOUT
                planned = await self._model_call(plan_angles(model, self.opts.problem, n, timeout))
                return [self._scrub.text(a) for a in planned]
            finally:
                self._spent(model)
                await model.aclose()
        except Exception as e:  # planning is best effort: any failure falls back to generic angles
            self.angle_source = "fallback"
            how = "was interrupted" if isinstance(e, CutShort) else f"failed ({_short(e)})"
            self._say(f"angle planning {how}; using generic angles")
            role = load_role(self.opts.role, cwd=self.opts.repo)
            return fallback_angles(n, getattr(role, "angles", None) or ())

    def _spent(self, model: Metered) -> None:
        """Count what one of the coordinator's own models spent, in ``run.json`` and in the live view."""
        if model.calls == 0:
            return
        self.own_usage = add_usage(self.own_usage, model)
        if self.view is not None:
            self.view.spent(model.usage.input_tokens + model.usage.output_tokens, model.usage.cost_usd)

    async def _model_call(self, call: Coroutine[Any, Any, T]) -> T:
        """Await the coordinator's own model call (planning, the answer) so that Ctrl-C cuts it short at once,
        raising :class:`CutShort`, instead of waiting for a slow or hung provider."""
        task = asyncio.ensure_future(call)
        self._model_task = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and not (current is not None and current.cancelling()):
                raise CutShort("interrupted by the user") from None
            raise  # the coordinator itself is being cancelled
        finally:
            self._model_task = None

    # ------------------------------------------------------------------ bees

    def _brief(self, bee: BeeRun) -> Path:
        others = {b.id: b.angle for b in self.bees.values() if b.id != bee.id and b.id.startswith("bee-")}
        try:
            context_tokens = load_role(bee.role, cwd=self.opts.repo).context_tokens
        except HiveError:  # checked at the start; a role file broken since keeps the default, not the run down
            context_tokens = None
        brief = BeeBrief(
            bee=bee.id, problem=self.opts.problem, angle=bee.angle, others=others, repo=str(self.opts.repo),
            run_dir=str(self.paths.dir), role=bee.role, model=bee.model, time_limit=self.opts.time_limit,
            max_steps=self.opts.max_steps or 40, grace=self.opts.grace, unsafe_bash=self.opts.unsafe_bash,
            resume=bee.resume, **({"context_tokens": context_tokens} if context_tokens else {}),
        )
        path = self.paths.brief(bee.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, brief)
        return path

    async def _bee_task(self, bee: BeeRun) -> None:
        self._active += 1
        try:
            await self._run_bee(bee)
        finally:
            self._active -= 1

    async def _run_bee(self, bee: BeeRun) -> None:
        """Start the bee, feed its messages to the pipeline, give it an outcome, and drain its utterances."""
        assert self._tasks is not None
        worker = self._tasks.create_task(self.pipeline.worker(bee.id))
        if self.stopping is not None:
            self._finish(bee, "cut_short", f"not started ({self.stopping})", "")
            self.pipeline.bee_done(bee.id)
            await worker
            return
        try:
            bee.proc = await BeeProcess.spawn(bee.id, self._brief(bee), dict(os.environ))
        except OSError as e:
            self._finish(bee, "crashed", f"could not start: {e.strerror}", "")
            self.pipeline.bee_done(bee.id)
            await worker
            return
        bee.started = bee.last_seen = time.monotonic()
        if self.view is not None:
            self.view.bee_started(bee.info())
        if bee.unread:
            await bee.proc.send(Notes(items=bee.unread))
        async for message in bee.proc.messages():
            bee.last_seen = time.monotonic()
            self._observe(message)
            match message:
                case Utterance():
                    bee.utterances.append(message.text)
                    self.pipeline.submit(message)
                case Usage():
                    bee.input_tokens += message.input_tokens
                    bee.output_tokens += message.output_tokens
                    if message.cost_usd is not None:
                        bee.cost_usd = (bee.cost_usd or 0.0) + message.cost_usd
                case Received():
                    self.pipeline.received(message)
                case Report():
                    bee.report, bee.outcome, bee.reason = message.text, message.outcome, message.reason
                    break
                case Ready():
                    pass
        self.pipeline.stop_delivering(bee.id)
        code = await bee.proc.terminate(grace=5.0)
        if bee.outcome is None:
            if bee.kill_reason:
                self._finish(bee, "cut_short", bee.kill_reason, _cut(bee.kill_reason, bee.partial_report()))
            else:
                how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
                self._finish(bee, "crashed", f"{how} without a report", _cut(how, bee.partial_report()))
        else:
            self._finish(bee, bee.outcome, bee.reason, bee.report)
        self.pipeline.bee_done(bee.id)
        await worker

    def _finish(self, bee: BeeRun, outcome: BeeOutcome, reason: str | None, report: str) -> None:
        bee.outcome, bee.reason, bee.report = outcome, reason, report
        if self.view is not None:
            self.view.bee_finished(bee.id, outcome, reason)
        self._save()

    async def _judge_unjudged(self, pipeline: Pipeline, earlier: EarlierRun) -> None:
        """Judge, in each bee's order, the utterances the stop left without a publish decision (the bees
        start once this is done, so what it delivers is in their first inbox)."""
        left = [u for bee in self.bees.values() for u in earlier.unjudged.get(bee.id, [])]
        if left:
            self._say(f"judging {plural(len(left), 'utterance')} the stop left unjudged")
        for utterance in left:
            await pipeline.judge_now(utterance)

    async def _send(self, bee: str, items: list[InboxItem]) -> None:
        run = self.bees[bee]
        if run.proc is not None:
            await run.proc.send(Notes(items=items))
        elif run.outcome is None:
            run.unread += items  # not started yet: its first inbox, sent once it runs

    async def _wrap_up(self, bee: BeeRun, reason: str) -> None:
        if bee.proc is None or bee.outcome is not None or bee.wrap_sent is not None:
            return
        bee.wrap_sent = time.monotonic()
        await bee.proc.send(WrapUp(reason=reason))

    def _kill(self, bee: BeeRun, reason: str) -> None:
        if bee.proc is not None and bee.outcome is None and bee.kill_reason is None:
            bee.kill_reason = reason
            bee.proc.signal_group(signal.SIGKILL)

    # ------------------------------------------------------------------ supervision

    async def _supervise(self) -> None:
        """Budgets, watchdog, deadline, disputes and the end of the run, checked every tick."""
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            live = [b for b in self.bees.values() if b.outcome is None]
            if self.deadline is not None and now >= self.deadline and self.stopping is None:
                self.stopping = "deadline"
                self.exit_reason = _STOP_REASONS["deadline"]
                self._kill_at = now + self.opts.grace
                # Else the run looks hung until the grace ends: a bee may take all of it for its report.
                self._say(f"{self.exit_reason}: asking every bee for its report (killed after {self.opts.grace:g} s)")
            if self.pipeline.answered is not None and self.stopping is None:
                self.stopping = "answered"
                self.exit_reason = self._stop_reason()
                self._say(f"{self.exit_reason}: asking every bee for its report (--race)")
                self._kill_at = now + self.opts.grace
            for bee in live:
                if self.stopping is not None:
                    await self._wrap_up(bee, self._stop_reason())
                await self._watch(bee, now)
            if self._kill_at is not None and now >= self._kill_at:
                for bee in live:
                    why = "Ctrl-C twice" if self._interrupts > 1 else f"after the grace period ({self.stopping})"
                    self._kill(bee, f"killed {why}")
            if self.stopping is None:
                await self._spawn_verifiers()
            # Done when no bee runs (a verifier may have started just now, after every investigator ended) and
            # no bee's utterances are still in the pipeline (a late note may still open a dispute).
            running = any(b.outcome is None for b in self.bees.values())
            if not running and self._active == 0:
                if self._settled():
                    return
                if not self._told_waiting:  # else the run looks hung until the dispute's timeout
                    self._told_waiting = True
                    self._say(waiting_note(self.pipeline.pending_disputes(), self.opts.dispute_timeout, time.time()))
            else:
                self._told_waiting = False  # a verifier runs: the next wait is news again

    def _stop_reason(self) -> str:
        """What the bees are told when the whole hive stops early."""
        answered = self.pipeline.answered
        if self.stopping == "answered" and answered is not None:
            return f"{answered.id} by {answered.bee} answers the problem"
        return _STOP_REASONS[self.stopping or "deadline"]

    async def _watch(self, bee: BeeRun, now: float) -> None:
        silent = now - bee.last_seen
        if bee.wrap_sent is None:
            if silent >= self.opts.stall_timeout:
                reason = f"no sign of life for {int(silent)} s"
            elif now - bee.started >= self.opts.time_limit + 5.0:
                reason = "its time limit passed"
            else:
                return
            self._say(f"{bee.id}: {reason}: asking for its report (killed after {self.opts.grace:g} s)")
            await self._wrap_up(bee, reason)
        elif now - bee.wrap_sent >= self.opts.grace:
            self._kill(bee, f"did not report within {int(self.opts.grace)} s of being asked to wrap up")

    def _settled(self) -> bool:
        """No bee runs, and no open dispute still waits for a verifier that may yet be spawned."""
        if self.stopping is not None or self.verifiers >= self.opts.max_verifiers:
            return True
        return not self.pipeline.pending_disputes()

    async def _spawn_verifiers(self) -> None:
        assert self._tasks is not None
        for dispute in self.pipeline.due_disputes(self.opts.dispute_timeout):
            if self.verifiers >= self.opts.max_verifiers:
                return
            a, b = self.pipeline.notes_of(dispute.notes)
            self.verifiers += 1
            role = load_role("verifier", cwd=self.opts.repo)
            bee = BeeRun(f"verify-{self.verifiers}", verifier_angle(a, b), role.name, role.model or self.opts.model)
            self.bees[bee.id] = bee
            self.pipeline.verifier_spawned(dispute, bee.id, bee.angle)
            self._say(f"dispute {dispute.id} unsettled for {self.opts.dispute_timeout:g} s: spawning {bee.id}")
            self._save()
            self._tasks.create_task(self._bee_task(bee))

    def _on_signal(self) -> None:
        """First Ctrl-C: wrap every bee up, kill after a short grace. Second: kill at the next tick."""
        self._interrupts += 1
        if self._model_task is not None:
            self._model_task.cancel()
        if self._interrupts == 1:
            self.stopping = "interrupted"
            if any(b.proc is not None and b.outcome is None for b in self.bees.values()):
                self._say("interrupted: asking every bee for its report (Ctrl-C again to stop at once)")
            else:
                self._say("interrupted")
            self._kill_at = time.monotonic() + min(self.opts.grace, INTERRUPT_GRACE)
        else:
            self._say("stopping now")
            self._kill_at = time.monotonic()

    async def _reap_all(self) -> None:
        for bee in self.bees.values():
            if bee.proc is not None and bee.proc.proc.returncode is None:
                await bee.proc.send(Stop())
                await bee.proc.terminate(grace=1.0)

    # ------------------------------------------------------------------ the answer

    async def _answer(self) -> str:
        reports = [BeeReport(b.id, b.angle, b.outcome or "crashed", b.reason, b.report) for b in self.bees.values()]
        state = self.pipeline.state
        note: str | None = None
        if self.stopping == "interrupted":
            self.answer_source = "digest"
            body, note = digest(reports), "Interrupted: a partial answer, digested from what the bees reported."
        else:
            self._say("writing the answer (Ctrl-C writes a digest of the reports instead)")
            model = None
            try:
                model = Metered(infer_model(self.opts.model, agent="answer"))
                timeout = model_timeout() or ANSWER_TIMEOUT
                body = await self._model_call(synthesize(model, self.opts.problem, reports, state, timeout))
            except CutShort:
                self.answer_source = "digest"
                note = "Interrupted while the answer was being written: a digest of the reports."
                body = digest(reports)
            except Exception as e:  # the answer must be written whatever the model does
                self.answer_source = "digest"
                note = f"The model could not write the answer ({_short(e)}); this is a digest of the reports."
                body = digest(reports)
            finally:
                if model is not None:
                    self._spent(model)
                    await model.aclose()
        text = self._scrub.text(compose_answer(self.opts.problem, body, reports, state, note))
        write_text_atomic(self.paths.answer, text)
        return text


def add_usage(usage: CoordinatorUsage | None, model: Metered) -> CoordinatorUsage:
    """``usage`` with the calls of ``model`` added (its model becomes the one named: the latest used)."""
    usage = usage or CoordinatorUsage()
    total = TokenUsage(usage.input_tokens, usage.output_tokens, usage.cost_usd) + model.usage
    return CoordinatorUsage(model=model.name, calls=usage.calls + model.calls, input_tokens=total.input_tokens,
                            output_tokens=total.output_tokens, cost_usd=total.cost_usd)


def waiting_note(disputes: Sequence[DisputeState], timeout: float, now: float) -> str:
    """What the run says when every bee has ended but open disputes still wait for their verifier."""
    due = min(parse_iso(d.at).timestamp() + timeout for d in disputes)
    ids = ", ".join(d.id for d in disputes)
    return (f"every bee has ended; {ids} still open: a verifier starts in {max(0, math.ceil(due - now))} s "
            f"(--dispute-timeout {timeout:g})")


class CutShort(Exception):
    """The coordinator's own model call was cut short by Ctrl-C."""


_HANDED_IN = frozenset({"reported", "cut_short"})
"""Bee outcomes that handed in a report of their own; ``failed`` and ``crashed`` ones have only partial reports."""


def said_something(report: str) -> bool:
    """Whether a report holds anything the bee said: not empty, nor only the note of a kill (see :func:`_cut`)."""
    text = report.strip()
    return bool(text) and not (text.startswith("(Cut short: ") and text.endswith(_NOTHING_REPORTED))


def handed_in(outcome: str | None, report: str) -> bool:
    """Whether a bee left something to answer from: a bee cut short before it said anything (a model that
    never answered within the time limit) left nothing, whatever its outcome is called."""
    return outcome in _HANDED_IN and said_something(report)


def ended_reason(outcomes: Sequence[str | None]) -> str:
    """The exit reason of a run that ended on its own: "every bee reported" only when every bee did."""
    if all(outcome == "reported" for outcome in outcomes):
        return "every bee reported"
    counts: dict[str, int] = {}
    for outcome in outcomes:
        key = (outcome or "crashed").replace("_", " ")
        counts[key] = counts.get(key, 0) + 1
    return "every bee ended: " + ", ".join(f"{n} {outcome}" for outcome, n in counts.items())


_NOTHING_REPORTED = "; nothing reported.)"


def _cut(reason: str, partial: str) -> str:
    return f"(Cut short: {reason}.)\n\n{partial}" if partial else f"(Cut short: {reason}{_NOTHING_REPORTED}"


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:200]


def git_head(repo: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
