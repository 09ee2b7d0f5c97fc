"""SLIDE (Chen et al., MLSys 2020): LSH-sampled sparse training for extreme classification.

Sub-packages, one idea per module (numba kernels in ``<idea>_kernels.py`` beside them; the
module map is in impls/slide/README.md):

- :mod:`impls.slide.data`        the XC text format, :class:`XCData`, the synthetic generator
- :mod:`impls.slide.core`        LSH families, hash tables, the sparse training step, evaluation
- :mod:`impls.slide.training`    the timed loops: SLIDE, dense and sampled-softmax PyTorch
- :mod:`impls.slide.experiments` what the registry runs (catalog.toml / catalog.py)
- command lines: ``python -m impls.slide.train``, ``python -m impls.slide.xc_stats``
"""

import os as _os

# numba's and torch's OpenMP runtimes share the cores within each step; spinning idle
# threads of one starve the other (README: "OpenMP passive waiting"). Passive waiting must
# be set before either runtime loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Transparent huge pages for torch's large CPU tensors: the dense baseline allocates
# batch x labels logits and gradients every step, and first-touch page faults on 4 KB pages
# dominate a fresh tensor's cost (NOTES.md, "Dense CPU baseline"). A documented
# PyTorch setting (read at the first large allocation); it helps SLIDE's torch GEMMs too.
_os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
