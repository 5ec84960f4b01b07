"""The nightly customer export."""
