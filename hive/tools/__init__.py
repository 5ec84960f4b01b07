"""The bees' tools: read-only by construction."""
