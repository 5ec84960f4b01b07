"""Faults during a real run: real `hive start` subprocesses, real bees and tools, scripted or served models.

Each test breaks one thing while the hive runs (a bee, a model provider, the judge, the disk, the load) and
checks that the run completes or ends cleanly, that every complete record survives, and that `hive audit`
still reads the run afterwards.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hive.records import BOARD_ADAPTER, Delivery, GateDecision, Note, Relation
from hive.store import read_all
from tests.hive_runs import (
    board,
    ls,
    publish_rules,
    relation,
    report,
    run_hive,
    tmpfs,
    transcript_text,
    turn,
    write_judge,
    write_script,
)
from tests.reliability_runs import (
    ROUTINE_DELIVER,
    Hive,
    assert_audit_works,
    assert_one_publish_decision_per_utterance,
    bee_pids,
    gates,
    load_info,
    notes,
    peak_memory_kib,
    processes_matching,
    wait_for,
    watch_peak_memory,
)

pytestmark = pytest.mark.slow

FLOOD_BEE = Path(__file__).with_name("flood_bee.py")


@pytest.fixture
def hive(tmp_path: Path) -> Hive:
    return Hive(tmp_path)


def only_run(hive: Hive) -> Path:
    dirs = [p for p in hive.runs.iterdir() if (p / "run.json").is_file()]
    assert len(dirs) == 1, dirs
    return dirs[0]


# --------------------------------------------------------------------------- bees


def test_silent_and_frozen_bees_are_wrapped_up_then_killed_by_the_watchdog(hive: Hive) -> None:
    """bee-1 freezes (SIGSTOP), bee-2 hangs in a model call; bee-3 reports. The watchdog wraps both up: bee-2
    abandons its hung call and hands in its report, bee-1 cannot and is killed after the grace."""
    script = write_script(hive.root, {
        "bee-1": [turn("FOUND: app/export.py:5 drops the final partial batch, seen in the loop bounds.", ls()),
                  turn("More reading before anything else gets said by this bee.", ls(), 2.0), report()],
        "bee-2": [turn("FOUND: app/config.py:2 sets CUTOFF_HOUR = 0 and nothing in the export reads it.", ls()),
                  turn("This reply never comes: the model hangs.", ls(), 600.0), report()],
        "bee-3": [turn("DEAD END: README.md says nothing about batching or cutoffs at all.", ls()), report()],
    })
    judge = write_judge(hive.root, [*publish_rules(), ROUTINE_DELIVER])
    proc = hive.start(f"script:{script}", f"script:{judge}", "--angle", "a", "--angle", "b", "--angle", "c",
                      "--stall-timeout", "2", "--grace", "2")
    try:
        wait_for(lambda: hive.runs.exists() and len(bee_pids(str(hive.runs))) >= 2)
        run_dir = only_run(hive)
        wait_for(lambda: {"bee-1", "bee-2"} <= {n.bee for n in notes(run_dir)})
        frozen = bee_pids(f"{run_dir}/bees/bee-1/")
        assert frozen
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    info = load_info(run_dir)
    outcomes = {b.id: (b.outcome, b.reason or "") for b in info.bees}
    assert outcomes["bee-3"][0] == "reported"
    assert outcomes["bee-1"][0] == "cut_short" and "wrap up" in outcomes["bee-1"][1], outcomes["bee-1"]
    assert outcomes["bee-2"] == ("cut_short", "no sign of life for 2 s")
    assert "model call abandoned: no sign of life for 2 s" in (run_dir / "bees/bee-2/transcript.jsonl").read_text()
    assert info.status == "finished"
    answer = (run_dir / "answer.md").read_text()
    assert "drops the final partial batch" in answer and "CUTOFF_HOUR = 0" in answer
    assert not bee_pids(str(hive.runs))
    assert_one_publish_decision_per_utterance(run_dir)
    assert_audit_works(hive)


def test_a_bee_flooding_its_stdout_loses_nothing_and_holds_no_memory(hive: Hive) -> None:
    """bee-1 writes a 50 MB line, thousands of garbage lines, junk and messages in other bees' names (this
    crashed the coordinator once) around one real utterance and report."""
    script = write_script(hive.root, {
        "bee-2": [turn("FOUND: app/config.py:2 sets CUTOFF_HOUR = 0 and nothing in the export reads it.", ls()),
                  report()],
    })
    judge = write_judge(hive.root, [*publish_rules(), ROUTINE_DELIVER])
    proc = hive.start(f"script:{script}", f"script:{judge}", "--angle", "a", "--angle", "b",
                      env={"HIVE_BEE_COMMAND": f"{sys.executable} {FLOOD_BEE}"})
    wait_for(lambda: hive.runs.exists() and any(hive.runs.iterdir()))
    started_kib = peak_memory_kib(proc.pid) or 0  # imports done, judge built, the run directory made
    _out, err, peak_kib = watch_peak_memory(proc, timeout=90)
    assert proc.returncode == 0, err
    run_dir = only_run(hive)
    info = load_info(run_dir)
    assert [(b.id, b.outcome) for b in info.bees] == [("bee-1", "reported"), ("bee-2", "reported")]
    published = {n.bee: n.text for n in notes(run_dir)}
    assert published["bee-1"].startswith("FOUND: flood survivor")
    assert not any("impersonated" in text for text in published.values())
    assert_one_publish_decision_per_utterance(run_dir)
    # The coordinator reads bee output in bounded chunks: holding the 50 MB line would take ≥ 50 MB more.
    assert started_kib and peak_kib - started_kib < 30 * 1024, f"coordinator peak RSS {started_kib} → {peak_kib} KiB"
    assert_audit_works(hive)


# --------------------------------------------------------------------------- model providers


class ChatServer:
    """An OpenAI-compatible ``/chat/completions`` endpoint on 127.0.0.1 that misbehaves per bee.

    Bees are told apart by their kickoff message (which names the angle); the answer synthesis sends no
    tools. ``plans`` maps an angle word to the list of responses that bee gets, in order (the last repeats).
    """

    def __init__(self, plans: dict[str, list[tuple[int, Any, dict[str, str]]]], answer: str) -> None:
        self.plans = plans
        self.answer = answer
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def respond(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        if not body.get("tools"):
            return 200, completion(self.answer), {}
        kickoff = next(m["content"] for m in body["messages"] if m["role"] == "user")
        who = next(word for word in self.plans if word in kickoff)
        with self.lock:
            self.calls[who] += 1
            n = self.calls[who]
        plan = self.plans[who]
        return plan[min(n, len(plan)) - 1]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                status, payload, headers = outer.respond(body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> ChatServer:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def completion(text: str, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"id": "c", "object": "chat.completion", "model": "x",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


def test_a_bee_recovers_from_429_500_and_malformed_tool_calls_and_one_that_cannot_fails_with_a_reason(
    hive: Hive,
) -> None:
    retry_now = {"retry-after": "0"}
    malformed: list[dict[str, Any]] = [
        {"id": "t1", "type": "function", "function": {"name": "grep", "arguments": "{not json"}},
        {"id": "t2", "type": "function", "function": "nonsense"},
    ]
    plans = {
        "alpha": [
            (429, {"error": {"message": "slow down"}}, retry_now),
            (500, {"error": {"message": "boom"}}, retry_now),
            (200, completion("FOUND: app/export.py:5 drops the final partial batch (read the loop).", malformed), {}),
            (200, completion("## Found\n- app/export.py:5 drops the final partial batch"), {}),
        ],
        "beta": [(503, {"error": {"message": "overloaded, for good"}}, retry_now)],
    }
    with ChatServer(plans, answer="The batching drops the final partial batch.") as server:
        done = hive.run("openai-compat:x", "script:" + str(write_judge(hive.root, [*publish_rules(),
                                                                                   ROUTINE_DELIVER])),
                        "--angle", "alpha: the batching", "--angle", "beta: the config",
                        env={"HIVE_BASE_URL": server.base_url})
    assert done.returncode == 0, done.stderr
    assert server.calls == {"alpha": 4, "beta": 4}  # both retried, each through the real provider
    run_dir = only_run(hive)
    info = load_info(run_dir)
    outcomes = {b.id: (b.outcome, b.reason or "") for b in info.bees}
    assert outcomes["bee-1"] == ("reported", "")
    outcome, reason = outcomes["bee-2"]
    assert outcome == "failed" and "503" in reason, reason
    assert [n.text for n in notes(run_dir)] == [
        "FOUND: app/export.py:5 drops the final partial batch (read the loop)."
    ]
    seen = transcript_text(run_dir, "bee-1")
    assert "invalid JSON arguments" in seen and "malformed tool call" in seen
    assert info.settings["answer_from"] == "model"
    assert "drops the final partial batch" in (run_dir / "answer.md").read_text()
    assert_audit_works(hive)


def test_a_run_in_which_no_bee_reports_fails_and_resumes_once_the_provider_works(hive: Hive) -> None:
    """A rejected key and a provider answering garbage: both bees fail. That is a failed run (exit 1, one
    error line), not "every bee reported"; its answer is still written, and `hive resume` starts both bees
    again once the provider is fixed."""
    plans: dict[str, list[tuple[int, Any, dict[str, str]]]] = {
        "alpha": [(401, {"error": {"message": "invalid api key"}}, {})],
        "beta": [(200, b"<html>not json</html>", {})],
    }
    judge = "script:" + str(write_judge(hive.root, publish_rules()))
    with ChatServer(plans, answer="The batching drops the final partial batch.") as server:
        env = {"HIVE_BASE_URL": server.base_url}
        done = hive.run("openai-compat:x", judge, "--angle", "alpha: the batching", "--angle", "beta: the config",
                        env=env)
        assert done.returncode == 1, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("hive: error:")]
        assert len(errors) == 1 and "no bee reported: bee-1 failed, bee-2 failed" in errors[0], done.stderr
        run_dir = only_run(hive)
        info = load_info(run_dir)
        assert info.status == "failed" and info.exit_reason == "no bee reported: bee-1 failed, bee-2 failed"
        assert (run_dir / "answer.md").exists()
        assert "failed" in hive.hive("ls").stdout

        server.plans = {
            "alpha": [(200, completion("## Found\n- app/export.py:5 drops the final partial batch"), {})],
            "beta": [(200, completion("## Found\n- the config is fine"), {})],
        }
        resumed = run_hive(["resume", info.id, "--runs-dir", str(hive.runs), "--plain"], cwd=hive.root, env=env)
    assert resumed.returncode == 0, resumed.stderr
    info = load_info(run_dir)
    assert info.status == "finished" and [b.outcome for b in info.bees] == ["reported", "reported"]


# --------------------------------------------------------------------------- the judge


class JudgeServer:
    """A judge endpoint that fails differently by what it is asked: it hangs past the http tier's timeout
    on one publish, sends garbage or NaN or HTTP 503 on the others, and nonsense for relate and deliver."""

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/evaluate"

    def respond(self, body: dict[str, Any]) -> tuple[int, bytes]:
        note = str(body["state"].get("note") or body["state"].get("later") or "")
        if body["gate"] == "publish" and "slowpoke" in note:
            self.release.wait(30)  # far past the tier's 8 s
            return 200, b'{"answers": {"news": {"p": 0.99}}}'
        if body["gate"] == "publish" and "garbage" in note:
            return 200, b"<html>surprise</html>"
        if body["gate"] == "publish" and "nan" in note:
            return 200, b'{"answers": {"news": {"p": NaN}, "kind": {"probs": {"finding": NaN}}}}'
        if body["gate"] == "relate":
            return 200, b'{"answers": {"relation": {"probs": {"supersedes": Infinity}}}}'
        if body["gate"] == "deliver":
            return 200, b'{"answer": [1, 2, 3]}'
        return 503, b'{"error": "down"}'

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                status, data = outer.respond(json.loads(self.rfile.read(int(self.headers["content-length"]))))
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> JudgeServer:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_judge_that_hangs_or_answers_garbage_or_nan_falls_back_on_every_decision(hive: Hive) -> None:
    script = write_script(hive.root, {
        "bee-1": [
            turn("FOUND: slowpoke: app/export.py:5 drops the final partial batch of the export rows.", ls()),
            turn("Let me look at how the rows reach the batching code before saying more about it.", ls()),
            turn("DECIDED: garbage aside, the fix belongs in app/export.py batches() for the final batch rows.",
                 ls(), 0.5),
            report(),
        ],
        "bee-2": [
            turn("FOUND: nan: app/export.py:5 loop bounds skip the final partial batch; this corrects the "
                 "earlier export rows claim.", ls(), 0.3),
            turn("Reading the configuration module to see whether anything else is involved in this.", ls(), 0.5),
            report(),
        ],
    })
    with JudgeServer() as judge:
        done = hive.run(f"script:{script}", f"http:{judge.url}", "--angle", "a", "--angle", "b")
    assert done.returncode == 0, done.stderr
    run_dir = only_run(hive)
    assert load_info(run_dir).status == "finished"
    decisions = gates(run_dir)
    judged = [d for d in decisions if d.gate in ("publish", "deliver", "relate")]
    assert judged and all(d.source == "fallback" for d in judged), [(d.gate, d.source) for d in judged]
    def reason_for(fragment: str) -> str | None:
        [row] = [d for d in judged if d.gate == "publish" and fragment in (d.text or "")]
        return row.reason

    assert reason_for("slowpoke") == "error:timeout"
    assert reason_for("garbage aside") == "error:invalid_response"
    assert reason_for("nan:") == "error:invalid_response"
    unmarked = [d for d in judged if d.gate == "publish" and d.text and d.text.startswith(("Let me", "Reading"))]
    assert unmarked and all(d.outcome == "withhold" and d.reason == "error:server" for d in unmarked)

    # Nothing is published by a judge failure but marked text, at the fallback score; nothing is removed.
    published = notes(run_dir)
    assert sorted(n.kind for n in published) == ["decision", "finding", "finding"]
    assert all(n.score == 0.5 for n in published)
    records = board(run_dir)
    assert not [r for r in records if isinstance(r, Relation)]
    relate_rows = [d for d in judged if d.gate == "relate"]
    assert relate_rows and all(d.outcome == "none" and d.reason == "error:invalid_response" for d in relate_rows)
    # Only the decision travels, by its rule; plain findings stay put when the judge cannot vouch for them.
    assert all(isinstance(r, Delivery) and r.how == "rule" for r in records if isinstance(r, Delivery))
    assert_one_publish_decision_per_utterance(run_dir)
    assert_audit_works(hive)


def test_shadow_mode_records_the_judge_and_acts_on_the_fallback(hive: Hive) -> None:
    """The judge says publish everything, deliver everything, supersede everything; shadow mode uses none of it."""
    script = write_script(hive.root, {
        "bee-1": [turn("FOUND: app/export.py:5 drops the final partial batch of the export rows.", ls()),
                  turn("Looking at the batching tests next, then the configuration module as well.", ls(), 1.0),
                  report()],
        "bee-2": [turn("FOUND: app/export.py:5 loop bounds keep the final partial batch; rows drop elsewhere.",
                       ls(), 0.3), report()],
    })
    eager = write_judge(hive.root, [
        {"gate": "publish", "answers": {"news": 0.99, "kind": {"finding": 0.97}}},
        {"gate": "relate", "answers": {"relation": relation("supersedes", 0.99)}},
        {"gate": "deliver", "answers": {"useful": 0.99}},
    ])
    done = hive.run(f"script:{script}", f"script:{eager}", "--angle", "a", "--angle", "b", "--gate-mode", "shadow")
    assert done.returncode == 0, done.stderr
    run_dir = only_run(hive)
    info = load_info(run_dir)
    assert info.gate_modes == {"publish": "shadow", "deliver": "shadow", "relate": "shadow"}
    judged = [d for d in gates(run_dir) if d.gate in ("publish", "deliver", "relate")]
    assert {d.gate for d in judged} == {"publish", "deliver", "relate"}
    assert all((d.source, d.mode, d.reason) == ("shadow", "shadow", "shadow") for d in judged)
    assert {d.verdict for d in judged if d.gate == "publish"} == {"publish"}
    # The fallback acted: only marked text is on the board, nothing superseded, no plain note delivered.
    assert sorted(n.text[:5] for n in notes(run_dir)) == ["FOUND", "FOUND"]
    withheld = [d for d in judged if d.gate == "publish" and d.outcome == "withhold"]
    assert [d.text[:11] for d in withheld if d.text] == ["Looking at "]
    records = board(run_dir)
    assert not [r for r in records if isinstance(r, Relation | Delivery)]
    assert any(d.gate == "relate" and d.verdict == "supersedes" for d in judged)
    assert_audit_works(hive)


# --------------------------------------------------------------------------- the disk


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs: room for a run's first files, not for a chatty run."""
    with tmpfs(tmp_path / "small-disk", "256k") as mount:
        yield mount


def chatty_script(hive: Hive, bees: int = 2, lines: int = 400) -> Path:
    rng = random.Random(5)
    words = [f"word{i}" for i in range(5000)]
    return write_script(hive.root, {
        f"bee-{b}": [
            turn("\n".join(f"FOUND: item {b}.{k} " + " ".join(rng.sample(words, 12)) for k in range(lines)),
                 ls()),
            report(),
        ]
        for b in range(1, bees + 1)
    })


def assert_records_intact(run_dir: Path) -> None:
    """Every line but a possibly torn last one parses, in board and gate files alike."""
    _board, board_warnings = read_all(run_dir / "board.jsonl", BOARD_ADAPTER)
    _gate, gate_warnings = read_all(run_dir / "gate.jsonl", GateDecision)
    assert not board_warnings and not gate_warnings, board_warnings + gate_warnings
    json.loads((run_dir / "run.json").read_text())


def assert_clean_stop(done: subprocess.CompletedProcess[str], hive: Hive) -> None:
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    errors = [line for line in done.stderr.splitlines() if line.startswith("hive: error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert not bee_pids(str(hive.runs))


def test_a_full_disk_mid_run_stops_cleanly_with_one_error(hive: Hive, small_disk: Path) -> None:
    hive.runs = small_disk / "runs"
    judge = write_judge(hive.root, [*publish_rules(), ROUTINE_DELIVER])
    done = hive.run(f"script:{chatty_script(hive)}", f"script:{judge}", "--angle", "a", "--angle", "b")
    assert_clean_stop(done, hive)
    assert "No space left on device" in done.stderr
    run_dir = only_run(hive)
    assert_records_intact(run_dir)
    assert notes(run_dir), "the run should have written notes before the disk filled"


def test_a_run_directory_turning_read_only_mid_run_stops_cleanly_with_one_error(hive: Hive) -> None:
    """The run directory is bind-mounted read-only over itself while bees work: files already open keep
    appending, but the next new file (run.json's atomic rewrite when a bee ends) cannot be made."""
    script = write_script(hive.root, {
        "bee-1": [turn("FOUND: app/export.py:5 drops the final partial batch of the export rows.", ls()),
                  turn("FOUND: app/export.py:4 takes the batch size from BATCH = 250 at the top.", ls(), 2.0),
                  report()],
        "bee-2": [turn("Reading the configuration module for a while before saying anything.", ls(), 2.0),
                  report()],
    })
    judge = write_judge(hive.root, [*publish_rules(), ROUTINE_DELIVER])
    proc = hive.start(f"script:{script}", f"script:{judge}", "--angle", "a", "--angle", "b")
    run_dir: Path | None = None
    try:
        wait_for(lambda: hive.runs.exists() and any(notes(p) for p in hive.runs.iterdir()))
        run_dir = only_run(hive)
        locked = subprocess.run(["mount", "--bind", "-o", "ro", str(run_dir), str(run_dir)],
                                capture_output=True, text=True, check=False)
        if locked.returncode != 0:
            pytest.skip(f"cannot bind-mount read-only here ({locked.stderr.strip()}); needs root")
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        if run_dir is not None:
            subprocess.run(["umount", "-l", str(run_dir)], capture_output=True, check=False)
    assert_clean_stop(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), hive)
    assert "Read-only file system" in err
    assert_records_intact(run_dir)
    assert notes(run_dir)


# --------------------------------------------------------------------------- load


def test_six_bees_and_a_thousand_utterances_lose_nothing_and_memory_stays_bounded(hive: Hive) -> None:
    shares = [167, 167, 167, 167, 166, 166]

    def line(bee: int, k: int) -> str:
        # Words of its own, so that no utterance is a duplicate; every tenth shares a few words with the
        # others, so the relate gate sees load too.
        shared = " app/export.py batching rows" if k % 10 == 0 else ""
        return "FOUND: " + " ".join(f"b{bee}u{k}w{j}" for j in range(8)) + shared

    script = write_script(hive.root, {
        f"bee-{b}": [turn("\n".join(line(b, k) for k in range(count)), ls()), report()]
        for b, count in enumerate(shares, 1)
    }, angles=[f"angle {b}" for b in range(1, 7)])
    judge = write_judge(hive.root, [
        *publish_rules(),
        {"gate": "relate", "when": {"later": "."}, "answers": {"relation": relation("none", 0.9)}},
        ROUTINE_DELIVER,
    ])
    proc = hive.start(f"script:{script}", f"script:{judge}", "--bees", "6")
    _out, err, peak_kib = watch_peak_memory(proc, timeout=240)
    assert proc.returncode == 0, err
    run_dir = only_run(hive)

    raw_board = (run_dir / "board.jsonl").read_bytes()
    raw_gate = (run_dir / "gate.jsonl").read_bytes()
    assert raw_board.endswith(b"\n") and raw_gate.endswith(b"\n")
    records = board(run_dir)  # asserts that no line is corrupt or interleaved
    decisions = gates(run_dir)
    assert len(records) == raw_board.count(b"\n") and len(decisions) == raw_gate.count(b"\n")

    publish = [d for d in decisions if d.gate == "publish"]
    assert len(publish) == sum(shares)
    assert_one_publish_decision_per_utterance(run_dir)
    published = [r for r in records if isinstance(r, Note)]
    assert len({n.id for n in published}) == len(published)
    assert Counter(n.utterance for n in published).most_common(1)[0][1] == 1
    assert sorted(n.decision or "" for n in published) == sorted(d.id for d in publish if d.outcome == "publish")
    assert len({d.id for d in decisions}) == len(decisions)
    assert len(published) + sum(d.outcome == "duplicate" for d in publish) == sum(shares)
    assert peak_kib < 600 * 1024, f"coordinator peak RSS {peak_kib} KiB"
    assert_audit_works(hive)


# --------------------------------------------------------------------------- killed in the middle of a tool call


def sleeping_script(hive: Hive, marker: str) -> Path:
    return write_script(hive.root, {
        "bee-1": [turn("FOUND: app/export.py:5 drops the final partial batch of the export rows.",
                       [{"name": "bash", "args": {"command": f"sleep {marker}; echo woke"}}]), report()],
        "bee-2": [turn("Reading the configuration module for a while before saying anything.", ls(), 1.5),
                  report()],
    })


def process_count(pattern: str) -> int:
    done = subprocess.run(["pgrep", "-f", "--", pattern], capture_output=True, text=True, check=False)
    return len(done.stdout.split())


def pgrep_lines(*patterns: str) -> str:
    """What ``pgrep -f`` finds for each pattern, with state, parent and age, for a failure message."""
    lines = []
    for pattern in patterns:
        found = subprocess.run(["pgrep", "-f", "--", pattern], capture_output=True, text=True, check=False).stdout
        for pid in found.split():
            ps = subprocess.run(["ps", "-o", "pid=,ppid=,stat=,etime=,args=", "-p", pid], capture_output=True,
                                text=True, check=False).stdout.strip()
            lines.append(f"[{pattern}] {ps[:300] or pid + ' (gone)'}")
    return "\n".join(lines) or "(none)"


@pytest.mark.parametrize("sandbox", ["bwrap", "unsafe"])
def test_a_bee_killed_mid_tool_call_leaves_no_tool_process_and_the_run_goes_on(hive: Hive, sandbox: str) -> None:
    marker = f"{random.randint(300, 900)}.{random.randint(100, 999)}"  # the sleep's command line names it
    judge = write_judge(hive.root, [*publish_rules(), ROUTINE_DELIVER])
    extra = ["--unsafe-bash"] if sandbox == "unsafe" else []
    proc = hive.start(f"script:{sleeping_script(hive, marker)}", f"script:{judge}", "--angle", "a", "--angle", "b",
                      *extra)
    try:
        wait_for(lambda: process_count(f"^sleep {marker}") > 0)  # the command, not bwrap setting it up
        run_dir = only_run(hive)
        for pid in bee_pids(f"{run_dir}/bees/bee-1/"):
            os.kill(pid, signal.SIGKILL)
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    info = load_info(run_dir)
    outcomes = {b.id: (b.outcome, b.reason or "") for b in info.bees}
    assert outcomes["bee-1"][0] == "crashed" and "signal 9" in outcomes["bee-1"][1]
    assert outcomes["bee-2"][0] == "reported"
    wait_for(lambda: process_count(f"sleep {marker}") == 0, timeout=30,
             why=lambda: processes_matching(f"sleep {marker}"))
    assert_audit_works(hive)


def test_the_coordinator_killed_mid_tool_call_leaves_no_process_and_audit_reads_the_run(hive: Hive) -> None:
    marker = f"{random.randint(300, 900)}.{random.randint(100, 999)}"
    judge = write_judge(hive.root, [*publish_rules(), ROUTINE_DELIVER])
    proc = hive.start(f"script:{sleeping_script(hive, marker)}", f"script:{judge}", "--angle", "a", "--angle", "b",
                      "--unsafe-bash")
    try:
        # The command itself (`^`: not bwrap, whose command line names it too while it sets the sandbox up).
        wait_for(lambda: process_count(f"^sleep {marker}") > 0)
        run_dir = only_run(hive)
        wait_for(lambda: notes(run_dir))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
    # A SIGKILL chain (coordinator → bees → their sandboxes) takes milliseconds; the bound is generous for a
    # loaded CI machine (once, one CI run saw the last process go only after about 30 s, cause unknown), and a
    # failure shows what outlived the run, found the way the condition finds it.
    wait_for(lambda: not bee_pids(str(hive.runs)) and process_count(f"sleep {marker}") == 0, timeout=60,
             why=lambda: pgrep_lines(f"--brief {hive.runs}", f"sleep {marker}"))
    assert_records_intact(run_dir)
    listed = hive.hive("ls", "--json")
    assert [r["status"] for r in json.loads(listed.stdout)] == ["interrupted"]
    assert_audit_works(hive)
