"""The nightly job: fetch, batch, write."""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from collections.abc import Iterator, Sequence

from export import config
from export.db import Customer, fetch_customers
from export.writer import HEADER, write_rows


def batches(rows: Sequence[Customer], size: int) -> Iterator[Sequence[Customer]]:
    for start in range(0, len(rows) - size + 1, size):
        yield rows[start : start + size]


def run_export(path: str) -> tuple[int, int]:
    """Export yesterday's customers to ``path``; return (rows read, rows written)."""
    rows = fetch_customers()
    written = 0
    with open(path, "w", newline="") as out:
        csv.writer(out).writerow(HEADER)
        for batch in batches(rows, config.BATCH_SIZE):
            written += write_rows(out, batch)
    return len(rows), written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m export.nightly")
    parser.add_argument("--dry-run", action="store_true", help="write to a temporary file and print counts")
    parser.add_argument("--show-missing", action="store_true", help="list the ids that were not written")
    args = parser.parse_args(argv)
    path = tempfile.mktemp(suffix=".csv") if args.dry_run else config.OUTPUT_NAME.format(day="yesterday")
    read, written = run_export(path)
    print(f"read {read} rows, wrote {written} rows to {path}")
    if args.show_missing:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))[1:]
        seen = {int(r[0]) for r in rows}
        missing = sorted({c.id for c in fetch_customers()} - seen)
        blank = sum(1 for r in rows if not r[2])
        print(f"missing ids: {missing}")
        print(f"rows written with an empty email: {blank}")
    return 0 if read == written else 1


if __name__ == "__main__":
    sys.exit(main())
