"""The bee's inbox: items the coordinator delivered, waiting for the bee's next model call. Pure: no I/O.

Rules (they follow the prior art, §2.5 and §3.4 of the reference):

- Items wait until the bee's next model call; then the whole inbox is emptied into one message.
- A correction says an earlier note no longer holds. A plain copy of that earlier note still waiting is
  dropped and reported as *withheld*; a plain copy of the later note is merged into the correction, which
  carries its words. A plain copy of a corrected note that arrives after its correction is withheld too.
- A conflict carries both sides, so plain copies of either side still waiting are merged into it.
- The same item delivered twice waits once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hive.records import InboxItem


@dataclass(frozen=True)
class Drained:
    """What one emptying of the inbox produced."""

    items: tuple[InboxItem, ...]
    """Items to inject, in arrival order."""
    withheld: tuple[str, ...]
    """Ids of stale plain notes that were dropped because a correction says they no longer hold."""

    @property
    def delivered(self) -> list[str]:
        """Ids of every note whose words go into the bee's context (both sides of a conflict)."""
        ids: list[str] = []
        for item in self.items:
            for note in (item.note, item.replaces if item.kind == "conflict" else None):
                if note is not None and note not in ids:
                    ids.append(note)
        return ids


@dataclass
class Inbox:
    """Delivered items waiting for the bee's next model call."""

    _waiting: list[InboxItem] = field(default_factory=list)
    _withheld: list[str] = field(default_factory=list)
    _corrected: set[str] = field(default_factory=set)
    """Notes a correction has replaced, so a late plain copy of one is withheld too."""

    def __len__(self) -> int:
        return len(self._waiting)

    def add(self, items: list[InboxItem]) -> None:
        for item in items:
            self._add_one(item)

    def _add_one(self, item: InboxItem) -> None:
        if item in self._waiting:
            return
        if item.kind == "note":
            if item.note in self._corrected:
                self._withhold(item.note)
            elif not any(item.note in _carried(other) for other in self._waiting if other.kind != "note"):
                self._waiting.append(item)
            return
        if item.kind == "correction" and item.replaces is not None:
            self._corrected.add(item.replaces)
            stale = [w for w in self._waiting if w.kind == "note" and w.note == item.replaces]
            for w in stale:
                self._waiting.remove(w)
                self._withhold(w.note)
        carried = _carried(item)
        self._waiting = [w for w in self._waiting if not (w.kind == "note" and w.note in carried)]
        self._waiting.append(item)

    def _withhold(self, note: str) -> None:
        if note not in self._withheld:
            self._withheld.append(note)

    def drain(self) -> Drained:
        """Empty the inbox: everything waiting, and the ids withheld since the last drain."""
        drained = Drained(items=tuple(self._waiting), withheld=tuple(self._withheld))
        self._waiting.clear()
        self._withheld.clear()
        return drained

    @property
    def has_withheld(self) -> bool:
        return bool(self._withheld)


def _carried(item: InboxItem) -> set[str]:
    """The notes whose words this item carries."""
    if item.kind == "conflict" and item.replaces is not None:
        return {item.note, item.replaces}
    return {item.note}
