"""The timed training loops: SLIDE (numba) and the dense / sampled-softmax PyTorch baselines."""
