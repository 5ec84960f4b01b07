"""QA round 6: the live view's bee rows count tool calls, not a bee's lines about its context."""

from __future__ import annotations

import datetime as dt

from hive.observe.live import LiveState
from hive.records import Activity


def test_a_bee_s_elision_line_is_not_counted_as_a_tool_call_in_the_live_view() -> None:
    state = LiveState(run="r", problem="p", started_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    state.apply(Activity(bee="bee-1", text="read app.py", tool="read", step=1))
    state.apply(Activity(bee="bee-1", text="context: 3 old tool results elided (over the context budget: ~101234 → "
                                          "~95012 tokens)", step=2))
    row = state.bees["bee-1"]
    assert (row.tool_calls, row.step) == (1, 2)
    assert row.activity.startswith("context: 3 old tool results elided")
