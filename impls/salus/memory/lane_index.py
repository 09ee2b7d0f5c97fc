"""A sorted index that finds the first entry at or after a key (or the last entry) whose value
reaches a threshold without looking at the entries in between.

:class:`~impls.salus.memory.lanes.LaneManager` keeps its lanes in two of them where walking its
lanes by room would take long, so that its best fit and its choice of a lane to grow are two
look-ups each that skip whole blocks of lanes, not walks over every lane.
The entries (a distinct key, a tuple of ints, and an int value) are kept in ascending key order
in blocks of at most ``2 * load``, each block with its last key and a bound on its values (at
least the largest; a removal leaves it as it was, and a look-up that scans a whole block for
nothing sets it to the largest): a look-up bisects to the first block, skips every block whose
bound is below the threshold and scans the blocks whose bound is not; adding or removing an
entry edits one block. With ``n`` entries an addition or removal costs about ``log n + load``,
and a look-up about ``n / load`` blocks plus ``2 * load`` entries for each block it scans; a
block scanned for nothing had a removal since it was last scanned, so such scans cost, over a
run, at most ``2 * load`` entries a removal.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterator

LOAD = 256   # entries per block (up to twice as many): a few hundred balances the two costs up to 10^5 lanes


class LaneIndex:
    """Entries ``(key, value)`` sorted by key (keys distinct), with :meth:`first_reaching`."""

    def __init__(self, load: int = LOAD):
        if load < 1:
            raise ValueError(f"load {load!r}; expected an int >= 1")
        self._load = load
        self._keys: list[list[tuple]] = []     # the blocks' keys, ascending within and across blocks
        self._values: list[list[int]] = []     # each key's value, in the same places
        self._last: list[tuple] = []           # each block's last key (where a key's block is found)
        self._top: list[int] = []              # each block's bound: >= its largest value
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[tuple]:
        """The keys in ascending order."""
        for keys in self._keys:
            yield from keys

    def __reversed__(self) -> Iterator[tuple]:
        """The keys in descending order."""
        for keys in reversed(self._keys):
            yield from reversed(keys)

    def items(self) -> Iterator[tuple[tuple, int]]:
        """The entries ``(key, value)`` in ascending key order."""
        for keys, values in zip(self._keys, self._values):
            yield from zip(keys, values)

    def add(self, key: tuple, value: int) -> None:
        """Add ``key`` (not already in the index) with ``value``."""
        self._len += 1
        if not self._keys:
            self._keys.append([key])
            self._values.append([value])
            self._last.append(key)
            self._top.append(value)
            return
        b = min(bisect.bisect_left(self._last, key), len(self._last) - 1)
        keys, values = self._keys[b], self._values[b]
        i = bisect.bisect_left(keys, key)
        keys.insert(i, key)
        values.insert(i, value)
        self._last[b] = keys[-1]
        if value > self._top[b]:
            self._top[b] = value
        if len(keys) > 2 * self._load:      # split in two halves
            half = len(keys) // 2
            self._keys[b:b + 1] = [keys[:half], keys[half:]]
            self._values[b:b + 1] = [values[:half], values[half:]]
            self._last[b:b + 1] = [keys[half - 1], keys[-1]]
            self._top[b:b + 1] = [max(values[:half]), max(values[half:])]

    def remove(self, key: tuple) -> None:
        """Remove ``key``; KeyError when the index does not hold it."""
        b = bisect.bisect_left(self._last, key)
        if b == len(self._last):
            raise KeyError(key)
        keys, values = self._keys[b], self._values[b]
        i = bisect.bisect_left(keys, key)
        if keys[i] != key:          # i < len(keys): key <= the block's last
            raise KeyError(key)
        del keys[i], values[i]
        self._len -= 1
        if not keys:
            del self._keys[b], self._values[b], self._last[b], self._top[b]
            return
        self._last[b] = keys[-1]        # the bound stays: still >= every value left

    def first_reaching(self, key: tuple, threshold: int) -> tuple[tuple, int] | None:
        """The entry ``(key, value)`` with the least key ``>= key`` whose value is ``>=
        threshold``; None when no entry is."""
        b = bisect.bisect_left(self._last, key)
        if b == len(self._last):
            return None
        if self._top[b] >= threshold:
            keys, values = self._keys[b], self._values[b]
            for i in range(bisect.bisect_left(keys, key), len(keys)):
                if values[i] >= threshold:
                    return keys[i], values[i]
        top = self._top
        for c in range(b + 1, len(top)):
            if top[c] >= threshold:
                values = self._values[c]
                i = next((i for i, v in enumerate(values) if v >= threshold), None)
                if i is not None:
                    return self._keys[c][i], values[i]
                top[c] = max(values)        # the bound was stale: make it the largest again
        return None

    def last_reaching(self, threshold: int) -> tuple[tuple, int] | None:
        """The entry ``(key, value)`` with the greatest key whose value is ``>= threshold``;
        None when no entry is."""
        top = self._top
        for c in range(len(top) - 1, -1, -1):
            if top[c] >= threshold:
                values = self._values[c]
                i = next((i for i in range(len(values) - 1, -1, -1) if values[i] >= threshold), None)
                if i is not None:
                    return self._keys[c][i], values[i]
                top[c] = max(values)        # the bound was stale: make it the largest again
        return None
