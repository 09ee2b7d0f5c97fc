"""The block geometry of the suite's simulation experiments: 128-byte vectors in 4 KB blocks
(32 a block), as Bandana's paper sizes its embedding rows and NVM reads. Kept apart from the
experiments so that light modules (the figures) can read it without the simulator."""

VECTOR_BYTES = 128
BLOCK_BYTES = 4096
