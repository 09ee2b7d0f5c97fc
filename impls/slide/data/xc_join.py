"""Join the XC repository's newer two-file format into the one file the suite reads.

Newer downloads split a set into a features file (first line ``N D``, then one line of
``f:v f:v ...`` a point: ``trn_X_Xf.txt``) and a labels file (first line ``N L``, then one
line a point: ``l1,l2``, ``l1 l2`` or ``l1:1.0 l2:1.0``: ``trn_X_Y.txt``).
``python -m impls.slide.data.xc_join FEATURES LABELS OUT`` writes ``OUT`` as ``N D L`` and
``l1,l2 f:v ...`` lines (:mod:`impls.slide.data.xc_format`). Both inputs must be regular
files (they are read more than once) and hold N points, one line each (a blank line is a
point with nothing; blank lines after the N-th are ignored); otherwise nothing is written
and the error says which file and why. Points at the end with neither labels nor features
cannot be told from the trailing blank lines the format ignores, so they are left out and N
is lowered by their number (said on stderr). ``OUT`` appears whole or not at all
(:func:`impls.harness.atomic.replacing`). Two passes over the inputs, one line of each in memory.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from impls.harness import atomic


class JoinError(ValueError):
    """The two files cannot be joined (one line: which file, what, what was expected)."""


def _header(path: Path, what: str) -> tuple[int, int]:
    with open(path, "rb") as f:
        first = f.readline().split()
    if len(first) != 2 or not all(p.isdigit() for p in first):
        shown = b" ".join(first)[:80].decode("ascii", "replace")
        raise JoinError(f"{path}:1: expected the {what} file's header 'N {'D' if what == 'features' else 'L'}' "
                        f"(two numbers), got {shown!r}")
    return int(first[0]), int(first[1])


def _labels(line: bytes) -> bytes:
    """``l1,l2`` from a labels line in any of the three forms."""
    return b",".join(token.split(b":", 1)[0] for token in line.replace(b",", b" ").split())


def _points(path: Path, n: int) -> None:
    """Raise :class:`JoinError` unless ``path`` holds exactly ``n`` lines after its header,
    blank lines after the ``n``-th aside (a last line without a newline counts)."""
    lines = extra = 0
    with open(path, "rb") as f:
        f.readline()
        for line in f:
            lines += 1
            if lines > n and line.strip():
                extra += 1
    if lines < n:
        raise JoinError(f"{path}: {lines} point lines after the header, which says {n}: a cut file (or its last "
                        "points, empty, were written without their lines)")
    if extra:
        raise JoinError(f"{path}: {extra} more non-blank lines after the {n} points its header says: not one "
                        "set's file, or a wrong header")


def _check_inputs(features: Path, labels: Path, out: Path) -> None:
    for path, what in ((features, "features"), (labels, "labels")):
        if not path.is_file():
            raise JoinError(f"{path}: the {what} file must be a regular file, read more than once (not a pipe, "
                            "process substitution or folder): save it to a file first, e.g. unzip -p SET.zip "
                            "trn_X_Xf.txt > trn_X_Xf.txt")
    if features.resolve() == labels.resolve():
        raise JoinError(f"{features}: given as both the features and the labels file")
    if out.resolve() in (features.resolve(), labels.resolve()):
        raise JoinError(f"{out}: the output would overwrite an input; name another file")
    if not out.resolve().parent.is_dir():
        raise JoinError(f"{out}: its folder {out.resolve().parent} does not exist")


def join(features: str | os.PathLike, labels: str | os.PathLike, out: str | os.PathLike) -> tuple[int, int]:
    """Write the joined file ``out``; return ``(points written, empty points left out at the
    end)``. Raises :class:`JoinError` before writing anything when an input is not a regular
    file, a header is not two numbers, the headers' N differ, or a file holds another number
    of points than its N; ``out`` is replaced only once it is whole."""
    features, labels, out = Path(features), Path(labels), Path(out)
    _check_inputs(features, labels, out)
    n, d = _header(features, "features")
    m, n_labels = _header(labels, "labels")
    if n != m:
        raise JoinError(f"{features} holds {n} points (its header) but {labels} holds {m}: not one set's pair")
    for path in (features, labels):
        _points(path, n)
    with open(features, "rb") as x, open(labels, "rb") as y:
        x.readline()
        y.readline()
        pairs = zip(range(n), x, y)
        kept = 1 + max((i for i, a, b in pairs if a.strip() or b.strip()), default=-1)
    with open(features, "rb") as x, open(labels, "rb") as y, atomic.replacing(out) as w:
        x.readline()
        y.readline()
        w.write(f"{kept} {d} {n_labels}\n".encode())
        for _, a, b in zip(range(kept), x, y):
            w.write(_labels(b) + b" " + a.strip() + b"\n")
    return kept, n - kept


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m impls.slide.data.xc_join", description=__doc__.split("\n\n")[0])
    p.add_argument("features", help="the features file (first line 'N D')")
    p.add_argument("labels", help="the labels file (first line 'N L')")
    p.add_argument("out", help="the XC file to write ('N D L', lines 'l1,l2 f:v ...')")
    args = p.parse_args(argv)
    try:
        kept, dropped = join(args.features, args.labels, args.out)
    except (JoinError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: {args.out} not written", file=sys.stderr)
        return 130
    if dropped:
        print(f"warning: the last {dropped} points have neither labels nor features, which the format cannot hold "
              f"at a file's end; left out, N = {kept}", file=sys.stderr)
    print(f"wrote {args.out}: {kept} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
