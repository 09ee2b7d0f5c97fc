"""Every knob of the SLIDE trainer, with the paper's / reference code's defaults."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from impls.slide.core.choices import CHOICES

PAPER_LR = 1e-4       # SLIDE paper / reference code
DEFAULT_LR = 1e-2     # chosen by measurement on the synthetic sets (see README)


class TrainingDiverged(ValueError):
    """The loss or a gradient stopped being a finite float32 number: the inputs' values, or the
    learning rate, are too large. A result after it would be a model of NaNs, so training stops."""

    def __init__(self, batch: int, what: str, why: str = "is not a finite float32 number"):
        super().__init__(f"training diverged at batch {batch}: {what} {why}; the "
                         f"feature values are too large for float32 arithmetic (TF-IDF rows are usually "
                         f"normalised), or --lr is: scale the values or lower --lr")


@dataclasses.dataclass
class SlideConfig:
    hidden: int = 128                 # paper: 128 ReLU
    batch: int = 256                  # paper: 256 (Amazon-670K), 128 (Delicious-200K)
    lr: float = DEFAULT_LR
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8                 # Adam's ε as TF's AdamOptimizer and the reference code place it
                                      # (the paper's ε-hat: added to sqrt(v) before the bias correction)
    adam: str = "lazy"                # "lazy": only touched rows; "dense": every parameter each batch
    init_std: float = 0.01            # reference code: N(0, 0.01) weights and biases
    output_bias: bool = True          # train the output layer's biases (False: fixed at 0, in SLIDE, whatever
                                      # weights it is given, and in the torch baselines)
    # LSH on the output layer
    lsh: str = "dwta"                 # paper: DWTA for Amazon-670K, SimHash for Delicious-200K
    K: int = 6                        # reference code (Config_amz.csv); the paper's text says 8, which with the
                                      # code's index retrieves ~10x fewer neurons than the paper's ~3,000 (NOTES.md)
    L: int = 50
    binsize: int = 8                  # WTA/DWTA bin size (reference code: 8)
    simhash_ratio: float = 1 / 3      # SimHash projection density (reference: dim/3)
    index: str = "reference"          # a table's code from its K hashes: "reference" (LSH.cpp's hashesToIndex:
                                      # (D)WTA hashes overlap by floor(ln binsize) bits, so buckets are coarse:
                                      # 9,556 codes at K=6) | "concat" (concatenated, folded to range_pow bits)
    dwta_zeros: str = "present"       # DWTA reads a ReLU zero as a value, as the reference code's getHash over
                                      # a dense layer ("present") | as missing, densified ("absent", the DWTA paper)
    range_pow: int | None = None      # log2 buckets per table; None: from the label count; either way at
                                      # most the codes' width (14 bits for the reference index at K=6)
    bucket_load: float = 2.5          # neurons per bucket targeted when range_pow is None
    bucket_capacity: int = 128        # reference code: 128
    bucket_policy: str = "fifo"       # "fifo" (reference) or "reservoir"
    # active set
    mode: str = "union"               # "union" | "topk" | "threshold" | "all" (no sampling: no tables; the
                                      # LSH fields are unused, and only their basic checks apply)
    topk: int = 1000                  # mode "topk": keep the k most frequent retrieved neurons
    threshold: int = 2                # mode "threshold": keep neurons found in >= threshold tables
    min_active: int | None = None     # pad with random neurons up to this; None: from min_active_fraction
    min_active_fraction: float = 0.005   # Config_amz.csv's Sparsity 0.005 (3,350 of 670k; the code's Mode 4
                                         # itself pads to 1,000 when < 1,500 are retrieved)
    padding: str = "sample"           # "sample": independent random neurons per sample (what the reference
                                      # code's per-sample draw intends; its draw reseeds from the clock, so the
                                      # samples of one second share a window, or one of a few: README, "Departures");
                                      # "batch": one random pool shared by the batch's samples, run as
                                      # dense GEMMs (as TF's sampled softmax): ~10x faster at 670k labels,
                                      # but it pushes few labels down per step and learns worse early
    padding_sampler: str = "uniform"  # mode "batch": how the shared pool is drawn. "uniform" (the reference's
                                      # random neurons) | "log-uniform": distinct labels drawn log-uniformly
                                      # over labels ranked by training frequency (TF's candidate sampler,
                                      # no log-Q correction): a named variant, not the paper's SLIDE

    max_active: int | None = None     # cap on the active set; None: L * bucket_capacity + labels
    # table refresh
    schedule: str = "exponential"     # "fixed" (reference: every 50 / 1000) | "exponential" (paper)
    rehash_every: int = 50
    rebuild_every: int = 1000
    rebuild_at_first_rehash: bool = True   # reference code: new hash functions at the first rehash (batch 50),
                                           # then every rebuild_every (`iter % 1000 == 49`); False: first at rebuild_every
    schedule_growth: float = 1.5      # exponential: each interval 1.5x the previous (50, 125, 237, ...)
    upkeep: str = "rising"            # between refreshes, after each batch: "rising" re-buckets the rows whose
                                      # logit on the batch's mean hidden vector the step raised (a departure, for
                                      # lr 100x the paper's; see README); "none": only the schedule's refreshes
    # sampled-softmax baseline (dense_torch, method "sampled"): candidates per batch
    sample_fraction: float = 0.2      # negatives drawn per batch as a fraction of the labels (paper: TF needed ~20%)
    sampler: str = "log-uniform"      # "log-uniform" (TF's default, over labels ranked by training frequency) | "uniform"
    in_batch_negatives: bool = True   # each sample's softmax also holds the batch's other true labels (TF's sampled
                                      # softmax shares them); False: its own labels and the drawn negatives only,
                                      # as SLIDE's own active set without its tables (a probe, NOTES.md)
    # execution
    threads: int | None = None        # numba threads; None: all
    chunks_per_thread: int = 4        # HOGWILD work units per thread (each has its own scratch)
    seed: int = 0

    def resolved(self, n_labels: int, max_labels_per_point: int) -> "SlideConfig":
        """Return a copy with the label-count-dependent defaults filled in."""
        c = dataclasses.replace(self)
        if c.min_active is None:
            c.min_active = int(math.ceil(c.min_active_fraction * n_labels))
        c.min_active = min(c.min_active, n_labels)
        if c.max_active is None:
            c.max_active = c.L * c.bucket_capacity + max_labels_per_point
        if c.mode == "all":
            c.max_active = n_labels
        c.max_active = max(min(c.max_active, n_labels), c.min_active, min(max_labels_per_point, n_labels))
        return c

    def check(self) -> None:
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected one of {', '.join(allowed)}")
        if self.batch < 1 or self.hidden < 1 or self.K < 1 or self.L < 1:
            raise ValueError("batch, hidden, K and L must be positive")
        if not 0 < self.sample_fraction <= 1:
            raise ValueError(f"sample_fraction={self.sample_fraction}; expected 0 < fraction <= 1")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
