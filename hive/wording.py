"""Small pieces of wording shared by everything that writes for people (tool results, views, ledger reasons)."""

from __future__ import annotations


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 note``, ``3 notes`` (or ``words`` when the plural is not ``word`` + ``s``)."""
    return f"{count} {word if count == 1 else (words or word + 's')}"
