"""SLIDE's experiments: the sizes schemas of their profile tables and the ``run`` adapters.

The experiments themselves (name, artifact, requirements, paper figure) are declared as
data in ``catalog.toml`` beside this file (see impls.harness.experiments).

Light on purpose: torch and numba are imported only when an experiment runs.
"""
from __future__ import annotations

import re
import typing
from typing import Any, Mapping

from impls.harness.experiments import sizes_schema
from impls.harness.size_checks import MAX_THREADS, KnownTable, NamedEntries

_EVALUATION = {
    "dataset": str, "time_budget_s": float, "eval_every": int, "eval_first_s": float,
    "eval_growth": float, "eval_at_start": bool, "eval_points": int, "target_fraction": float,
}
# the types of the keys sweeps.RUN_KEYS names (a run's other keys are SlideConfig fields)
_RUN_TYPES = {"name": str, "method": str, "device": str, "threads": int, "requires": list[str],
              "time_budget_s": float, "warmup_steps": int, "dataset": str}
_DEVICE = re.compile(r"cpu|cuda(:\d+)?")


def run_fields() -> dict[str, Any]:
    """The keys a run of a SLIDE sweep may have, with their types: ``sweeps.RUN_KEYS`` and
    every ``SlideConfig`` field (imported now: validation, not declaration, pays for it)."""
    from impls.slide.core.config import SlideConfig
    from impls.slide.experiments.sweeps import RUN_KEYS

    config = typing.get_type_hints(SlideConfig)
    return {**config, **{key: _RUN_TYPES.get(key, config.get(key, object)) for key in RUN_KEYS}}


def run_problems(run: Mapping[str, Any]) -> list[str]:
    """The problems of one run whose keys and types are right: ``threads`` an int in
    [1, MAX_THREADS], ``time_budget_s`` > 0, ``device`` cpu, cuda or cuda:N, ``method`` a known
    one, its SlideConfig fields accepted by ``SlideConfig.check``; one message each."""
    from impls.slide.core.config import SlideConfig
    from impls.slide.experiments.sweeps import METHOD_ALIASES, config_of

    problems = []
    threads = run.get("threads")
    if threads is not None and not 1 <= threads <= MAX_THREADS:
        problems.append(f"threads {threads!r} must be >= 1 and <= {MAX_THREADS}")
    if "time_budget_s" in run and not run["time_budget_s"] > 0:
        problems.append(f"time_budget_s {run['time_budget_s']!r} must be > 0 (seconds of training)")
    if "device" in run and not _DEVICE.fullmatch(run["device"]):
        problems.append(f"device {run['device']!r} is not cpu, cuda or cuda:N")
    if run["method"] not in METHOD_ALIASES:
        problems.append(f"method {run['method']!r}; expected one of {', '.join(METHOD_ALIASES)}")
    if not problems:
        try:
            SlideConfig(**config_of(dict(run))).check()
        except ValueError as err:
            problems.append(str(err))
    return problems


# the keys slide_sweep sets on every run itself, which its ``base`` would set in vain
_SWEEP_SETS = ("batch", "threads")


def base_fields() -> dict[str, Any]:
    """The keys ``[slide_sweep].base`` may name, with their types: the ``SlideConfig`` fields."""
    from impls.slide.core.config import SlideConfig

    return typing.get_type_hints(SlideConfig)


def base_problems(base: Mapping[str, Any]) -> list[str]:
    """The problems of ``[slide_sweep].base``: a key the sweep sets on every run itself
    (``batch``, ``threads``), else ``SlideConfig.check``'s problem with it over the defaults."""
    from impls.slide.core.config import SlideConfig

    own = [k for k in _SWEEP_SETS if k in base]
    if own:
        return [f"{k!r} is set on every run by the sweep ('batches', 'hash_batch', 'threads'); "
                "remove it from base" for k in own]
    try:
        SlideConfig(**base).check()
    except ValueError as err:
        return [str(err)]
    return []


_RUNS = NamedEntries(run_fields, required=("method",), check=run_problems, pairs="comparisons")
_POSITIVE = ("time_budget_s",)
sizes_schema("slide_train", {**_EVALUATION, "runs": _RUNS, "comparisons": list[list[str]]}, positive=_POSITIVE)
sizes_schema("slide_delicious", {**_EVALUATION, "runs": _RUNS, "comparisons": list[list[str]]}, positive=_POSITIVE)
sizes_schema("slide_real", {**_EVALUATION, "runs": _RUNS}, positive=_POSITIVE)
sizes_schema("slide_sweep", {
    **_EVALUATION, "threads": int, "batches": list[int], "batch_methods": list[str], "hash_batch": int,
    "hash_families": list[list[int | str]], "base": KnownTable(base_fields, check=base_problems),
}, positive=_POSITIVE)


def time_to_accuracy(sizes, *, device="cpu", progress=None):
    from impls.slide.experiments import sweeps as experiments

    return experiments.time_to_accuracy_sweep(progress=progress, s=sizes)


def delicious(sizes, *, device="cpu", progress=None):
    from impls.slide.experiments import sweeps as experiments

    return experiments.delicious_sweep(progress=progress, s=sizes)


def real_amazon(sizes, *, device="cpu", progress=None):
    from impls.slide.experiments import sweeps as experiments

    return experiments.real_amazon_run(progress=progress, s=sizes)


def sweeps(sizes, *, device="cpu", progress=None):
    from impls.slide.experiments import secondary

    return secondary.secondary_sweep(progress=progress, s=sizes)
