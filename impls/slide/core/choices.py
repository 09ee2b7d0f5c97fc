"""The values SLIDE's string knobs may take, in one place free of numba: ``SlideConfig.check``
validates against them, the command lines offer them, and :func:`impls.slide.core.lsh.make_lsh`
checks its own arguments with them."""
from __future__ import annotations

FAMILIES = ("simhash", "wta", "dwta")   # LSH families (lsh module doc)
INDEXES = ("concat", "reference")       # how a table combines its K hashes into a code
ZEROS = ("present", "absent")           # how DWTA reads a zero coordinate

CHOICES: dict[str, tuple[str, ...]] = {
    "lsh": FAMILIES, "index": INDEXES, "dwta_zeros": ZEROS,
    "adam": ("lazy", "dense"), "bucket_policy": ("fifo", "reservoir"),
    "mode": ("union", "topk", "threshold", "all"), "padding": ("batch", "sample"),
    "padding_sampler": ("uniform", "log-uniform"), "schedule": ("fixed", "exponential"),
    "upkeep": ("rising", "none"), "sampler": ("uniform", "log-uniform"),
}
