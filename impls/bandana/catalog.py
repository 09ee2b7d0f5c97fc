"""Bandana's experiments: the sizes schemas of their profile tables and the ``run`` adapters.

The experiments themselves (name, artifact, requirements, paper figure) are declared as
data in ``catalog.toml`` beside this file (see impls.harness.experiments).

Light on purpose: the experiment modules (numba, faiss) are imported only when one runs.
"""
from __future__ import annotations

from impls.harness.experiments import sizes_schema

sizes_schema("fio_sweep", {
    "file_bytes": int, "block_sizes": list[int], "queue_depths": list[int], "engines": list[str],
    "secondary_engine_block_sizes": list[int], "runtime_s": float, "ramp_s": float,
})

sizes_schema("bandana_sim", {
    "tables": list[str], "train_fraction": float, "layouts": list[str], "policies": list[str],
    "cache_fractions": list[float], "headline_cache_fraction": float, "headline_shadow_factor": float,
    "shadow_factors": list[float], "kmeans_clusters": int, "kmeans_niter": int, "shp_iterations": int,
    "seed": int, "miniature_rate": float, "subcluster_tables": list[str], "subclusters": list[int],
    "speed_vectors": int, "speed_lookups": int, "speed_baseline_lookups": int, "speed_repeats": int,
    "kahypar_tables": list[str], "kahypar_instance_profile": str, "streamed_traces": bool,
})

sizes_schema("bandana_replay", {
    "table": str, "train_fraction": float, "cache_fraction": float, "layouts": list[str],
    "policies": list[str], "shadow_factors": list[float], "kmeans_clusters": int, "kmeans_niter": int,
    "subclusters": list[int], "shp_iterations": int, "seed": int, "queue_depths": list[int],
    "point_seconds": float, "warmup_lookups": int, "policy_choice_lookups": int,
    "fio_runtime_s": float, "fio_ramp_s": float, "verify_per_chunk": int,
    "comparison": list[list[str]], "comparison_queue_depth": int, "comparison_rounds": int,
    "mechanisms": list[str], "mechanism_queue_depths": list[int], "mechanism_rounds": int,
    "streamed_traces": bool,
})


def fio(sizes, *, device="cpu", progress=None):
    from impls.bandana.experiments.device import characterize_device
    from impls.harness import paths

    return characterize_device(paths.nvm_target_path(), sizes)


def layouts(sizes, *, device="cpu", progress=None):
    from impls.bandana.experiments import simulation as experiments

    return experiments.layout_policy_experiment(sizes, progress)


def subclusters(sizes, *, device="cpu", progress=None):
    from impls.bandana.experiments import simulation as experiments

    return experiments.subcluster_sweep(sizes, progress)


def speed(sizes, *, device="cpu", progress=None):
    from impls.bandana.experiments import simulation as experiments

    return experiments.simulator_speed(sizes)


def shp_vs_kahypar(sizes, *, device="cpu", progress=None):
    from impls.bandana.experiments import simulation as experiments

    return experiments.shp_vs_kahypar(sizes, progress)


def replay(sizes, *, device="cpu", progress=None):
    from impls.bandana.nvm import block_store
    from impls.bandana.experiments import replay as replay_experiment

    try:
        return replay_experiment.replay_experiment(sizes, progress)
    except block_store.DirectIOUnavailable as err:
        raise NotImplementedError(str(err)) from err
