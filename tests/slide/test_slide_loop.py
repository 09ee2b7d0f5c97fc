"""The one timed training loop SLIDE and the PyTorch baselines share, and its result keys."""
from __future__ import annotations

import numpy as np
import pytest

from impls.slide.training import loop


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _recording_run(n_points, batch, iterations, every=100):
    """A loop over a step that records its rows and takes 1 s each, evaluating every ``every``."""
    clock, seen = FakeClock(), []

    def step(rows):
        seen.append(rows.copy())
        clock.now += 1.0
        return 0.5

    run = loop.run(step, lambda it, s, loss: {"iteration": it, "seconds": s, "loss": loss, "p_at_1": 0.0,
                                              "p_at_5": 0.0},
                   n_points=n_points, batch=batch, seed=4, timer=loop.WallTimer(clock),
                   schedule=loop.EvalSchedule(every), time_budget_s=None, max_iterations=iterations)
    return run, seen


def test_epochs_reshuffle_and_every_point_is_seen_once_per_epoch():
    run, seen = _recording_run(10, 3, 6, every=2)
    assert run.iterations == 6 and run.samples == 18 and run.train_seconds == 6.0
    epoch_one = np.concatenate(seen[:3])
    assert len(set(epoch_one.tolist())) == 9  # three batches of one permutation: no point twice
    assert [p["iteration"] for p in run.curve] == [0, 2, 4, 6]
    assert [p["seconds"] for p in run.curve] == [0.0, 2.0, 4.0, 6.0]


def test_the_budget_counts_training_seconds_only():
    clock = FakeClock()

    def step(rows):
        clock.now += 0.5
        return 1.0

    def slow_evaluation(it, seconds, loss):
        clock.now += 100.0  # evaluation time must not spend the training budget
        return {"iteration": it, "seconds": seconds, "loss": loss, "p_at_1": 0.1, "p_at_5": 0.1}

    run = loop.run(step, slow_evaluation, n_points=100, batch=10, seed=0, timer=loop.WallTimer(clock),
                   schedule=loop.EvalSchedule(1), time_budget_s=2.0, max_iterations=None)
    assert run.iterations == 4 and run.curve[-1]["iteration"] == 4


@pytest.mark.parametrize("every_s, expected", [(0.0, [1, 2, 4, 5]), (1e9, [])])
def test_the_heartbeat_comes_between_evaluations_only(every_s, expected):
    ticks = []
    run = loop.run(lambda rows: 0.5, lambda it, s, loss: {"iteration": it, "seconds": s, "loss": loss,
                                                           "p_at_1": 0.0, "p_at_5": 0.0},
                   n_points=10, batch=2, seed=0, timer=loop.WallTimer(), schedule=loop.EvalSchedule(3),
                   time_budget_s=None, max_iterations=7, tick=lambda it, s, n: ticks.append((it, n)),
                   tick_every_s=every_s)
    assert [it for it, _ in ticks] == expected
    assert all(n == 2 * it for it, n in ticks)
    assert [p["iteration"] for p in run.curve] == [0, 3, 6, 7]


def test_no_budget_is_refused():
    with pytest.raises(ValueError, match="time_budget_s or max_iterations"):
        loop.run(lambda rows: 0.0, lambda *a: {}, n_points=1, batch=1, seed=0, timer=loop.WallTimer(),
                 schedule=loop.EvalSchedule(), time_budget_s=None, max_iterations=None)


def test_slide_and_dense_return_the_shared_keys():
    pytest.importorskip("torch")
    from impls.slide.core.config import SlideConfig
    from impls.slide.data import xc_data
    from impls.slide.data.dataset import XCData
    from impls.slide.training.dense_torch import train_dense
    from impls.slide.training.trainer import train

    arrays = xc_data.generate(seed=1, n_train=600, n_test=100, n_features=300, n_labels=200, labels_per_point=2.0,
                              nnz_per_point=10, labels_per_topic=8, topic_pool=8, words_per_label=4)
    tr, te = XCData.from_arrays(arrays, "train_"), XCData.from_arrays(arrays, "test_")
    cfg = SlideConfig(threads=1, batch=64)
    kw = dict(time_budget_s=None, max_iterations=4, eval_every=2, eval_points=50)
    shared = set(loop.result("x", loop.Loop([{"p_at_1": 0, "p_at_5": 0, "loss": 0}], 1, 1, 1.0, 1.0, 0.0),
                             baseline_p_at_1=0, eval_points=1, threads=1, setup_seconds=0, active_fraction=1,
                             n_labels=1, params={}, data={}))
    for result in (train(cfg, tr, te, **kw), train_dense(cfg, tr, te, **kw),
                   train_dense(cfg, tr, te, method="sampled", **kw)):
        assert shared <= set(result) and result["iterations"] == 4
        assert [p["iteration"] for p in result["curve"]] == [0, 2, 4]


# -- found by a mutation probe: edges no test reached --------------------------------------------

def test_an_epoch_a_whole_number_of_batches_long_trains_every_point():
    run, seen = _recording_run(8, 4, 2)
    assert sorted(np.concatenate(seen).tolist()) == list(range(8)) and run.samples == 8


def test_fewer_rows_than_a_batch_count_the_rows_trained():
    run, seen = _recording_run(3, 8, 2)
    assert [r.size for r in seen] == [3, 3] and run.samples == 6


def test_the_cores_busy_fraction_divides_by_the_threads():
    out = loop.result("x", loop.Loop(curve=[{"p_at_1": 0.0, "p_at_5": 0.0, "loss": 1.0}], iterations=1, samples=10,
                                     train_seconds=2.0, cpu_seconds=8.0, eval_seconds=0.0),
                      baseline_p_at_1=0.0, eval_points=1, threads=4, setup_seconds=0.0, active_fraction=1.0,
                      n_labels=1, params={}, data={})
    assert out["cpu_utilization"] == 1.0 and out["samples_per_second"] == 5.0
