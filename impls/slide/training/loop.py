"""The timed training loop shared by SLIDE and the PyTorch baselines, and the result they return.

:func:`run` draws batches from a shuffled order of the training points (or of the given
``train_rows``; a new permutation each epoch, from ``seed + 1``), times each step with the trainer's timer, evaluates on the
trainer's schedule and at the end, and stops at ``time_budget_s`` training seconds or after
``max_iterations`` batches. ``seconds`` in the curve counts training only (evaluation is
timed apart). :func:`result` builds the keys every trainer's result dict shares, so SLIDE,
dense and sampled-softmax runs can be compared key for key.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time
from typing import Any, Callable, Protocol

import numpy as np

from impls.harness.process_memory import peak_rss_bytes
from impls.slide.core.config import TrainingDiverged

# A batch loss above it is divergence: a softmax cross-entropy is ln(labels) at the start and
# reaches 1e6 only when the logits are that large (inputs far beyond TF-IDF scale, or the lr).
DIVERGED_LOSS = 1e6


class Timer(Protocol):
    seconds: float

    def start(self) -> None: ...

    def stop(self) -> float: ...


class WallTimer:
    """Training seconds by the wall clock, one step at a time (``seconds``: their sum)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.clock, self.seconds, self._t0 = clock, 0.0, 0.0

    def start(self) -> None:
        self._t0 = self.clock()

    def stop(self) -> float:
        dt = self.clock() - self._t0
        self.seconds += dt
        return dt


class EvalSchedule:
    """When to evaluate: every ``every`` batches and/or at log-spaced training seconds
    (``first_s``, then each ``growth`` times the previous), so a curve on a log-time axis
    gets evenly spaced points whatever the method's speed."""

    def __init__(self, every: int | None = None, first_s: float | None = None, growth: float = 1.6):
        if first_s is not None and (first_s <= 0 or growth <= 1):
            raise ValueError("eval_first_s must be > 0 and eval_growth > 1")
        self.every, self.growth = every or None, growth
        self.next_s = first_s

    def due(self, iteration: int, seconds: float) -> bool:
        hit = bool(self.every) and iteration % self.every == 0
        if self.next_s is not None and seconds >= self.next_s:
            while self.next_s <= seconds:
                self.next_s *= self.growth
            hit = True
        return hit


@dataclasses.dataclass
class Loop:
    """What :func:`run` measured: the curve (one dict per evaluation), batches and samples
    trained, training / CPU / evaluation seconds."""

    curve: list[dict]
    iterations: int
    samples: int
    train_seconds: float
    cpu_seconds: float
    eval_seconds: float


def run(step: Callable[[np.ndarray], Any], evaluate: Callable[[int, float, float], dict], *, n_points: int,
        batch: int, seed: int, timer: Timer, schedule: EvalSchedule, time_budget_s: float | None,
        max_iterations: int | None, eval_at_start: bool = True,
        report: Callable[[dict], None] | None = None, train_rows: np.ndarray | None = None,
        tick: Callable[[int, float, int], None] | None = None, tick_every_s: float = 15.0) -> Loop:
    """Train with ``step(rows) -> loss`` until the budget is spent; ``evaluate(iteration,
    seconds, loss) -> point`` gives each curve point (``report`` sees each one), and the loop
    sets its ``samples``: the points trained on so far (a batch is at most the rows there are).
    ``train_rows``: the rows to draw from (default: all ``n_points``). ``tick(iteration,
    training seconds, samples)`` is called after a batch when ``tick_every_s`` wall seconds
    have passed since the last evaluation or tick (a heartbeat between sparse evaluations)."""
    if time_budget_s is None and max_iterations is None:
        raise ValueError("set time_budget_s or max_iterations")
    curve: list[dict] = []
    eval_s = 0.0
    last_note = time.perf_counter()

    def evaluate_now(iteration: int, loss: float) -> None:
        nonlocal eval_s, last_note
        t = time.perf_counter()
        point = evaluate(iteration, timer.seconds, loss)
        last_note = time.perf_counter()
        eval_s += last_note - t
        point["samples"] = samples
        curve.append(point)
        if report:
            report(point)

    it = samples = 0
    if eval_at_start:
        evaluate_now(0, math.nan)
    rng = np.random.default_rng(seed + 1)

    def shuffled() -> np.ndarray:
        return rng.permutation(n_points) if train_rows is None else train_rows[rng.permutation(train_rows.size)]

    def budget_left() -> bool:
        return (max_iterations is None or it < max_iterations) and (time_budget_s is None
                                                                    or timer.seconds < time_budget_s)

    order, cursor = shuffled(), 0
    cpu_s, loss = 0.0, math.nan
    while budget_left():
        if cursor + batch > order.size:
            order, cursor = shuffled(), 0
        rows = order[cursor:cursor + batch]
        cursor += rows.size
        c = time.process_time()
        timer.start()
        out = step(rows)
        timer.stop()
        cpu_s += time.process_time() - c
        loss = float(out)
        it += 1
        if not math.isfinite(loss):
            raise TrainingDiverged(it, f"the loss ({loss})")
        if loss > DIVERGED_LOSS:
            raise TrainingDiverged(it, f"the loss ({loss:.3g})", f"is above {DIVERGED_LOSS:g}, which a "
                                   "cross-entropy reaches only with logits of that size")
        samples += rows.size
        if schedule.due(it, timer.seconds):
            evaluate_now(it, loss)
        elif tick is not None and time.perf_counter() - last_note >= tick_every_s and budget_left():
            tick(it, timer.seconds, samples)
            last_note = time.perf_counter()
    if not curve or curve[-1]["iteration"] != it:
        evaluate_now(it, loss)
    return Loop(curve, it, samples, timer.seconds, cpu_s, eval_s)


def result(method: str, loop: Loop, *, baseline_p_at_1: float, eval_points: int, threads: int,
           setup_seconds: float, active_fraction: float, n_labels: int, params: dict, data: dict) -> dict[str, Any]:
    """The keys every trainer returns: curve, throughput (samples/s), iterations, seconds,
    final and most-popular-label P@1, active fraction of the output layer, threads, the
    cores' busy fraction while training, peak RSS (bytes), parameters and data statistics."""
    final, train_s = loop.curve[-1], loop.train_seconds
    return {
        "method": method, "curve": loop.curve,
        "samples_per_second": loop.samples / train_s if train_s > 0 else math.nan,
        "iterations": loop.iterations, "samples": loop.samples, "train_seconds": train_s,
        "eval_seconds": loop.eval_seconds, "setup_seconds": setup_seconds,
        "final_p_at_1": final["p_at_1"], "final_p_at_5": final["p_at_5"], "final_loss": final["loss"],
        "baseline_p_at_1": baseline_p_at_1, "active_fraction": active_fraction,
        "mean_active": active_fraction * n_labels, "eval_points": eval_points, "threads": threads,
        "cpu_utilization": loop.cpu_seconds / (train_s * threads) if train_s > 0 else math.nan,
        "peak_rss_bytes": peak_rss_bytes(), "params": params, "data": data,
    }


def print_tick(iteration: int, seconds: float, samples: int) -> None:
    """One line on stderr between evaluations: iteration, training seconds, samples/s."""
    rate = samples / seconds if seconds > 0 else 0.0
    print(f"iter {iteration:6d}  {seconds:8.1f}s  training, {rate:,.0f} samples/s", file=sys.stderr, flush=True)


def print_point(point: dict) -> None:
    """One line per evaluation on stderr: iteration, training seconds, P@1, P@5, loss ("-"
    before the first step, which has none)."""
    loss = point["loss"]
    shown = f"{loss:.4f}" if isinstance(loss, (int, float)) and math.isfinite(loss) else "-"   # none before a step
    print(f"iter {point['iteration']:6d}  {point['seconds']:8.1f}s  P@1 {point['p_at_1']:.4f}  "
          f"P@5 {point['p_at_5']:.4f}  loss {shown}", file=sys.stderr, flush=True)
