"""SLIDE's experiment runs: one asv ``setup_cache`` per experiment (see :mod:`benchmarks.runs`)."""
from benchmarks.runs import limit
from impls.harness.experiments import run_and_store

def delicious(_benchmark=None): return run_and_store("slide.delicious")
def real_amazon(_benchmark=None): return run_and_store("slide.real_amazon")
def sweeps(_benchmark=None): return run_and_store("slide.sweeps")
# slide.time_to_accuracy: a name starting with time_ would be an asv benchmark.
def to_accuracy(_benchmark=None): return run_and_store("slide.time_to_accuracy")


for _setup in (delicious, real_amazon, sweeps, to_accuracy):
    _setup.timeout = limit(6 * 3600)
