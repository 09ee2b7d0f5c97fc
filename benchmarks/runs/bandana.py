"""Bandana's experiment runs: one asv ``setup_cache`` per experiment (see :mod:`benchmarks.runs`)."""
from benchmarks.runs import limit
from impls.harness.experiments import run_and_store

def fio(_benchmark=None): return run_and_store("bandana.fio")
def layouts(_benchmark=None): return run_and_store("bandana.layouts")
def replay(_benchmark=None): return run_and_store("bandana.replay")
def shp_vs_kahypar(_benchmark=None): return run_and_store("bandana.shp_vs_kahypar")
def speed(_benchmark=None): return run_and_store("bandana.speed")
def subclusters(_benchmark=None): return run_and_store("bandana.subclusters")


for _setup in (fio, layouts, replay, shp_vs_kahypar, speed, subclusters):
    _setup.timeout = limit(3600)
