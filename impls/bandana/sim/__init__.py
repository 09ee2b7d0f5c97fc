"""The DRAM-cache simulator (numba kernels beside the plain API), its reference, miniature simulation."""
