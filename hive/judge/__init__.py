"""The judge: typed questions, a three-zone policy, a fail-open cascade of tiers, and the ledger."""
