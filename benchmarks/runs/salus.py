"""Salus's experiment runs: one asv ``setup_cache`` per experiment and device (see :mod:`benchmarks.runs`)."""
from benchmarks.runs import limit
from impls.harness.experiments import run_and_store

def hyperparam(_benchmark=None): return run_and_store("salus.hyperparam")
def hyperparam_cuda(_benchmark=None): return run_and_store("salus.hyperparam", "cuda")
def inference(_benchmark=None): return run_and_store("salus.inference")
def inference_cuda(_benchmark=None): return run_and_store("salus.inference", "cuda")
def lanes(_benchmark=None): return run_and_store("salus.lanes")
def lanes_cuda(_benchmark=None): return run_and_store("salus.lanes", "cuda")
def overhead(_benchmark=None): return run_and_store("salus.overhead")
def policies(_benchmark=None): return run_and_store("salus.policies")
def policies_cuda(_benchmark=None): return run_and_store("salus.policies", "cuda")
def switching(_benchmark=None): return run_and_store("salus.switching")
def switching_cuda(_benchmark=None): return run_and_store("salus.switching", "cuda")


for _setup in (hyperparam, hyperparam_cuda, inference, inference_cuda, lanes, lanes_cuda, overhead, policies,
               policies_cuda, switching, switching_cuda):
    _setup.timeout = limit(1800)
