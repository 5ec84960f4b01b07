"""A misbehaving bee for the reliability suite, started through ``HIVE_BEE_COMMAND``.

``bee-1`` floods its stdout: a 50 MB line, thousands of garbage lines, binary junk, JSON that is not a
protocol message, messages in other bees' names; between them it says one real utterance, and it ends
with a real report. Every other bee
is the real one (``python -m hive.bee``), so the run around the flood is genuine.
"""

from __future__ import annotations

import json
import os
import sys

FLOODER = "bee-1"
LONG_LINE_BYTES = 50 * 1024 * 1024
CHUNK = b"x" * (1 << 20)


def main(argv: list[str]) -> None:
    brief_path = argv[argv.index("--brief") + 1]
    with open(brief_path, encoding="utf-8") as f:
        bee = json.load(f)["bee"]
    if bee != FLOODER:
        os.execv(sys.executable, [sys.executable, "-m", "hive.bee", *argv])
    out = sys.stdout.buffer

    def say(message: dict[str, object]) -> None:
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()

    say({"type": "ready", "bee": bee, "pid": os.getpid()})
    for _ in range(LONG_LINE_BYTES // len(CHUNK)):
        out.write(CHUNK)
    out.write(b"\n")
    for n in range(5000):
        out.write(b"garbage line %d {{{ not json\n" % n)
    out.write(bytes(range(256)) * 64 + b"\n")
    out.write(b'{"type": "no-such-message", "bee": "bee-1"}\n')
    out.write(b'{"type": "utterance", "bee": "bee-1"}\n')  # a protocol message missing its fields
    for other in ("bee-2", "bee-99"):  # words in another bee's name, one of the run and one not
        say({"type": "utterance", "bee": other, "seq": 1,
             "text": f"FOUND: impersonated {other}: app/config.py is where every row goes missing."})
    say({"type": "report", "bee": "bee-2", "outcome": "failed", "text": "impersonated report"})
    say({"type": "utterance", "bee": bee, "seq": 1,
         "text": "FOUND: flood survivor: app/export.py:5 drops the final partial batch of rows."})
    out.write(b"x" * (3 * 1024 * 1024))  # an over-long line torn at both ends
    out.write(b"\n")
    say({"type": "report", "bee": bee, "outcome": "reported",
         "text": "## Found\n- flood survivor: the final partial batch is dropped"})


if __name__ == "__main__":
    main(sys.argv[1:])
