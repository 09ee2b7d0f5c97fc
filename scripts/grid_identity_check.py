"""Check that Bandana's simulation experiments give the same artifacts as at a base commit.

Runs ``layout_policy_experiment`` and ``subcluster_sweep`` (profile from
``DLSYSBENCH_PROFILE``, default smoke) here and in a copy of ``--base`` (``git
archive``, nothing written to this checkout), each in its own process, and
compares their JSON byte for byte after dropping the fields that are wall-clock
timings (keys ending in ``seconds``, ``speedup``): those measure this machine,
the rest is deterministic. Exit 0 when identical, 1 with the first differences.

    DLSYSBENCH_PROFILE=smoke python scripts/grid_identity_check.py --base 75689c6
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMED = ("seconds", "speedup")

DUMP = r"""
import json, sys
from impls.bandana.experiments import simulation as E
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if not str(k).endswith(%r)}
    if isinstance(x, (list, tuple)):
        return [strip(v) for v in x]
    return x
out = {"layout_policy": strip(E.layout_policy_experiment(progress=False)),
       "subcluster_sweep": strip(E.subcluster_sweep(progress=False))}
sys.stdout.write(json.dumps(out, sort_keys=True, default=str))
""" % (TIMED,)


def dump(root: Path, env: dict[str, str]) -> str:
    """Run the experiments with ``root``'s code; their JSON (timings dropped)."""
    env = {**env, "PYTHONPATH": str(root), "DLSYSBENCH_ROOT": str(root)}
    done = subprocess.run([sys.executable, "-c", DUMP], cwd=root, env=env, check=True,
                          capture_output=True, text=True)
    return done.stdout


def diff(a: str, b: str, limit: int = 10) -> list[str]:
    """Paths where two JSON documents differ (at most ``limit``)."""
    found: list[str] = []

    def walk(x, y, path):
        if len(found) >= limit:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y)):
                walk(x.get(k, "<missing>"), y.get(k, "<missing>"), f"{path}.{k}")
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (u, v) in enumerate(zip(x, y)):
                walk(u, v, f"{path}[{i}]")
        elif x != y:
            found.append(f"{path}: {x!r} != {y!r}")

    walk(json.loads(a), json.loads(b), "")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="commit to compare with")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    env.setdefault("DLSYSBENCH_PROFILE", "smoke")
    # both copies share this checkout's dataset cache (the traces are the same recipes)
    env.setdefault("DLSYSBENCH_CACHE", str(ROOT / "datasets" / "cache"))
    with tempfile.TemporaryDirectory(prefix="grid-identity-") as tmp:
        archive = Path(tmp) / "base.tar"
        subprocess.run(["git", "archive", "-o", str(archive), args.base], cwd=ROOT, check=True)
        base = Path(tmp) / "base"
        with tarfile.open(archive) as tar:
            tar.extractall(base, filter="data")
        before = dump(base, env)
    after = dump(ROOT, env)
    print(f"profile {env['DLSYSBENCH_PROFILE']}: base {args.base} {len(before)} bytes, "
          f"this checkout {len(after)} bytes (timing fields dropped)")
    if before == after:
        print("identical")
        return 0
    print("DIFFERENT:\n  " + "\n  ".join(diff(before, after)))
    return 1


if __name__ == "__main__":
    sys.exit(main())
