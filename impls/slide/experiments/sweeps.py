"""SLIDE experiments for asv classes and the report: each returns plain data.

Sizes come from ``impls/profiles.toml``: ``[slide_train.<profile>]`` (the time-to-accuracy
sweep on the Amazon-670K-shaped set: one run per named spec, each in a fresh process)
and ``[slide_sweep.<profile>]`` (batch size and hash family on a set that the profile may
make smaller: :mod:`impls.slide.experiments.secondary`). A benchmark class only says which
experiment and which run.

Time to target, targets and speed-ups: :mod:`impls.slide.experiments.targets`.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from impls.harness import fresh_process
from impls.slide.core.config import SlideConfig
from impls.slide.data.dataset import XCData, from_registry, raise_if_broken, xc_datasets
from impls.slide.experiments.crowding import warn_crowded
from impls.slide.experiments.run_failures import failed_run, for_want_of_resources, on_cuda, settle
from impls.slide.experiments.targets import add_targets, speedup

METHOD_ALIASES = {"slide": ("slide", "cpu"), "dense": ("dense", "cpu"), "sampled": ("sampled", "cpu"),
                  "dense-torch": ("dense", "cpu"), "dense-torch-cuda": ("dense", "cuda"),
                  "sampled-torch": ("sampled", "cpu"), "sampled-torch-cuda": ("sampled", "cuda")}

RUN_KEYS = ("name", "method", "device", "threads", "requires", "time_budget_s", "warmup_steps", "dataset")


def resolve_method(method: str, device: str | None = None) -> tuple[str, str]:
    """``(method, device)`` for a method name or one of the older aliases (dense-torch-cuda...)."""
    if method not in METHOD_ALIASES:
        raise ValueError(f"method={method!r}; expected one of {', '.join(METHOD_ALIASES)}")
    m, d = METHOD_ALIASES[method]
    return m, device or d


def sizes(profile: str | None = None, experiment: str = "slide_train") -> dict[str, Any]:
    """Return the ``[<experiment>.<profile>]`` table of ``impls/profiles.toml``."""
    from impls.harness import profiles

    return profiles.sizes(experiment, profile)


def data(profile: str | None = None, dataset: str | None = None) -> tuple[XCData, XCData, dict]:
    return from_registry(dataset or sizes(profile)["dataset"], profile)


def label_space(profile: str | None = None) -> tuple[int, int]:
    """(features, labels) of the profile's training set: from its synthetic recipe when that
    names both (the table-refresh timings need no data, and a 670k-label set takes seconds
    to load), else from the loaded data."""
    from impls.harness import registry

    name = sizes(profile)["dataset"]
    manifest = registry.manifests()[name]
    if manifest.synthetic:
        params = registry.recipe_params(manifest, profile)
        if "n_features" in params and "n_labels" in params:
            return int(params["n_features"]), int(params["n_labels"])
    train, _, _ = data(profile)
    return train.n_features, train.n_labels


def eval_kwargs(s: dict) -> dict[str, Any]:
    """The trainer's budget and evaluation-schedule keywords from profile table ``s``."""
    return dict(time_budget_s=s["time_budget_s"], eval_every=s.get("eval_every") or None,
                eval_points=s["eval_points"], eval_first_s=s.get("eval_first_s"),
                eval_growth=s.get("eval_growth", 1.6), eval_at_start=s.get("eval_at_start", True))


def train_method(method: str, config: SlideConfig, train_data: XCData, test_data: XCData,
                 device: str | None = None, **kw: Any) -> dict[str, Any]:
    """Train one method (slide / dense / sampled, or an alias) and return the trainer's dict."""
    method, device = resolve_method(method, device)
    if method == "slide":
        if device != "cpu":
            raise ValueError("SLIDE runs on the CPU only")
        from impls.slide.training.trainer import train
        return train(config, train_data, test_data, **kw)
    from impls.slide.training.dense_torch import train_dense
    return train_dense(config, train_data, test_data, device=device, method=method, **kw)


def training_run(method: str = "slide", threads: int | None = 2, profile: str | None = None,
                 time_budget_s: float | None = None, device: str | None = None,
                 dataset: str | None = None, warmup_steps: int | None = None, **config: Any) -> dict[str, Any]:
    """Train ``method`` on the profile's set with the profile's evaluation schedule; the
    trainer's result dict (curve, samples_per_second, final_p_at_1, peak_rss_bytes, ...)."""
    return _training_run(sizes(profile), method, threads, profile, time_budget_s, device, dataset,
                         warmup_steps, **config)


def run_kwargs(s: dict, method: str, device: str | None = None, time_budget_s: float | None = None,
               warmup_steps: int | None = None) -> dict[str, Any]:
    """The trainer's keyword arguments for one run of profile table ``s``: the table's evaluation
    schedule and budget, the run's own ``time_budget_s`` when set, and ``warmup_steps`` for the
    torch baselines (SLIDE has none)."""
    kw = eval_kwargs(s)
    if time_budget_s:
        kw["time_budget_s"] = time_budget_s
    if warmup_steps is not None and resolve_method(method, device)[0] != "slide":
        kw["warmup_steps"] = warmup_steps
    return kw


def _training_run(s: dict, method: str, threads: int | None, profile: str | None, time_budget_s: float | None,
                  device: str | None, dataset: str | None, warmup_steps: int | None, **config: Any) -> dict[str, Any]:
    spec = {**config, "method": method, "threads": threads, "device": device, "time_budget_s": time_budget_s,
            "dataset": dataset, "warmup_steps": warmup_steps}
    return _run_spec(s, spec, profile)


def refresh_network(profile: str | None = None, threads: int | None = 2, **config: Any):
    """A fresh, untrained ``SlideNetwork`` at the profile's label space (:func:`label_space`),
    kernels compiled and ``threads`` set: what the table-refresh timings refresh."""
    from impls.slide.core.network import SlideNetwork
    from impls.slide.training.trainer import set_threads, warm_up

    n_features, n_labels = label_space(profile)
    cfg = SlideConfig(threads=threads, **config)
    set_threads(threads)
    warm_up(cfg)
    return SlideNetwork(cfg, n_features, n_labels, 64)


REFRESH_KINDS = ("rehash", "rebuild")


def refresh_every_row(net, kind: str) -> None:
    """Refresh ``net``'s tables as training with dense Adam does, every output row having
    changed since the last refresh: ``kind`` "rehash" marks all ``n_labels`` rows dirty (as a
    dense-Adam step does), then re-hashes each under the same hash functions and rebuilds the
    CSR; "rebuild" draws new hash functions and re-hashes every row. Returns None."""
    if kind not in REFRESH_KINDS:
        raise ValueError(f"kind={kind!r}; expected one of {', '.join(REFRESH_KINDS)}")
    if kind == "rehash":
        net.dirty[:] = 1
    net.refresh_tables(rebuild=kind == "rebuild")


def table_refresh_seconds(profile: str | None = None, threads: int | None = 2, repeats: int = 3,
                          **config: Any) -> dict[str, float]:
    """Median seconds of ``repeats`` calls of :func:`refresh_every_row` per kind on one
    network (each call after a refresh of it): ``rehash`` (every output row re-hashed, same
    hash functions, marking them dirty included) and ``rebuild`` (new hash functions too);
    ``table_bytes``: the tables' bytes."""
    net = refresh_network(profile, threads, **config)
    out = {}
    for kind in REFRESH_KINDS:
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            refresh_every_row(net, kind)
            times.append(time.perf_counter() - t)
        out[kind] = float(np.median(times))
    out["table_bytes"] = net.tables.nbytes
    return out


def skip_reason(spec: dict) -> str | None:
    """Why run spec ``spec`` cannot run here (a capability it needs is missing: its
    ``requires``, and CUDA for a ``cuda`` or ``cuda:N`` device), or None."""
    from impls.harness import capabilities

    needs = list(spec.get("requires", []))
    if on_cuda(spec.get("device")) and "cuda" not in needs:
        needs.append("cuda")
    return capabilities.missing_reason(*needs) if needs else None


def config_of(spec: dict, threads_default: int | None = 2) -> dict[str, Any]:
    """The ``SlideConfig`` fields of run spec ``spec`` (everything but the run keys), threads included."""
    cfg = {k: v for k, v in spec.items() if k not in RUN_KEYS}
    cfg["threads"] = spec.get("threads", threads_default)
    return cfg


def _run_spec_in_child(kwargs: dict[str, Any]) -> dict[str, Any]:
    return _run_spec(kwargs.get("sizes") or sizes(kwargs["profile"]), kwargs["spec"], kwargs["profile"])


def _run_spec(s: dict[str, Any], spec: dict[str, Any], profile: str | None) -> dict[str, Any]:
    """:func:`run_spec_on` on the run's dataset (its own, else the table's) from the registry,
    with ``source``: where the data came from. On real data (a user's files) the command line's
    input warnings (:func:`~impls.slide.input_warnings.data_warnings`) go to the progress log first,
    and into the result as ``input_warnings`` (lines; absent where there are none), which the
    figure shows: under a bare ``asv run`` no log is shown."""
    from impls.harness.progress import log as progress_log
    from impls.slide.input_warnings import data_warnings

    name = spec.get("dataset") or s["dataset"]
    train_data, test_data, info = from_registry(name, profile)
    warnings = (data_warnings(train_data, test_data, spec.get("lr", SlideConfig.lr),
                              f"the lr of run {spec.get('name')!r} in impls/profiles.toml") if info.get("real") else [])
    for line in warnings:
        progress_log(f"warning: {name}: {line}")
    return {**run_spec_on(s, spec, train_data, test_data), "source": info,
            **({"input_warnings": warnings} if warnings else {})}


def run_spec_on(s: dict[str, Any], spec: dict[str, Any], train_data: XCData, test_data: XCData) -> dict[str, Any]:
    """Train run spec ``spec`` of profile table ``s`` (its method, device, budget and
    ``SlideConfig`` fields, the table's evaluation schedule) on the given splits instead of
    the table's dataset; the trainer's result dict."""
    cfg = config_of(spec)
    threads = cfg.pop("threads")
    kw = run_kwargs(s, spec["method"], spec.get("device"), spec.get("time_budget_s"), spec.get("warmup_steps"))
    return train_method(spec["method"], SlideConfig(threads=threads, **cfg), train_data, test_data,
                        spec.get("device"), **kw)


def run_spec_on_file(kwargs: dict[str, Any]) -> dict[str, Any]:
    """:func:`run_spec_on` of ``kwargs["sizes"]`` and ``kwargs["spec"]`` on the splits stored in
    the ``.npz`` file ``kwargs["path"]`` (:meth:`XCData.to_arrays` with prefixes ``train_`` and
    ``test_``, as the registry stores a set): what a fresh process trains on another draw."""
    with np.load(kwargs["path"]) as stored:
        arrays = dict(stored)
    return run_spec_on(kwargs["sizes"], kwargs["spec"], XCData.from_arrays(arrays, "train_"),
                       XCData.from_arrays(arrays, "test_"))


def run_entry(spec: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """One run of a sweep's ``runs``: its spec with the trainer's ``result`` over it (the
    threads it had, not those asked for; the spec's method name)."""
    return {**spec, "threads": result["threads"], **result, "method": spec["method"]}


def score(runs: list[dict[str, Any]], s: dict[str, Any]) -> tuple[float | None, dict[str, dict[str, Any]]]:
    """Set every measured run's target and time to it (:func:`add_targets`, in place) and
    return (the target P@1 or None, ``{"<slow>/<fast>": speedup}`` for each of
    ``s["comparisons"]`` whose two runs are in ``runs``, each pair at its own target:
    :func:`speedup` with ``s["target_fraction"]``)."""
    target = add_targets(runs, s["target_fraction"])
    by_name = {r["name"]: r for r in runs}
    speedups = {f"{slow}/{fast}": speedup(by_name[fast], by_name[slow], s["target_fraction"])
                for fast, slow in s.get("comparisons", []) if fast in by_name and slow in by_name}
    return target, speedups


def _call(fn, kwargs: dict, isolate: bool) -> Any:
    return fresh_process.call(fn, kwargs) if isolate else fn(kwargs)


def run_or_fail(experiment: str, spec: dict[str, Any], fn: Callable[[dict], Any], kwargs: dict, isolate: bool,
                entry: Callable[[dict, Any], dict[str, Any]]) -> dict[str, Any]:
    """``entry(spec, fn(kwargs))``, ``fn`` run in a fresh process unless ``isolate`` is False;
    where the run ended for want of resources, or on its CUDA device
    (:func:`~.run_failures.for_want_of_resources`), ``spec`` marked failed instead, so the
    sweep keeps its other runs. Any other error is raised."""
    try:
        result = _call(fn, kwargs, isolate)
    except Exception as err:            # a run too large here, or its GPU unusable: the others are kept
        if not for_want_of_resources(err, spec.get("device")):
            raise
        return failed_run(experiment, spec, err)
    return entry(spec, result)


def time_to_accuracy_sweep(profile: str | None = None, progress: bool | None = None,
                           isolate: bool = True, s: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train every run of ``[slide_train.<profile>].runs`` (SLIDE, dense and sampled torch on
    CPU / CUDA, at several thread counts) on the same data, seed and test subset, each in a
    fresh process, then set the target and every run's time to it.

    Returns ``{"sizes", "profile", "target_p_at_1", "runs": [...], "speedups": {...},
    "source"}``; a run whose capability is missing is ``{"name", "skipped": reason}``; one
    killed or out of memory is kept as failed and the others go on (:mod:`.run_failures`);
    ``source``: where the data came from (``synthetic`` / ``real``, checksums).
    ``isolate=False`` trains in this process (tests; peak RSS is then the process's).
    """
    return _sweep("slide_train", "SLIDE time-to-accuracy runs", profile, progress, isolate, s)


def delicious_sweep(profile: str | None = None, progress: bool | None = None,
                    isolate: bool = True, s: dict[str, Any] | None = None) -> dict[str, Any]:
    """As :func:`time_to_accuracy_sweep`, for ``[slide_delicious.<profile>]`` (the
    Delicious-200K-shaped set, SimHash as the paper chose for it)."""
    return _sweep("slide_delicious", "SLIDE Delicious runs", profile, progress, isolate, s)


def real_amazon_run(profile: str | None = None, progress: bool | None = None,
                    isolate: bool = True, s: dict[str, Any] | None = None) -> dict[str, Any]:
    """SLIDE on the real Amazon-670K (``[slide_real.<profile>]``, manifest
    slide-amazon670k-real) when the capability ``real_amazon670k`` is there; else
    ``{"skipped": "needs the real Amazon-670K (...)"}``. The run's ``source`` carries the
    files' sha256 and ``real`` True."""
    return _sweep("slide_real", "SLIDE on the real Amazon-670K", profile, progress, isolate, s)


def make_data(names: set[str], profile: str, isolate: bool) -> None:
    """Make the registry's XC sets among ``names`` that ``profile`` lacks, before a sweep's runs
    and in a process of its own unless ``isolate`` is False: no run's time or peak memory pays
    for them. A broken set raises first (:func:`raise_if_broken`); a name ``from_registry``
    would refuse is left to the run's own error."""
    from impls.harness import registry

    for name in names:
        raise_if_broken(name)
    registry.make_missing(set(names) & set(xc_datasets()), profile, isolate)


def _sweep(experiment: str, what: str, profile: str | None, progress: bool | None,
           isolate: bool, s: dict[str, Any] | None = None) -> dict[str, Any]:
    from impls.harness.profiles import resolve
    from impls.harness.progress import progress_bar

    profile = resolve(profile)
    s = s or sizes(profile, experiment)
    warn_crowded(experiment, s["runs"])
    make_data({spec.get("dataset") or s["dataset"] for spec in s["runs"] if not skip_reason(spec)}, profile, isolate)
    runs = []
    with progress_bar(len(s["runs"]), what, "run", progress) as bar:
        for spec in s["runs"]:
            reason = skip_reason(spec)
            if reason:
                runs.append({**spec, "skipped": reason})
            else:
                runs.append(run_or_fail(experiment, spec, _run_spec_in_child,
                                        {"spec": spec, "profile": profile, "sizes": s}, isolate, run_entry))
            bar.update()
    settle(experiment, runs)
    target, speedups = score(runs, s)
    source = next((r["source"] for r in runs if "source" in r), None)
    return {"sizes": s, "profile": profile, "target_p_at_1": target, "runs": runs, "speedups": speedups,
            "source": source}
