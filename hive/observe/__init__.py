"""Watching and auditing runs: the live view of ``hive start``, ``hive tail`` and ``hive audit``.

- :mod:`hive.observe.live`  the live view (a pure fold of events, rendered by rich or as plain lines)
- :mod:`hive.observe.tail`  the board in readable form as it grows, followed with watchfiles
- :mod:`hive.observe.audit` figures over every record of a run: funnel, gates, disputes, bees, labels

Nothing here is imported on ``hive --help``'s path; rich is imported only where a view is drawn.
"""
