"""The embedded, offline ``local`` judge tier: MiniLM sentence embeddings plus small calibrated gate heads."""

from hive.judge.local.tier import LocalTier

__all__ = ["LocalTier"]
