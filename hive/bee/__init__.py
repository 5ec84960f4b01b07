"""The bee process: one investigator, one angle, one LLM agent loop, read-only tools.

Started by the coordinator as ``python -m hive.bee --brief <run>/bees/<bee>/brief.json``; it speaks JSON
lines on stdin/stdout (see ``docs/bee.md``). The names below are imported on first use, so that starting
the process does not load the loop (and asyncio) before it has said ``ready``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hive.bee.channel import Channel, MemoryChannel, StdioChannel
    from hive.bee.inbox import Inbox
    from hive.bee.loop import BeeLoop, split_utterances
    from hive.bee.transcript import Transcript
    from hive.secrets import Scrubber

_EXPORTS = {
    "BeeLoop": "hive.bee.loop",
    "split_utterances": "hive.bee.loop",
    "Channel": "hive.bee.channel",
    "MemoryChannel": "hive.bee.channel",
    "StdioChannel": "hive.bee.channel",
    "Inbox": "hive.bee.inbox",
    "Scrubber": "hive.secrets",
    "Transcript": "hive.bee.transcript",
}

__all__ = [
    "BeeLoop",
    "Channel",
    "Inbox",
    "MemoryChannel",
    "Scrubber",
    "StdioChannel",
    "Transcript",
    "split_utterances",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hive.bee' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
