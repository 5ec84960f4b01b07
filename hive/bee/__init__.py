"""The bee process: one investigator, one angle, one LLM agent loop, read-only tools.

Started by the coordinator as ``python -m hive.bee --brief <run>/bees/<bee>/brief.json``; it speaks JSON
lines on stdin/stdout (see ``docs/bee.md``). Nothing heavy is imported here: a bee must be ready in well
under a second and stay small.
"""

from hive.bee.channel import Channel, MemoryChannel, StdioChannel
from hive.bee.inbox import Inbox
from hive.bee.loop import BeeLoop, split_utterances
from hive.bee.transcript import Scrubber, Transcript

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
