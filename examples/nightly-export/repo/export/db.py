"""The database layer (an in-memory stand-in with the production table's shape)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Customer:
    id: int
    name: str
    email: str | None
    created_hour: int


def fetch_customers() -> list[Customer]:
    """Yesterday's customers, ordered by id. Some have no email on file (NULL)."""
    rows = []
    for i in range(1, 1004):
        email = None if i % 84 == 0 else f"user{i}@example.com"
        rows.append(Customer(id=i, name=f"Customer {i}", email=email, created_hour=i % 24))
    return rows
