"""The bee's inbox: items the coordinator delivered, waiting for the bee's next model call. Pure: no I/O.

Rules (they follow the prior art, §2.5 and §3.4 of the reference):

- Items wait until the bee's next model call; then the whole inbox is emptied into one message.
- A correction says an earlier note no longer holds. A plain copy of that earlier note still waiting is
  dropped and reported as *withheld*; a plain copy of the later note is folded into the correction, which
  carries its words. A plain copy of a corrected note that arrives after its correction is withheld too.
- A conflict carries both sides, so plain copies of either side waiting with it are folded into it.
- The same item delivered twice waits once.

A folded plain copy counts as delivered: its words reach the bee inside the correction or conflict.
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
    folded: tuple[str, ...] = ()
    """Ids of plain notes whose words went in inside a correction or conflict instead of on their own line."""

    @property
    def delivered(self) -> list[str]:
        """Ids of the notes put into the bee's context: each item's note, then the folded plain copies."""
        return list(dict.fromkeys([*(item.note for item in self.items), *self.folded]))


@dataclass
class Inbox:
    """Delivered items waiting for the bee's next model call."""

    _waiting: list[InboxItem] = field(default_factory=list)
    _withheld: list[str] = field(default_factory=list)
    _folded: list[str] = field(default_factory=list)
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
                _append_once(self._withheld, item.note)
            elif any(item.note in _carried(other) for other in self._waiting if other.kind != "note"):
                _append_once(self._folded, item.note)
            else:
                self._waiting.append(item)
            return
        if item.kind == "correction" and item.replaces is not None:
            self._corrected.add(item.replaces)
        carried = _carried(item)
        kept: list[InboxItem] = []
        for waiting in self._waiting:
            if waiting.kind != "note" or waiting.note not in carried:
                kept.append(waiting)
            elif item.kind == "correction" and waiting.note == item.replaces:
                _append_once(self._withheld, waiting.note)
            else:
                _append_once(self._folded, waiting.note)
        self._waiting = [*kept, item]

    def drain(self) -> Drained:
        """Empty the inbox: everything waiting, and the ids withheld or folded since the last drain."""
        drained = Drained(items=tuple(self._waiting), withheld=tuple(self._withheld), folded=tuple(self._folded))
        self._waiting.clear()
        self._withheld.clear()
        self._folded.clear()
        return drained


def _carried(item: InboxItem) -> set[str]:
    """The notes whose words this item carries (a correction also names the note it replaces)."""
    if item.replaces is not None and item.kind in ("conflict", "correction"):
        return {item.note, item.replaces}
    return {item.note}


def _append_once(ids: list[str], note: str) -> None:
    if note not in ids:
        ids.append(note)
