"""dlsysbench: the three systems (bandana, slide, salus) and the harness that runs them."""
import sys as _sys

from impls.harness import cpus as _cpus

# before numba, faiss or torch size their thread pools (numba's is fixed once it is imported)
_cpus.cap_thread_pools(names=_cpus.POOL_VARIABLES if "numba" not in _sys.modules else ("OMP_NUM_THREADS",))
# a thread variable numba or OpenMP would refuse or misread: every command refuses it (harness.cli)
_cpus.problem = _cpus.thread_variable_problem()

if _sys.argv[:1] == ["-m"]:    # ``python -m impls...`` is importing its module (runpy sets argv[0] later)
    from impls.harness import interrupts as _interrupts

    _interrupts.guard_startup()
    if _cpus.problem:          # before the module's own imports meet it in numba or OpenMP
        print(f"error: {_cpus.problem}", file=_sys.stderr)
        raise SystemExit(2)
