"""Board store throughput: appends per second with hive's durability against a bare ``os.write`` loop of the
same lines, and incremental read throughput.

    .venv/bin/python scripts/bench_store.py [--runs 5] [--notes 20000]

Per run, in a temporary directory on the same file system:

- bare: ``os.write`` of each pre-serialised line to an ``O_APPEND`` descriptor (the floor);
- append_bytes: :meth:`JsonlWriter.append_bytes` of the same lines (the store's own I/O path);
- append: :meth:`JsonlWriter.append` of the ``Note`` records, serialisation included (what the pipeline
  does per note); hive uses ``durable=False``: one ``write(2)`` per line, no fsync (see hive/store.py);
- durable: ``JsonlWriter(durable=True)`` (an fsync per line), on a tenth of the lines, for reference;
- read_all: one :class:`JsonlReader` reading the whole board, validated into records;
- incremental: a writer appending batches of 10 notes and a reader calling ``read_new`` after each batch
  (what ``hive tail --follow`` and the live view do), reads only;
- bare read: ``orjson.loads`` of every line with no validation, the read floor.

The notes are plausible agent findings (``benchlib``), about 300 bytes a line. Prints per-run figures,
then medians and the ratios to the bare loops measured in the same run.

Targets (issue 7): append >= 0.5x the bare loop, and >= 20,000 notes/s absolute.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from benchlib import SUBSYSTEMS, header, median, positive_int, utterance

from hive.records import BOARD_ADAPTER, Note
from hive.store import JsonlReader, JsonlWriter, dumps


def make_notes(n: int) -> list[Note]:
    rng = random.Random(11)
    kinds = ["finding", "finding", "finding", "dead_end", "decision"]
    notes = []
    for i in range(n):
        kind = rng.choice(kinds)
        text = utterance(rng, SUBSYSTEMS[i % len(SUBSYSTEMS)], kind)
        notes.append(Note(id=f"n-{i + 1:05d}", bee=f"bee-{i % 6 + 1}", kind=kind, text=text,
                          score=round(rng.random(), 4), utterance=f"bee-{i % 6 + 1}#{i // 6 + 1}",
                          decision=f"g-{i + 1:06d}"))
    return notes


def timed(fn: Callable[[], int]) -> float:
    """Items per second of ``fn`` (which returns how many items it handled)."""
    started = time.perf_counter()
    count = fn()
    return count / (time.perf_counter() - started)


def one_run(root: Path, notes: list[Note], lines: list[bytes]) -> dict[str, float]:
    out: dict[str, float] = {}

    def bare() -> int:
        fd = os.open(root / "bare.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            for line in lines:
                os.write(fd, line)
        finally:
            os.close(fd)
        return len(lines)

    def append_bytes() -> int:
        with JsonlWriter(root / "bytes.jsonl") as writer:
            for line in lines:
                writer.append_bytes(line)
        return len(lines)

    def append() -> int:
        with JsonlWriter(root / "board.jsonl") as writer:
            for note in notes:
                writer.append(note)
        return len(notes)

    tenth = notes[: max(len(notes) // 10, 1)]

    def durable() -> int:
        with JsonlWriter(root / "durable.jsonl", durable=True) as writer:
            for note in tenth:
                writer.append(note)
        return len(tenth)

    def read_all() -> int:
        return len(JsonlReader(root / "board.jsonl", BOARD_ADAPTER).read_new())

    def bare_read() -> int:
        return len([orjson.loads(raw) for raw in (root / "board.jsonl").read_bytes().splitlines()])

    out["bare"] = timed(bare)
    out["append_bytes"] = timed(append_bytes)
    out["append"] = timed(append)
    out["durable"] = timed(durable)
    out["read_all"] = timed(read_all)
    out["bare_read"] = timed(bare_read)
    out["incremental"] = incremental(root / "inc.jsonl", notes)
    out["bytes_per_line"] = sum(len(line) for line in lines) / len(lines)
    for name in ("bare", "bytes", "board", "durable", "inc"):
        (root / f"{name}.jsonl").unlink()
    return out


def incremental(path: Path, notes: list[Note]) -> float:
    """Records per second of the reader alone, reading after every batch of 10 appended notes."""
    reader = JsonlReader(path, BOARD_ADAPTER)
    reading = 0.0
    got = 0
    with JsonlWriter(path) as writer:
        for start in range(0, len(notes), 10):
            for note in notes[start:start + 10]:
                writer.append(note)
            began = time.perf_counter()
            got += len(reader.read_new())
            reading += time.perf_counter() - began
    assert got == len(notes), (got, len(notes))
    return got / reading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive_int, default=5)
    parser.add_argument("--notes", type=positive_int, default=20000)
    args = parser.parse_args()
    header("board store throughput")
    notes = make_notes(args.notes)
    lines = [dumps(note) for note in notes]
    results = []
    with tempfile.TemporaryDirectory(prefix="hive-bench-store-") as tmp:
        print(f"file system of the temporary directory: {tmp}")
        for run in range(args.runs):
            r = one_run(Path(tmp), notes, lines)
            results.append(r)
            print(f"run {run + 1}: bare {r['bare']:,.0f}/s, append_bytes {r['append_bytes']:,.0f}/s, "
                  f"append {r['append']:,.0f}/s ({r['append'] / r['bare']:.2f}x bare), durable "
                  f"{r['durable']:,.0f}/s, read_all {r['read_all']:,.0f}/s, incremental {r['incremental']:,.0f}/s, "
                  f"bare read {r['bare_read']:,.0f}/s")
    m = {key: median([r[key] for r in results]) for key in results[0]}
    ratio = median([r["append"] / r["bare"] for r in results])
    ratio_bytes = median([r["append_bytes"] / r["bare"] for r in results])
    mb = m["bytes_per_line"] / 1e6
    print(f"\nmedian of {args.runs} runs, {args.notes} notes of {m['bytes_per_line']:.0f} bytes:")
    print(f"  bare os.write loop          {m['bare']:>10,.0f} lines/s")
    print(f"  JsonlWriter.append_bytes    {m['append_bytes']:>10,.0f} lines/s  ({ratio_bytes:.2f}x bare)")
    print(f"  JsonlWriter.append (Note)   {m['append']:>10,.0f} notes/s  ({ratio:.2f}x bare, serialisation included)")
    print(f"  durable=True (fsync/line)   {m['durable']:>10,.0f} notes/s  (not what hive uses)")
    print(f"  JsonlReader, whole board    {m['read_all']:>10,.0f} records/s ({m['read_all'] * mb:.1f} MB/s, "
          f"{m['read_all'] / m['bare_read']:.2f}x bare orjson.loads)")
    print(f"  JsonlReader, every 10 lines {m['incremental']:>10,.0f} records/s ({m['incremental'] * mb:.1f} MB/s)")
    print(f"  bare orjson.loads per line  {m['bare_read']:>10,.0f} lines/s")
    print("targets: append >= 0.5x the bare loop and >= 20,000 notes/s")


if __name__ == "__main__":
    main()
