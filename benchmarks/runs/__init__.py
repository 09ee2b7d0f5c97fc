"""The experiment runs the benchmark classes read: one asv ``setup_cache`` per experiment and
device, one module per system.

Each function runs its experiment once through the registry (``run_and_store``: the current
profile's sizes, the artifact stored for the report) and returns the result, or a skip
marker that the classes' ``setup`` turns into asv's skip. asv keys a setup cache by its
module and defining line, so every (experiment, device) has its own line: a CUDA class never
reuses the CPU run, and classes naming the same function share one run. Each module gives
its functions asv's limit on one run (asv's default, the benchmark's 60 s, is far shorter).
"""
from impls.harness import profiles

FULL_LIMIT_S = 72 * 3600


def limit(seconds: int) -> int:
    """asv's limit on one experiment run, in seconds: ``seconds`` under smoke and quick;
    :data:`FULL_LIMIT_S` under full, whose paper-scale runs take hours by design (asv stops a
    run at its limit, and a stopped run stores nothing, so a limit below the profile's own
    budgets would throw the hours away; ``tests/test_benchmark_modules.py`` checks them)."""
    return FULL_LIMIT_S if profiles.current_profile() == "full" else seconds
