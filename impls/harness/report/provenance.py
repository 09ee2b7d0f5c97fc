"""Which experiment a tracked number comes from, and whether its data are synthetic.

A benchmark's class names its experiment through its ``setup_cache``
(``run_and_store("<experiment>"[, "<device>"])`` in ``benchmarks/runs``); an artifact
through the registry's ``artifact`` names. The experiment's ``synthetic`` flag says
whether its inputs are synthetic (generated traces and sets) or not (a real data set, or
this machine's own device, as fio measures it).
"""
from __future__ import annotations

import functools
import re

_RUN_CALL = re.compile(r"""run_and_store\(\s*["']([\w.]+)["']\s*(?:,\s*["']([\w:]+)["'])?""")

SYNTHETIC, NOT_SYNTHETIC, PARTLY_SYNTHETIC = "synthetic", "not synthetic", "partly synthetic"


def experiment_of(benchmark: str) -> tuple[str, str] | None:
    """``(experiment, device)`` behind asv benchmark ``benchmark`` (``module.Class.method``),
    read from its class's ``setup_cache`` in this checkout; None when it cannot be told."""
    module, _, rest = benchmark.partition(".")
    return _class_experiment(module, rest.partition(".")[0])


@functools.cache
def _benchmark_class(module: str, cls: str) -> type | None:
    """Class ``cls`` of ``benchmarks.<module>`` in this checkout; None when there is none."""
    import importlib

    try:
        return getattr(importlib.import_module(f"benchmarks.{module}"), cls)
    except Exception:      # noqa: BLE001 - another checkout's benchmark: not known here
        return None


@functools.cache
def _class_experiment(module: str, cls: str) -> tuple[str, str] | None:
    import inspect

    try:
        found = _RUN_CALL.search(inspect.getsource(getattr(_benchmark_class(module, cls), "setup_cache")))
    except Exception:      # noqa: BLE001 - no such class, or a setup_cache of its own
        return None
    return (found.group(1), found.group(2) or "cpu") if found else None


def _declared_synthetic(benchmark: str) -> bool | None:
    """A benchmark class outside the registry (a timing of its own inputs) says
    ``synthetic = True`` / ``False`` itself; None when it does not, or cannot be read."""
    module, _, rest = benchmark.partition(".")
    value = getattr(_benchmark_class(module, rest.partition(".")[0]), "synthetic", None)
    return value if isinstance(value, bool) else None


def data_kind(benchmarks: tuple[str, ...]) -> str | None:
    """:data:`SYNTHETIC` when every one of ``benchmarks`` (asv names, or ``artifact:<name>``)
    comes from an experiment on synthetic data (or a benchmark class outside the registry that
    says ``synthetic = True``), :data:`NOT_SYNTHETIC` when none does, :data:`PARTLY_SYNTHETIC`
    when some do, None when it cannot be told for one of them."""
    from impls.harness import experiments

    kinds = set()
    for name in benchmarks:
        entry = None
        try:
            if name.startswith("artifact:"):
                artifact = name.split(":", 1)[1]
                entry = next((e for e in experiments.discover().values()
                              if artifact in (e.artifact, e.artifact_for("cuda"))), None)
            else:
                found = experiment_of(name)
                entry = experiments.get(found[0]) if found else None
        except Exception:  # noqa: BLE001 - an experiment this checkout does not have
            entry = None
        synthetic = entry.synthetic if entry is not None else _declared_synthetic(name)
        if synthetic is None:
            return None
        kinds.add(SYNTHETIC if synthetic else NOT_SYNTHETIC)
    return kinds.pop() if len(kinds) == 1 else PARTLY_SYNTHETIC if kinds else None


def artifact_of(benchmark: str) -> str | None:
    """The artifact behind ``benchmark`` (an asv name, or ``artifact:<name>``): the name after
    ``artifact:``, else its experiment's artifact for its device; None when it cannot be told."""
    from impls.harness import experiments

    if benchmark.startswith("artifact:"):
        return benchmark.split(":", 1)[1]
    found = experiment_of(benchmark)
    try:
        return experiments.get(found[0]).artifact_for(found[1]) if found else None
    except Exception:  # noqa: BLE001 - an experiment this checkout does not have
        return None
