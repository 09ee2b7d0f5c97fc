"""Torch baselines (dense, sampled softmax; CPU timing and the CUDA timing logic), time to
target, the sweeps in the smoke profile, and the SLIDE figures drawn from their output."""
from __future__ import annotations

import json
import math

import hypothesis
import hypothesis.strategies as st
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from impls.slide.experiments import sweeps as experiments  # noqa: E402
from impls.slide.experiments import targets  # noqa: E402
from impls.slide.experiments import secondary  # noqa: E402
from impls.slide import figures
from impls.slide.data import xc_data
from impls.slide.core.config import SlideConfig  # noqa: E402
from impls.slide.data.dataset import XCData  # noqa: E402
from impls.slide.training.dense_torch import (CandidateSampler, DenseNet, StepTimer, softmax_cross_entropy,  # noqa: E402
                                     torch_eps, train_dense)
from impls.slide.training.loop import EvalSchedule  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    arrays = xc_data.generate(seed=3, n_train=64, n_test=32, n_features=300, n_labels=50,
                              labels_per_point=3.0, nnz_per_point=12, labels_per_topic=8,
                              topic_pool=16, words_per_label=6)
    return XCData.from_arrays(arrays, "train_"), XCData.from_arrays(arrays, "test_")


@pytest.fixture(scope="module")
def small():
    arrays = xc_data.generate(seed=11, n_train=3000, n_test=600, n_features=5000, n_labels=1500,
                              labels_per_point=3.0, nnz_per_point=40)
    return XCData.from_arrays(arrays, "train_"), XCData.from_arrays(arrays, "test_")


def test_softmax_cross_entropy_matches_log_softmax_autograd():
    g = torch.Generator().manual_seed(0)
    z0 = torch.randn(6, 11, dtype=torch.float64, generator=g)
    r = torch.tensor([0, 0, 1, 2, 3, 4, 5, 5, 5])
    labs = torch.tensor([1, 3, 2, 0, 10, 4, 5, 6, 7])
    tw = 1.0 / torch.bincount(r, minlength=6).double()[r]
    a = z0.clone().requires_grad_()
    loss = softmax_cross_entropy((a * 1.0).T.contiguous(), labs, r, tw)   # labels x batch
    loss.backward()
    b = z0.clone().requires_grad_()
    target = torch.zeros_like(z0).index_put_((r, labs), tw, accumulate=True)
    ref = -(target * torch.log_softmax(b, 1)).sum(1).mean()
    ref.backward()
    assert float(loss.detach()) == pytest.approx(float(ref.detach()), rel=1e-12)
    torch.testing.assert_close(a.grad, b.grad, rtol=1e-10, atol=1e-12)


def _reference_weights(data, cfg, batches, optimizer):
    """Plain torch: log_softmax, dense target, ``optimizer`` (TF's Adam written out)."""
    net = DenseNet(data.n_features, data.n_labels, cfg.hidden, cfg.init_std, cfg.seed)
    opt = optimizer(net.parameters(), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
    for rows in batches:
        x = torch.zeros(len(rows), data.n_features)
        target = torch.zeros(len(rows), data.n_labels)
        for i, r in enumerate(rows):
            sl = slice(data.indptr[r], data.indptr[r + 1])
            x[i].index_add_(0, torch.from_numpy(data.indices[sl].astype(np.int64)), torch.from_numpy(data.values[sl]))
            labs = data.labels[data.label_indptr[r]:data.label_indptr[r + 1]]
            target[i, torch.from_numpy(labs.astype(np.int64))] += 1.0 / len(labs)
        h = torch.relu(x @ net.W1 + net.b1)
        loss = -(target * torch.log_softmax(h @ net.W2.T + net.b2, 1)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.detach().numpy() for k, v in net.named_parameters()}


@pytest.mark.parametrize("eps", [1e-8, 1e-4])
def test_dense_baseline_trains_like_plain_torch_after_a_reset_warm_up(tiny, tf_adam, eps):
    train_data, test_data = tiny
    cfg = SlideConfig(batch=16, lr=1e-2, threads=1, init_std=0.1, seed=5, eps=eps)
    captured = {}
    import impls.slide.training.dense_torch as dt

    real = dt.DenseNet

    class Spy(real):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            captured["net"] = self

    dt.DenseNet = Spy
    try:
        result = train_dense(cfg, train_data, test_data, time_budget_s=None, max_iterations=3, eval_every=0,
                             eval_points=16, warmup_steps=2)
    finally:
        dt.DenseNet = real
    # the same batches the trainer drew: its seeded permutation
    order = np.random.default_rng(cfg.seed + 1).permutation(train_data.n_points)
    batches = [order[16 * i:16 * (i + 1)] for i in range(3)]
    ref = _reference_weights(train_data, cfg, batches, tf_adam)
    if eps > 1e-6:   # where ε sits matters at this ε: torch's own placement must not pass
        torch_form = _reference_weights(train_data, cfg, batches, torch.optim.Adam)
        assert np.abs(torch_form["W2"] - ref["W2"]).max() > 1e-4
    for k, v in captured["net"].named_parameters():
        np.testing.assert_allclose(v.detach().numpy(), ref[k], atol=2e-5, rtol=1e-4, err_msg=k)
    assert result["iterations"] == 3 and result["warmup_steps"] == 2 and result["active_fraction"] == 1.0
    assert result["method"] == "dense-torch-cpu" and result["cpu_utilization"] > 0
    assert result["threads"] == 1          # the evaluation (numba, OpenMP) must not reset it


def test_log_uniform_sampler_follows_training_frequency():
    counts = np.array([1, 50, 3, 0, 20])          # ranks: label 1, 4, 2, 0, 3
    s = CandidateSampler("log-uniform", 5, 20000, counts, seed=0)
    freq = np.bincount(s.draw(), minlength=5) / 20000
    q_rank = np.log((np.arange(5) + 2) / (np.arange(5) + 1)) / np.log(6)
    np.testing.assert_allclose(freq[[1, 4, 2, 0, 3]], q_rank, atol=0.015)
    u = CandidateSampler("uniform", 5, 3, counts, seed=0)
    assert np.allclose(u.log_q, u.log_q[0])        # a constant: no effect on the softmax
    assert u.log_q[0] == pytest.approx(math.log(1 - 0.8 ** 3))


def test_torch_eps_makes_torch_adam_update_as_tf(tf_adam):
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(200, generator=g)
    # gradients from 1e-8 to 1e-3, so that ε = 1e-6 is large for some entries and small for others
    grads = [torch.randn(200, generator=g) * 10.0 ** torch.randint(-8, -2, (200,), generator=g) for _ in range(5)]
    a, b = w0.clone().requires_grad_(), w0.clone().requires_grad_()
    ours = torch.optim.Adam([a], lr=1e-2, betas=(0.9, 0.999), eps=1e-6)
    oracle = tf_adam([b], lr=1e-2, betas=(0.9, 0.999), eps=1e-6)
    for t, grad in enumerate(grads, 1):
        ours.param_groups[0]["eps"] = torch_eps(1e-6, 0.999, t)
        a.grad, b.grad = grad.clone(), grad.clone()
        ours.step()
        oracle.step()
    torch.testing.assert_close(a.detach(), b.detach(), rtol=1e-5, atol=1e-7)


def test_sampled_softmax_places_eps_as_tf_on_both_optimisers(small):
    """W1/b1 go through torch.optim.Adam, which needs :func:`torch_eps`; the output rows'
    SparseAdam already adds ε before the bias correction and keeps ε-hat as given."""
    from impls.slide.training.dense_torch import _Trainer

    train_data, _ = small
    cfg = SlideConfig(batch=32, lr=1e-2, threads=1, seed=1, sample_fraction=0.05, eps=1e-5)
    net = DenseNet(train_data.n_features, train_data.n_labels, cfg.hidden, cfg.init_std, cfg.seed)
    trainer = _Trainer("sampled", net, cfg, train_data, torch.device("cpu"))
    for t in (1, 2):
        trainer.step(train_data, np.arange(32 * (t - 1), 32 * t))
        dense_adam, sparse_adam = trainer.opts
        assert dense_adam.param_groups[0]["eps"] == pytest.approx(torch_eps(1e-5, cfg.beta2, t))
        assert isinstance(sparse_adam, torch.optim.SparseAdam) and sparse_adam.param_groups[0]["eps"] == 1e-5


def test_sampled_softmax_learns(small):
    train_data, test_data = small
    cfg = SlideConfig(batch=128, lr=1e-2, threads=2, seed=1, sampler="log-uniform", sample_fraction=0.1)
    r = train_dense(cfg, train_data, test_data, time_budget_s=None, max_iterations=60, eval_every=0,
                    eval_points=300, method="sampled", eval_at_start=False)
    assert r["final_p_at_1"] >= max(0.4, 3 * r["baseline_p_at_1"]), r["curve"]
    assert 0 < r["active_fraction"] < 0.6 and r["method"] == "sampled-torch-cpu"


class FakeEvent:
    def __init__(self, log, clock):
        self.log, self.clock, self.t = log, clock, None

    def record(self, stream=None):
        self.log.append("record")
        self.t, self.stream = self.clock.now, stream

    def elapsed_time(self, other):
        self.log.append("elapsed")
        return (other.t - self.t) * 1000.0


class FakeClock:
    def __init__(self, log):
        self.log, self.now = log, 0.0

    def __call__(self):
        self.log.append("clock")
        return self.now


def test_a_step_timer_on_another_gpu_waits_for_and_times_that_gpu(monkeypatch):
    """cuda:1 while the current device is 0: the syncs and both events are cuda:1's."""
    log, clock = [], FakeClock([])
    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append(("sync", str(device))))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: ("stream of", str(device)))
    monkeypatch.setattr(torch.cuda, "Event", lambda enable_timing=False: events.append(FakeEvent([], clock))
                        or events[-1])
    timer = StepTimer("cuda:1", clock=clock)
    timer.start()
    clock.now += 0.5
    timer.stop()
    assert log == [("sync", "cuda:1")] * 2
    assert [e.stream for e in events] == [("stream of", "cuda:1")] * 2
    assert timer.seconds == pytest.approx(0.5) and timer.device_seconds == pytest.approx(0.5)


def test_cuda_step_timer_synchronises_before_every_clock_read():
    log = []
    clock = FakeClock(log)
    timer = StepTimer("cpu", sync=lambda: log.append("sync"), clock=clock, event=lambda: FakeEvent(log, clock))
    timer.cuda = True   # the CUDA path, exercised on the CPU
    for step in (0.5, 0.25):
        timer.start()
        clock.now += step
        timer.stop()
    assert log[:4] == ["sync", "clock", "record", "record"]
    for i, entry in enumerate(log):
        if entry == "clock":
            assert log[i - 1] == "sync"
    assert timer.seconds == pytest.approx(0.75) and timer.device_seconds == pytest.approx(0.75)
    plain = StepTimer("cpu", sync=lambda: log.append("never"), clock=clock)
    plain.start()
    plain.stop()
    assert "never" not in log


def test_cuda_device_is_refused_without_cuda(tiny):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="cuda"):
        train_dense(SlideConfig(threads=1), *tiny, time_budget_s=None, max_iterations=1, device="cuda")


def test_eval_schedule_every_and_log_spaced():
    s = EvalSchedule(every=None, first_s=1.0, growth=2.0)
    due = [t for t in (0.5, 1.0, 1.5, 2.1, 3.0, 4.5, 9.0) if s.due(1, t)]
    assert due == [1.0, 2.1, 4.5, 9.0]
    s = EvalSchedule(every=3)
    assert [i for i in range(1, 10) if s.due(i, 0.0)] == [3, 6, 9]


def curve(points):
    return [{"seconds": s, "iteration": i, "p_at_1": p} for s, i, p in points]


def test_time_to_target_interpolates_and_speedups_flag_lower_bounds():
    fast = {"name": "slide", "curve": curve([(1, 10, 0.1), (2, 20, 0.3), (4, 40, 0.5)]), "final_p_at_1": 0.5,
            "samples_per_second": 1000.0, "iterations": 40, "train_seconds": 4.0}
    slow = {"name": "dense", "curve": curve([(4, 2, 0.1), (8, 4, 0.2), (16, 8, 0.45)]), "final_p_at_1": 0.45,
            "samples_per_second": 50.0, "iterations": 30, "train_seconds": 16.0}
    assert targets.time_to_target(fast["curve"], 0.2) == (1.5, 15.0)
    assert targets.time_to_target(fast["curve"], 0.6) == (None, None)
    target = targets.add_targets([fast, slow], 0.8)            # 0.8 x best final (0.5)
    assert target == pytest.approx(0.4)
    assert fast["time_to_target_s"] == pytest.approx(3.0) and slow["time_to_target_s"] == pytest.approx(14.4)
    s = targets.speedup(fast, slow)
    assert s["value"] == pytest.approx(14.4 / 3.0) and not s["lower_bound"]
    assert s["throughput_ratio"] == pytest.approx(20.0)
    assert s["p_at_1_per_iteration_ratio"] == pytest.approx(0.4 / 0.45)   # fast at iteration 30: 0.4
    slow["time_to_target_s"] = None
    s = targets.speedup(fast, slow)
    assert s["lower_bound"] and s["value"] == pytest.approx(16.0 / 3.0)
    fast["time_to_target_s"], slow["time_to_target_s"] = None, 14.4   # only the slow one got there
    s = targets.speedup(fast, slow)
    assert s["upper_bound"] and not s["lower_bound"] and s["value"] == pytest.approx(14.4 / 4.0)
    fast["train_seconds"] = 0.0                                        # no budget: no bound
    assert targets.speedup(fast, slow)["value"] is None


def isotonic_by_min_max(y):
    """Isotonic regression by its min-max formula: fit[i] = max over j <= i of min over k >= i
    of mean(y[j..k]) (an independent O(n^3) oracle for the pooling algorithm)."""
    n = len(y)
    return [max(min(float(np.mean(y[j:k + 1])) for k in range(i, n)) for j in range(i + 1)) for i in range(n)]


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=12))
def test_monotone_fit_is_the_isotonic_regression(y):
    fit = targets.monotone_fit(y)
    assert fit.shape == (len(y),)
    assert np.all(np.diff(fit) >= -1e-12)
    assert fit.sum() == pytest.approx(sum(y), abs=1e-9)
    assert fit == pytest.approx(isotonic_by_min_max(y), abs=1e-9)
    assert fit[-1] == pytest.approx(max(float(np.mean(y[j:])) for j in range(len(y))), abs=1e-9)
    if all(a <= b for a, b in zip(y, y[1:])):
        assert fit.tolist() == pytest.approx(y)


def test_one_lucky_evaluation_does_not_time_the_crossing():
    # SLIDE's quick curve of make reproduce #7: 0.063 at 16 s was high by chance (0.040 at 32 s)
    noisy = curve([(4, 40, 0.003), (8, 80, 0.027), (16, 160, 0.063), (32, 320, 0.040), (64, 640, 0.083),
                   (70, 700, 0.067)])
    fit = targets.fitted_p_at_1(noisy)
    assert fit.tolist() == pytest.approx([0.003, 0.027, 0.0515, 0.0515, 0.075, 0.075])
    assert targets.time_to_target(noisy, 0.057) == pytest.approx((32 + (0.057 - 0.0515) / (0.075 - 0.0515) * 32,
                                                                    320 + (0.057 - 0.0515) / (0.075 - 0.0515) * 320))
    assert targets.time_to_target(noisy, 0.05) == pytest.approx((8 + (0.05 - 0.027) / (0.0515 - 0.027) * 8,
                                                                   80 + (0.05 - 0.027) / (0.0515 - 0.027) * 80))
    run = {"curve": noisy, "final_p_at_1": 0.067, "baseline_p_at_1": 0.02, "eval_points": 300}
    target = targets.add_targets([run], 0.8)                 # from the last evaluation, as before
    assert target == pytest.approx(0.02 + 0.8 * (0.067 - 0.02))
    assert run["time_to_target_s"] > 32                      # the raw curve first reached it at 16 s
    # a run that learns, then falls back for good, holds the mean of its tail
    falls = curve([(1, 10, 0.1), (2, 20, 0.6), (4, 40, 0.2), (8, 80, 0.25)])
    assert targets.fitted_p_at_1(falls).tolist() == pytest.approx([0.1, 0.35, 0.35, 0.35])
    assert targets.time_to_target(falls, 0.4) == (None, None)


def first_crossing(curve, target):
    """The previous definition: the raw curve's first crossing, interpolated (seconds)."""
    prev = None
    for p in curve:
        if p["p_at_1"] >= target:
            if prev is None:
                return p["seconds"]
            f = (target - prev["p_at_1"]) / (p["p_at_1"] - prev["p_at_1"])
            return prev["seconds"] + f * (p["seconds"] - prev["seconds"])
        prev = p
    return None


def test_the_fit_removes_the_first_crossings_early_bias_on_a_noisy_rising_curve():
    # P@1 on 300 points (binomial noise) around a curve rising from 0.02 towards 0.09,
    # evaluated every x1.5 from 2 s, then at the end of a 70-s budget (the quick profile's at
    # d22817e; the simulation in the SLIDE README); the true curve
    # reaches the target 0.057 at t_star. The first crossing takes the first lucky
    # evaluation, so it is early; the fit's time is not.
    rng = np.random.default_rng(0)
    times = [2 * 1.5 ** k for k in range(9)] + [70.0]        # 2 ... 51.3 s, then the final one
    truth = lambda t: 0.02 + 0.07 * (1 - np.exp(-t / 30))  # noqa: E731
    target = 0.057
    t_star = -30 * np.log(1 - (target - 0.02) / 0.07)      # 22.6 s
    first, fitted = [], []
    for _ in range(2000):
        c = [{"seconds": t, "iteration": t, "p_at_1": rng.binomial(300, truth(t)) / 300} for t in times]
        old, new = first_crossing(c, target), targets.time_to_target(c, target)[0]
        first.append(70.0 if old is None else old)
        fitted.append(70.0 if new is None else new)
    assert np.median(first) < 0.92 * t_star                # the old definition: ~12% early
    assert abs(np.median(fitted) - t_star) < 0.05 * t_star


def test_speedup_with_the_pairs_own_target():
    def curve(points):
        return [{"seconds": s, "iteration": i, "p_at_1": p} for s, i, p in points]

    # the sweep's best run reached 0.9, so its target (0.72) is out of both runs' reach;
    # the pair's own target is 0.8 x 0.3 = 0.24
    fast = {"name": "slide", "curve": curve([(1, 10, 0.1), (2, 20, 0.2), (4, 40, 0.3)]), "final_p_at_1": 0.3,
            "samples_per_second": 1000.0, "iterations": 40, "train_seconds": 4.0,
            "target_p_at_1": 0.72, "time_to_target_s": None}
    slow = {"name": "dense", "curve": curve([(4, 2, 0.1), (8, 4, 0.2), (16, 8, 0.25)]), "final_p_at_1": 0.25,
            "samples_per_second": 50.0, "iterations": 8, "train_seconds": 16.0,
            "target_p_at_1": 0.72, "time_to_target_s": None}
    assert targets.speedup(fast, slow)["value"] is None
    s = targets.speedup(fast, slow, 0.8)
    assert s["target_p_at_1"] == pytest.approx(0.24)
    assert s["fast_time_to_target_s"] == pytest.approx(2.8) and s["slow_time_to_target_s"] == pytest.approx(14.4)
    assert s["value"] == pytest.approx(14.4 / 2.8) and not s["lower_bound"]
    slow["curve"] = curve([(4, 2, 0.1), (8, 4, 0.2), (16, 8, 0.21)])
    slow["final_p_at_1"] = 0.21
    s = targets.speedup(fast, slow, 0.8)
    assert s["lower_bound"] and s["value"] == pytest.approx(16.0 / 2.8)
    s = targets.speedup(slow, fast, 0.8)          # the "fast" one never reaches the target
    assert s["slow_time_to_target_s"] == pytest.approx(2.8) and s["fast_time_to_target_s"] is None
    assert s["upper_bound"] and not s["lower_bound"] and s["value"] == pytest.approx(2.8 / 16.0)
    slow["train_seconds"] = 2.0                       # stopped before the fast one reached the target
    s = targets.speedup(fast, slow, 0.8)
    assert s["value"] is None and not s["lower_bound"] and "no bound" in s["no_value"]


def test_a_run_at_the_target_from_a_first_evaluation_after_0_s_gives_a_bound():
    def run(name, points):
        return {"name": name, "curve": curve([(t, t, p) for t, p in points]), "final_p_at_1": points[-1][1],
                "baseline_p_at_1": 0.01, "eval_points": 1000, "samples_per_second": 1.0,
                "iterations": points[-1][0], "train_seconds": float(points[-1][0])}

    fast = run("fast", [(3, 0.42), (6, 0.45), (25, 0.50)])    # past the target (0.4) at its first evaluation, 3 s
    slow = run("slow", [(3, 0.02), (6, 0.10), (25, 0.45)])
    assert targets.at_target_from_start(fast["curve"], 0.4) and not targets.at_target_from_start(slow["curve"], 0.4)
    s = targets.speedup(fast, slow, 0.8)
    assert s["fast_time_to_target_s"] == 3.0          # the latest it can have crossed
    assert s["lower_bound"] and not s["upper_bound"] and s["value"] == pytest.approx(s["slow_time_to_target_s"] / 3.0)
    s = targets.speedup(slow, fast, 0.8)               # the other way round: an upper bound
    assert s["upper_bound"] and not s["lower_bound"] and s["value"] == pytest.approx(3.0 / s["fast_time_to_target_s"])
    s = targets.speedup(fast, run("slow", [(2, 0.41), (25, 0.45)]), 0.8)   # both: no bound either way
    assert s["value"] is None and "both were at the target from their first evaluations" in s["no_value"]
    at_zero = run("slow", [(0, 0.45), (25, 0.45)])     # at the target at 0 s: the crossing is at 0 s, exact
    assert not targets.at_target_from_start(at_zero["curve"], 0.4)
    s = targets.speedup(run("fast", [(0, 0.01), (10, 0.3), (20, 0.5)]), at_zero, 0.8)
    assert s["value"] == 0.0 and not (s["lower_bound"] or s["upper_bound"])


def test_a_run_at_the_target_from_its_first_evaluation_has_its_time_flagged_an_upper_bound():
    def run(name, points):
        return {"name": name, "curve": curve([(t, t, p) for t, p in points]), "final_p_at_1": points[-1][1],
                "baseline_p_at_1": 0.01, "eval_points": 1000}

    early = run("early", [(3, 0.42), (6, 0.45), (25, 0.50)])   # past 0.4 at its first evaluation, 3 s
    later = run("later", [(3, 0.02), (6, 0.10), (25, 0.45)])
    never = run("never", [(3, 0.01), (25, 0.02)])
    at_zero = run("zero", [(0, 0.45), (25, 0.45)])             # at 0 s: the crossing itself, exact
    assert 0.4 <= targets.add_targets([early, later, never, at_zero], 0.8) < 0.42
    assert early["time_to_target_s"] == 3.0 and early["time_to_target_is_upper_bound"] is True
    assert later["time_to_target_s"] > 6 and later["time_to_target_is_upper_bound"] is False
    assert never["time_to_target_s"] is None and never["time_to_target_is_upper_bound"] is False
    assert never["time_to_target_is_lower_bound"] is True      # it needed more than its training time
    assert not any(r["time_to_target_is_lower_bound"] for r in (early, later, at_zero))
    assert at_zero["time_to_target_s"] == 0.0 and at_zero["time_to_target_is_upper_bound"] is False


def test_the_margin_over_the_popular_label_is_on_the_fewest_test_points():
    """Runs scored on 300 and 5,000 test points: the margin is the noisier one's (2 standard
    errors of 0.05 on 300 points: 0.025), so 0.065 is no target; on 5,000 alone it would be."""
    def run(final, points):
        return {"curve": [], "baseline_p_at_1": 0.05, "final_p_at_1": final, "eval_points": points}

    assert targets.target_p_at_1([run(0.065, 300), run(0.05, 5000)], 0.5) is None
    assert targets.target_p_at_1([run(0.065, 5000)], 0.5) == pytest.approx(0.0575)
    assert "(0.025 on 300 test points)" in targets.no_target_reason([run(0.065, 300), run(0.05, 5000)])


def test_no_target_when_no_run_beats_the_most_popular_label():
    def run(name, finals, final):
        return {"name": name, "curve": [{"seconds": t, "iteration": 10 * t, "p_at_1": p} for t, p in finals],
                "final_p_at_1": final, "baseline_p_at_1": 0.113, "eval_points": 300,
                "samples_per_second": 100.0, "iterations": 100, "train_seconds": 25.0}

    # both hover around the popular label's 0.113 (2 standard errors on 300 points: 0.037)
    slide = run("slide", [(8, 0.013), (16, 0.047), (25, 0.117)], 0.117)
    dense = run("dense", [(6, 0.09), (17, 0.153), (25, 0.103)], 0.103)
    assert targets.target_p_at_1([slide, dense], 0.8) is None
    s = targets.speedup(slide, dense, 0.8)
    assert s["value"] is None and s["target_p_at_1"] is None
    assert s["no_value"] == ("no target to time: neither slide (25 s) nor dense (25 s) beat the most-popular-label "
                             "P@1 (0.113) by two standard errors (0.037 on 300 test points); best final P@1 0.117")
    assert targets.add_targets([slide, dense], 0.8) is None and slide["time_to_target_s"] is None
    assert targets.speedup(slide, dense)["no_value"].startswith("no target to time")   # the sweep's target
    # a target (set by a third run) that neither reaches
    for r in (slide, dense):
        r["target_p_at_1"], r["time_to_target_s"] = 0.3, None
    s = targets.speedup(slide, dense)
    assert s["value"] is None and s["no_value"] == ("neither slide (25 s) nor dense (25 s) reached the "
                                                    "target P@1 0.300")
    # a fast run at the target from its evaluation at 0 s: no ratio, and it says so
    slide["time_to_target_s"] = 0.0
    s = targets.speedup(slide, dense)
    assert s["value"] is None and "from its first evaluation, at 0 s" in s["no_value"]
    # one that learns: the target is 80% of the way from 0.113 to 0.31
    slide = run("slide", [(8, 0.013), (16, 0.2), (25, 0.31)], 0.31)
    s = targets.speedup(slide, dense, 0.8)
    assert s["target_p_at_1"] == pytest.approx(0.113 + 0.8 * (0.31 - 0.113))
    assert s["lower_bound"] and s["value"] == pytest.approx(25.0 / s["fast_time_to_target_s"])


def test_method_aliases():
    assert experiments.resolve_method("dense-torch-cuda") == ("dense", "cuda")
    assert experiments.resolve_method("sampled", "cuda") == ("sampled", "cuda")
    with pytest.raises(ValueError):
        experiments.resolve_method("tf")


def test_cli_trains_every_method(small, tmp_path):
    from impls.slide.train import main
    from impls.slide.data.xc_format import write_xc

    train_data, test_data = small
    f_train = write_xc(tmp_path / "train.txt", train_data.to_arrays())
    f_test = write_xc(tmp_path / "test.txt", test_data.to_arrays())
    for method, extra in (("dense", ["--device", "cpu"]), ("sampled", ["--sampler", "uniform"]),
                          ("dense-torch", [])):
        out = tmp_path / f"{method}.json"
        assert main(["--train", str(f_train), "--test", str(f_test), "--method", method, "--threads", "1",
                     "--batch", "32", "--max-iterations", "3", "--eval-every", "0", "--eval-points", "50",
                     "--warmup-steps", "0", "--json", str(out), "--quiet", *extra]) == 0
        r = json.loads(out.read_text())
        assert r["iterations"] == 3 and r["params"]["batch"] == 32 and r["samples_per_second"] > 0


@pytest.fixture(scope="module")
def sweeps():
    tta = experiments.time_to_accuracy_sweep("smoke", progress=False, isolate=False)
    sec = secondary.secondary_sweep("smoke", progress=False, isolate=False)
    return tta, sec


def test_smoke_sweeps_compare_methods_on_one_target(sweeps):
    tta, sec = sweeps
    names = {r["name"]: r for r in tta["runs"]}
    assert {"slide", "dense-cpu"} <= set(names)
    if not torch.cuda.is_available():
        assert "skipped" in names["dense-cuda"] and tta["speedups"]["dense-cuda/slide"]["value"] is None
    best = max(r["final_p_at_1"] for r in tta["runs"] if "curve" in r)
    base = max(r["baseline_p_at_1"] for r in tta["runs"] if "curve" in r)
    points = min(r["eval_points"] for r in tta["runs"] if "curve" in r)
    if tta["target_p_at_1"] is None:  # under CPU contention a 5-s smoke run may not leave the plateau
        assert best <= base + 2 * (base * (1 - base) / points) ** 0.5
    else:
        assert tta["target_p_at_1"] == pytest.approx(base + tta["sizes"]["target_fraction"] * (best - base))
        assert any(r.get("time_to_target_s") is not None for r in tta["runs"] if "curve" in r)
    eval_rows = {r["eval_points"] for r in tta["runs"] if "curve" in r}
    assert len(eval_rows) == 1                               # the same test subset for every method
    assert set(sec["batch"]) == {str(b) for b in sec["sizes"]["batches"]}
    for b, entry in sec["batch"].items():
        assert entry["slide"]["params"]["batch"] == int(b) and entry["dense"]["params"]["batch"] == int(b)
    assert [(h["lsh"], h["K"], h["L"]) for h in sec["hash"]] == [tuple(f) for f in sec["sizes"]["hash_families"]]
    # the suite's own SLIDE is a point of the hash sweep, taken from the batch sweep's run
    own = (SlideConfig.lsh, SlideConfig.K, SlideConfig.L)
    assert own in [tuple(f) for f in sec["sizes"]["hash_families"]]
    [same] = [h for h in sec["hash"] if (h["lsh"], h["K"], h["L"]) == own]
    assert same["name"] == f"slide-b{sec['sizes']['hash_batch']}"
    assert all(0 < h["active_fraction"] <= 1 for h in sec["hash"])
    json.dumps(tta), json.dumps(sec)                         # artifacts are plain data


def test_slide_figures_draw_from_the_sweeps(sweeps):
    tta, sec = sweeps
    for draw, data in ((figures.time_to_accuracy, tta), (figures.core_scaling, tta),
                       (figures.batch_size, sec), (figures.hash_family, sec)):
        fig = draw(data)
        assert fig.axes and any(ax.lines or ax.collections for ax in fig.axes)
    assert fig.axes[0].get_xlabel().startswith("active output neurons")
    assert figures.time_to_accuracy(tta).axes[0].get_xscale() == "log"
    assert "synthetic data" in figures.time_to_accuracy(tta).axes[0].get_title()
    mech = figures.mechanism(tta)
    assert mech.axes[1].lines and mech.axes[0].lines     # hidden cosine and recall over random per SLIDE run
    assert mech.axes[0].collections                       # the recall's 95% interval, shaded
    from impls.slide.training.trainer import RECALL_K     # the k the runs counted, not a literal
    for fig in (mech, figures.hash_family(sec)):
        assert any(ax.get_ylabel().startswith(f"recall of the {RECALL_K} best-scoring") for ax in fig.axes)
    assert mech.axes[0].get_ylim()[0] == 0                # a ratio: no negative symlog decade


def test_slide_runs_record_the_mechanism(sweeps):
    tta, _ = sweeps
    slide = next(r for r in tta["runs"] if r["name"] == "slide")
    assert all(-1e-9 <= p["hidden_cosine"] <= 1 + 1e-9 for p in slide["curve"])
    assert slide["final_hidden_cosine"] == slide["curve"][-1]["hidden_cosine"]
    ratios = {after: [p["lsh_recall"] / p["lsh_random_recall"] for p in slide["curve"]
                      if p.get(after) and p["lsh_random_recall"]] for after in ("rebuilds", "refreshes")}
    assert slide["lsh_recall_min_ratio"] == (min(ratios["rebuilds"]) if ratios["rebuilds"] else None)
    assert slide["lsh_recall_min_ratio_after_rehash"] == (min(ratios["refreshes"]) if ratios["refreshes"] else None)
    for p in slide["curve"]:                                  # the interval holds the recall
        low, high = p["lsh_recall_ci"]
        assert low <= p["lsh_recall"] <= high and p["lsh_recall_trials"] > 0
    dense = next(r for r in tta["runs"] if r["name"] == "dense-cpu")
    assert all(-1e-9 <= p["hidden_cosine"] <= 1 + 1e-9 for p in dense["curve"])


def test_delicious_sweep_runs_simhash_against_dense(monkeypatch):
    out = experiments.delicious_sweep("smoke", progress=False, isolate=False)
    names = {r["name"]: r for r in out["runs"]}
    assert names["slide"]["params"]["lsh"] == "simhash" and names["slide"]["params"]["batch"] == 128
    assert "dense-cpu/slide" in out["speedups"] and out["source"]["synthetic"]
    fig = figures.delicious_time_to_accuracy(out)
    assert fig.axes[0].lines


def test_every_run_keeps_its_per_point_hits_and_every_pair_its_sampling_intervals(sweeps):
    """The claims' sampling_interval paths hold [low, high] pairs (or None, with a reason) in
    the smoke artifacts, and each curve point's hits give its P@1."""
    from impls.harness.report import claims as claims_module
    from impls.harness.report.record_path import walk
    from impls.slide.core.evaluate import unpack_hits

    tta, sec = sweeps
    for run in (r for r in tta["runs"] if "curve" in r):
        for point in run["curve"]:
            hits = unpack_hits(point["hits_at_1"], run["eval_points"])
            assert hits.mean() == pytest.approx(point["p_at_1"])
        assert len(run["eval_rows_digest"]) == 16
        assert unpack_hits(run["baseline_hits_at_1"], run["eval_points"]).mean() == pytest.approx(run["baseline_p_at_1"])
    artifacts = {"slide_time_to_accuracy": {"data": tta}, "slide_sweeps": {"data": sec}}
    checked = 0
    from pathlib import Path

    for claim in claims_module.load_claims(Path(__file__).resolve().parents[2] / "reports" / "claims.toml"):
        source = claim.sampling_interval
        if source is None or source.artifact not in artifacts:
            continue
        head, _, key = source.path.rpartition(".")
        pair_path = head.removesuffix(".intervals")
        try:
            pair_of_runs = walk(artifacts[source.artifact], pair_path)
        except KeyError:               # a point the smoke profile does not run (a batch size)
            continue
        if pair_of_runs is None or "throughput_ratio" not in pair_of_runs:     # a run without a curve (CUDA)
            continue
        intervals = pair_of_runs["intervals"]
        assert "method" in intervals and key in intervals, (claim.id, intervals)
        pair = intervals[key]
        assert pair is None or (len(pair) == 2 and pair[0] <= pair[1]), claim.id
        checked += 1
    assert checked >= 3


def _pair_run(name: str, points: list[tuple], samples_per_second: float, baseline: float) -> dict:
    """A run record for targets.speedup: its curve ``points`` (seconds, iteration, P@1)."""
    return {"name": name, "curve": curve(points), "final_p_at_1": points[-1][2],
            "samples_per_second": samples_per_second, "iterations": points[-1][1],
            "train_seconds": float(points[-1][0]), "baseline_p_at_1": baseline, "eval_points": 500}


def test_accuracy_per_iteration_is_not_a_ratio_over_a_slow_run_that_never_left_the_popular_label():
    """Dense at 0.05 where always predicting the popular label scores 0.036 (500 points: two
    standard errors 0.017): its final P@1 is noise, and no ratio is taken over it."""
    fast = _pair_run("slide", [(1, 10, 0.01), (2, 40, 0.02)], 1000.0, 0.036)
    slow = _pair_run("dense", [(4, 2, 0.036), (8, 30, 0.05)], 50.0, 0.036)
    s = targets.speedup(fast, slow)
    assert s["p_at_1_per_iteration_ratio"] is None and "does not beat" in s["per_iteration_no_value"]
    slow["final_p_at_1"] = slow["curve"][-1]["p_at_1"] = 0.09                  # well above: a ratio
    assert targets.speedup(fast, slow)["p_at_1_per_iteration_ratio"] == pytest.approx(0.0167 / 0.09, rel=0.01)


def test_every_missing_accuracy_per_iteration_says_which_cause():
    """The report shows the row's own words for a NaN ratio: each None has them."""
    fast = _pair_run("slide", [(1, 10, 0.01), (2, 40, 0.02)], 1000.0, 0.0)
    slow = _pair_run("dense", [(4, 2, 0.0), (8, 60, 0.2)], 50.0, 0.0)
    s = targets.speedup(fast, slow)          # dense's last iteration, 60, is past SLIDE's curve (40)
    assert s["p_at_1_per_iteration_ratio"] is None
    assert s["per_iteration_no_value"] == ("slide's curve ends at iteration 40, outside dense's last "
                                           "iteration (60): no P@1 of it to match")
    slow.update(iterations=20, final_p_at_1=0.0)
    slow["curve"][-1]["p_at_1"] = 0.0
    assert targets.speedup(fast, slow)["per_iteration_no_value"] == "dense's final P@1 is 0: no ratio over it"
    del slow["curve"]
    s = targets.speedup(fast, slow)
    assert s["no_value"] == s["per_iteration_no_value"] == "dense recorded no training curve"


@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_a_dense_run_on_any_gpu_holds_its_weights_once_on_the_host(device):
    """The moments of a CUDA run live on the device (cuda:N as cuda): the host holds the draw."""
    from impls.slide import footprint

    config = SlideConfig(mode="all", hidden=8)
    on_gpu = footprint.least_bytes(config, 100, 50, "dense", device)
    assert footprint.least_bytes(config, 100, 50, "dense", "cpu") == 3 * on_gpu
