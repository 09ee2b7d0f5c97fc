"""Which runs of a SLIDE sweep ask for more threads than they will get: said once, in the
progress log, before any run trains."""
from __future__ import annotations

import os


def warn_crowded(experiment: str, specs: list[dict]) -> None:
    """Say once, in the progress log a suite run shows (stderr outside asv), which runs of
    ``specs`` ask for more threads than this process may use
    (:func:`~impls.harness.capabilities.effective_cpus`): they run crowded or cut down (their
    results record the threads they had), and runs that differ only in their thread count
    may measure one setting. Where numba's pool (``NUMBA_NUM_THREADS``) is smaller than those
    CPUs, the runs asking for more than the pool are named in a line of their own: each is cut
    to the pool (:func:`~impls.slide.training.trainer.set_threads`)."""
    import numba

    from impls.harness.capabilities import effective_cpus
    from impls.harness.progress import log as progress_log

    usable, pool = effective_cpus(), numba.config.NUMBA_NUM_THREADS
    asked = [spec for spec in specs if isinstance(spec.get("threads"), int)]
    crowded = [f"{spec['name']} ({spec['threads']})" for spec in asked if spec["threads"] > usable]
    if crowded:
        progress_log(f"warning: {experiment}: {', '.join(crowded)} ask for more threads than the {usable} CPU(s) "
                     "this process may use: they share them or are cut down (each result records its threads), "
                     "and runs differing only in threads may measure one setting")
    cut = [f"{spec['name']} ({spec['threads']})" for spec in asked if spec["threads"] > pool]
    if cut and pool < usable:
        setting = os.environ.get("NUMBA_NUM_THREADS")
        setting = f"NUMBA_NUM_THREADS={setting}" if setting else "NUMBA_NUM_THREADS unset: numba's default"
        progress_log(f"warning: {experiment}: {', '.join(cut)} ask for more threads than numba's pool of {pool} "
                     f"({setting}): each runs on {pool} "
                     "(its result records its threads), and runs differing only in threads may measure one "
                     "setting; unset NUMBA_NUM_THREADS or raise it to run them as asked")
