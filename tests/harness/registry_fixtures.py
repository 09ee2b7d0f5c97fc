"""Generators and loaders that the registry tests' manifests name (importable from tests/)."""
from __future__ import annotations

import numpy as np

CALLS = {"generate": 0, "parse": 0}


def generate_ramp(seed: int, rows: int, scale: float = 1.0) -> dict[str, np.ndarray]:
    CALLS["generate"] += 1
    rng = np.random.default_rng(seed)
    return {"values": rng.standard_normal(rows) * scale, "ids": np.arange(rows)}


def parse_numbers(path) -> dict[str, np.ndarray]:
    CALLS["parse"] += 1
    return {"numbers": np.loadtxt(path, dtype=np.int64, ndmin=1)}
