"""The least memory a training run holds at once, checked before anything large is built.

Drawing hash functions or weights at sizes this machine cannot hold does not fail at once:
``--hidden 1000000`` spends minutes sorting ``K*L`` random rows of a million before the model's
allocation runs out. :func:`check_fits` raises the ``MemoryError`` up front instead, which
:func:`impls.harness.cli.command` reports as "not enough memory" with the flags to check.
"""
from __future__ import annotations

from impls.harness.memory_limit import available_bytes
from impls.slide.core.config import SlideConfig
from impls.slide.core.lsh import draw_bytes
from impls.slide.experiments.run_failures import on_cuda
from impls.slide.flag_scope import builds_tables

FLOAT32 = 4


def least_bytes(config: SlideConfig, n_features: int, n_labels: int, method: str, device: str) -> int:
    """Return the fewest bytes of host memory a run of ``method`` (slide / dense / sampled) on
    ``device`` holds at once, a lower bound (no allocation is made). The weights, ``(features +
    labels) x hidden`` float32 and the biases, are held three times with Adam's two moments
    (once on the host for a CUDA run: the draw before the move). SLIDE outside ``mode="all"``
    also holds its tables (``L x labels`` int32 ids), and draws its hash functions
    (:func:`~impls.slide.core.lsh.draw_bytes`) while the weights are held."""
    weights = FLOAT32 * (n_features + n_labels + 1) * config.hidden + FLOAT32 * n_labels
    if not builds_tables(method, config.mode):
        return weights if method != "slide" and on_cuda(device) else 3 * weights
    drawn = draw_bytes(config.lsh, config.K, config.L, config.hidden, config.binsize, config.simhash_ratio)
    return max(weights + drawn, 3 * weights + FLOAT32 * config.L * n_labels)


HEADER_FAR = 10   # a header's D or L this many times the ids the rows use is named as the likely cause


def ids_in_use(*splits) -> tuple[int, int]:
    """``(features, labels)`` the rows of ``splits`` (XCData) use: the largest feature id and the
    largest label id over all of them, each plus 1 (0 where no row holds one)."""
    def used(ids):
        return max((int(a.max()) + 1 for a in ids if a.size), default=0)
    return used([s.indices for s in splits]), used([s.labels for s in splits])


def header_note(where: str, n_features: int, n_labels: int, in_use: tuple[int, int]) -> str:
    """For a header (of ``where``) whose D or L is :data:`HEADER_FAR` times or more what the rows
    use (``in_use``, :func:`ids_in_use`): a clause naming the header's count and the largest id
    in use, ending in "; "; "" otherwise."""
    far = [(name, count, used) for name, count, used in (("D", n_features, in_use[0]), ("L", n_labels, in_use[1]))
           if count >= HEADER_FAR * max(used, 1)]
    if not far:
        return ""
    said = " and ".join(f"{name}={count:,} but its rows use ids up to {used - 1:,}" for name, count, used in far)
    return (f"{where}'s header says {said} (a typo, or a hashed feature space?): the model is sized by the "
            "header, so write the largest id + 1 there; ")


def check_fits(config: SlideConfig, n_features: int, n_labels: int, method: str, device: str,
               in_use: tuple[int, int] | None = None, where: str = "the data") -> None:
    """Raise ``MemoryError`` (one line: the run's least size and what is available, in GiB,
    led by :func:`header_note` where ``in_use``, the ids the rows of ``where`` use, are far
    below the header's counts) where :func:`least_bytes` exceeds :func:`available_bytes`;
    return quietly otherwise, or where the available memory cannot be read."""
    need, have = least_bytes(config, n_features, n_labels, method, device), available_bytes()
    if have is not None and need > have:
        hashing = (f"--lsh {config.lsh} --K {config.K} --L {config.L}, "
                   if builds_tables(method, config.mode) else "")
        note = header_note(where, n_features, n_labels, in_use) if in_use else ""
        raise MemoryError(f"{note}this {method} run holds at least {need / 2**30:.1f} GiB at once with --hidden "
                          f"{config.hidden}, {hashing}{n_features} features and {n_labels} labels; this process "
                          f"may allocate {have / 2**30:.1f} GiB")
