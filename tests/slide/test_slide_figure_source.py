"""Every SLIDE figure's title states the data kind (synthetic, or real with the files'
sha256), and a run on the real Amazon-670K has a declared figure of its own. Checked on the
matplotlib objects drawn from artifacts built here."""
from __future__ import annotations

from impls.harness import figures as registry
from impls.slide import figures

TRAIN_SHA = "ab12cd34ef56" + "0" * 52
TEST_SHA = "9f8e7d6c5b4a" + "1" * 52
STATS = {"labels": 670_091, "points": 490_449}


def _run(name: str, method: str, threads: int = 2) -> dict:
    curve = [{"seconds": s, "iteration": 10 * s, "p_at_1": 0.02 + 0.01 * s} for s in (1.0, 2.0, 4.0)]
    return {"name": name, "method": method, "device": "cpu", "threads": threads, "curve": curve,
            "samples_per_second": 100.0, "time_to_target_s": 3.0, "baseline_p_at_1": 0.02,
            "final_p_at_1": curve[-1]["p_at_1"], "cpu_utilization": 0.5, "padding": "batch",
            "data": {"train": STATS}}


def _real_source() -> dict:
    return {"dataset": "slide-amazon670k-real", "synthetic": False, "real": True, "like": "amazon-670k",
            "sha256": TRAIN_SHA, "test_sha256": TEST_SHA}


def _real_amazon_artifact() -> dict:
    """What :func:`impls.slide.experiments.sweeps.real_amazon_run` returns (one SLIDE run)."""
    return {"sizes": {"dataset": "slide-amazon670k-real"}, "profile": "smoke", "target_p_at_1": 0.05,
            "runs": [_run("slide", "slide")], "speedups": {}, "source": _real_source()}


def test_the_real_amazon_experiment_declares_a_figure_drawn_from_its_artifact():
    specs, errors = registry.discover()
    assert not errors
    real = [s for s in specs.values() if s.artifact == "slide_real_amazon"]
    assert [s.name for s in real] == ["slide_real_amazon_time_to_accuracy"]
    assert real[0].requires == ("real_amazon670k",)


def test_the_real_data_figure_says_real_data_with_both_files_checksums():
    specs, _ = registry.discover()
    fig = specs["slide_real_amazon_time_to_accuracy"].draw(_real_amazon_artifact())
    title = fig.axes[0].get_title()
    assert "real data (amazon-670k" in title
    assert f"sha256 {TRAIN_SHA[:12]}" in title and f"test {TEST_SHA[:12]}" in title
    assert "synthetic" not in title
    assert fig.axes[0].lines                                  # the run's P@1 curve is drawn


def test_a_real_run_with_no_source_is_not_called_synthetic():
    data = {**_real_amazon_artifact(), "runs": [{"name": "slide", "skipped": "no files"}], "source": None}
    title = figures.real_amazon_time_to_accuracy(data).axes[0].get_title()
    assert title.startswith("real data (no run measured")


def _sweeps_artifact(source: dict) -> dict:
    slide, dense = _run("slide-b64", "slide"), _run("dense-b64", "dense")
    hash_run = {"lsh": "dwta", "K": 6, "L": 50, "final_p_at_1": 0.1, "active_fraction": 0.01,
                "samples_per_second": 50.0, "lsh_recall": 0.3, "lsh_random_recall": 0.01}
    return {"sizes": {"dataset": "slide-sweep"}, "data": STATS, "source": source,
            "batch": {"64": {"slide": slide, "dense": dense, "speedup": {"value": 1.2}}},
            "hash": [hash_run]}


def test_core_scaling_batch_size_and_hash_family_titles_state_the_data_kind():
    tta = {"runs": [_run("slide", "slide", 1), _run("slide-2", "slide", 2), _run("dense-cpu", "dense", 2)],
           "target_p_at_1": 0.05}
    for source, kind in (({"synthetic": True, "real": False}, "synthetic data"),
                         (_real_source(), f"real data (amazon-670k, sha256 {TRAIN_SHA[:12]}")):
        drawn = [figures.core_scaling({**tta, "source": source}),
                 figures.batch_size(_sweeps_artifact(source)),
                 figures.hash_family(_sweeps_artifact(source))]
        for fig in drawn:
            assert fig.axes[0].get_title().startswith(kind), fig.axes[0].get_title()


def test_a_figure_of_real_data_only_calls_a_synthetic_source_synthetic():
    """``expect_real`` stands in only where no source was recorded (every run skipped): a
    recorded source that is not real is not called real data."""
    from impls.slide.figures import _source

    assert _source({"source": {"real": False, "dataset": "slide-amazon670k"}}, expect_real=True) == "synthetic data; "
    assert _source({}, expect_real=True) == "real data (no run measured, no checksum); "
