"""Settings of the nightly export."""

# Rows are written in batches so that a large export never holds the whole CSV in memory.
BATCH_SIZE = 250

# The export covers the previous day, cut at midnight UTC. Stamps are stored in UTC too.
CUTOFF_HOUR = 0
TIMEZONE = "UTC"

OUTPUT_NAME = "customers-{day}.csv"
