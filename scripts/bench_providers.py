"""Measure what the provider layer costs a fresh process: making a model, and its first HTTP request.

    .venv/bin/python scripts/bench_providers.py [--runs 5]

For each provider kind a new Python process imports ``hive.providers.registry``, makes the model with
``infer_model`` and then sends one request to a local server (hive.testing.LocalHTTPServer, in this
process) that answers in the provider's wire format. Measured in the child, per run:

- make: seconds from interpreter start to a model in hand (imports included);
- rss_made: resident memory (VmRSS) at that point;
- first: seconds for the first request (the lazy httpx import and the connection included);
- rss_after: resident memory after it.

Prints one line per run and the median per provider kind.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

from benchlib import positive_int

from hive.testing import LocalHTTPServer

CHILD = r"""
import asyncio, json, sys, time
start = time.monotonic()

def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

from hive.providers.base import Message
from hive.providers.registry import infer_model
spec, env = sys.argv[1], json.loads(sys.argv[2])
model = infer_model(spec, agent="bee-1", env=env)
made = time.monotonic() - start
rss_made = rss_mib()

async def first_request():
    t0 = time.monotonic()
    await model.request([Message("user", "hello")])
    took = time.monotonic() - t0
    await model.aclose()
    return took

first = asyncio.run(first_request())
print(json.dumps({"make": made, "rss_made": rss_made, "first": first, "rss_after": rss_mib()}))
"""

OPENAI_REPLY = {
    "choices": [{"message": {"role": "assistant", "content": "hi"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}
ANTHROPIC_REPLY = {"content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 3, "output_tokens": 1}}


def _run(spec: str, env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, spec, json.dumps(env)], capture_output=True, text=True, check=True
    )
    measured: dict[str, Any] = json.loads(result.stdout)
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive_int, default=5)
    args = parser.parse_args()
    with LocalHTTPServer() as server:
        cases = [
            (
                "openai:gpt-4.1-mini",
                {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": f"{server.url}/v1"},
                OPENAI_REPLY,
            ),
            (
                "anthropic:claude-haiku-4-5",
                {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": server.url},
                ANTHROPIC_REPLY,
            ),
        ]
        for spec, env, reply in cases:
            rows = []
            for run in range(args.runs):
                server.reply(reply)
                row = _run(spec, env)
                rows.append(row)
                print(
                    f"{spec} run {run + 1}: make {row['make']:.3f} s, rss {row['rss_made']:.1f} MiB; "
                    f"first request {row['first']:.3f} s, rss {row['rss_after']:.1f} MiB"
                )
            medians = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
            print(
                f"{spec} median: make {medians['make']:.3f} s, rss {medians['rss_made']:.1f} MiB; "
                f"first request {medians['first']:.3f} s, rss {medians['rss_after']:.1f} MiB"
            )


if __name__ == "__main__":
    main()
