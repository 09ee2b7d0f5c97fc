"""A value in an artifact record at a claim's dotted path (``reports/claims.toml``'s
``path = "data.key.key"``)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def walk(record: Any, path: str) -> Any:
    """The value at dotted ``path`` in ``record``: a key of a mapping, an index of a list, or
    ``key=value`` for the one item of a list of mappings whose ``key`` is ``value`` (e.g.
    ``runs.name=slide``; a value's own dots are part of it where an item has that value:
    ``points.cache_fraction=0.05.hit_rate``, ``runs.lr=2.5e-05.p_at_1``: the longest value an
    item has is taken). Raises KeyError naming the path from the first part that does not
    resolve."""
    node = record
    parts = path.split(".")
    i = 0
    while i < len(parts):
        part = parts[i]
        key, eq, wanted = part.partition("=")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, list) and eq and key:
            for used in range(len(parts) - i, 0, -1):      # the value with the most of the parts after it
                value = ".".join([wanted, *parts[i + 1:i + used]])
                matches = [item for item in node if isinstance(item, Mapping) and str(item.get(key)) == value]
                if len(matches) == 1:
                    break
            else:
                raise KeyError(".".join(parts[i:]))
            node = matches[0]
            i += used
            continue
        else:
            raise KeyError(".".join(parts[i:]))
        i += 1
    return node
