#!/bin/sh
# Run every registered experiment once through the command line (python -m impls run NAME
# --profile smoke --json -), into a scratch cache, and print one line each: exit status,
# seconds, whether a JSON result came out, and the last line on stderr.
# Usage: sh scripts/run_every_experiment.sh [PROFILE]   (from the repository root, after make setup)
PROFILE=${1:-smoke}
PY=.venv/bin/python
SCRATCH=$(mktemp -d)
for name in $($PY -m impls list --json | $PY -c "import json,sys; print(' '.join(r['name'] for r in json.load(sys.stdin)))"); do
  start=$(date +%s)
  DLSYSBENCH_CACHE=$SCRATCH/cache DLSYSBENCH_ARTIFACTS=$SCRATCH/artifacts \
    $PY -m impls run "$name" --profile "$PROFILE" --json - > "$SCRATCH/$name.json" 2> "$SCRATCH/$name.err"
  rc=$?
  out=$($PY -c "import json,sys; print('json ok' if json.load(open(sys.argv[1])) else 'empty')" "$SCRATCH/$name.json" 2>/dev/null || echo "no json")
  echo "$name rc=$rc $(( $(date +%s) - start ))s $out $(tail -1 "$SCRATCH/$name.err" | cut -c1-150)"
done
rm -rf "$SCRATCH"
