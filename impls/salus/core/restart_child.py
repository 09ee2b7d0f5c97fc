"""Child process of the "process restart" switching baseline.

``python -m impls.salus.core.restart_child WORKLOAD DEVICE CHECKPOINT`` imports torch and
the workload registry, builds the job, loads the checkpoint, synchronises the device
and prints ``READY <import_ms> <build_ms> <load_ms>``: what a job restarted from a
checkpoint pays before its first iteration, with the milliseconds of its three parts after
the interpreter started (importing torch and the registry; building the job; loading the
checkpoint and synchronising). Kept apart from :mod:`impls.salus.core.switching` so the child imports no more
than a restarted job would.
"""
from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m impls.salus.core.restart_child WORKLOAD DEVICE CHECKPOINT", file=sys.stderr)
        return 2
    workload, device, checkpoint = argv
    import os
    import time

    start = time.perf_counter()
    import torch

    if os.environ.get("SALUS_CHILD_THREADS"):
        torch.set_num_threads(int(os.environ["SALUS_CHILD_THREADS"]))
    from impls.salus.core.workloads import build_job

    imported = time.perf_counter()
    job = build_job(workload, device, seed=0, warm=False)
    built = time.perf_counter()
    job.load_state_dict(torch.load(checkpoint, map_location=device, weights_only=True))
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
    loaded = time.perf_counter()
    parts = (imported - start, built - imported, loaded - built)
    print("READY " + " ".join(f"{1e3 * seconds:.3f}" for seconds in parts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
