"""SLIDE (Chen et al., MLSys 2020): LSH-sampled sparse training for extreme classification.

Modules, one idea each (numba kernels live in the ``_*_kernels`` modules beside them):

- :mod:`xc_format`  extreme-classification text format: validated reader (cached .npz), writer
- :mod:`xc_data`    :class:`XCData` (CSR features + CSR labels) and the synthetic generator
- :mod:`lsh`        SimHash, WTA and densified WTA hash families
- :mod:`tables`     L hash tables of capacity-bounded buckets (FIFO / reservoir), schedules
- :mod:`config`     :class:`SlideConfig`, every knob with the paper's default
- :mod:`network`    parameters, one LSH-sampled training step (HOGWILD over samples), Adam
- :mod:`evaluate`   exact dense P@k on a fixed shuffled test subset
- :mod:`trainer`    ``train(config, train, test, ...)`` -> plain dict (curve, samples/s, ...)
- :mod:`dense_torch` the dense PyTorch baseline with the same curve output
- :mod:`train`      command line: ``python -m impls.slide.train``
"""

import os as _os

# numba's and torch's OpenMP runtimes share the cores within each step; spinning idle
# threads of one starve the other (measured: a 256x128x20 torch.mm took 12 ms instead of
# 0.25 ms). Passive waiting must be set before either runtime loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Transparent huge pages for torch's large CPU tensors: the dense baseline allocates
# batch x labels logits (686 MB at 670k labels, batch 256) and gradients every step, and
# first-touch page faults on 4 KB pages cost ~0.5 s per such tensor on the dev VM
# (measured: np.empty + fill 0.5 s vs 0.07 s with THP). A documented PyTorch setting
# (read at the first large allocation); it helps SLIDE's torch GEMMs the same way.
_os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
