#!/bin/bash
# SLIDE (log-uniform pool variant, and the uniform pool) vs dense PyTorch CPU, same iterations,
# same evaluation points, one after the other in one invocation.
cd "$(dirname "$0")/.."
common="--dataset slide-amazon670k --profile quick --threads 2 --max-iterations 100 --time-budget 100000 --eval-every 20 --eval-points 300 --quiet"
.venv/bin/python -m impls.slide.train $common --method slide --padding batch --padding-sampler log-uniform --json ${TMPDIR:-/tmp}/sbs_freq.json
.venv/bin/python -m impls.slide.train $common --method slide --padding batch --json ${TMPDIR:-/tmp}/sbs_uniform.json
.venv/bin/python -m impls.slide.train $common --method dense --device cpu --json ${TMPDIR:-/tmp}/sbs_dense.json
python3 - <<'PY'
import json, os
runs = {n: json.load(open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"sbs_{n}.json"))) for n in ("freq", "uniform", "dense")}
for n, d in runs.items():
    print(n, round(d["samples_per_second"]), [(p["iteration"], round(p["p_at_1"], 3)) for p in d["curve"]])
dense = {p["iteration"]: p["p_at_1"] for p in runs["dense"]["curve"]}
for n in ("freq", "uniform"):
    ratios = [(p["iteration"], round(p["p_at_1"] / dense[p["iteration"]], 2)) for p in runs[n]["curve"] if dense.get(p["iteration"])]
    print(n, "P@1 / dense P@1 at the same iteration:", ratios)
PY
