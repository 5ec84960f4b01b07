"""CSV output. Writes every row it is given; a missing email is written as an empty field."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import TextIO

from export.db import Customer

HEADER = ("id", "name", "email", "created_hour")


def write_rows(out: TextIO, rows: Iterable[Customer]) -> int:
    writer = csv.writer(out)
    count = 0
    for row in rows:
        writer.writerow((row.id, row.name, row.email or "", row.created_hour))
        count += 1
    return count
