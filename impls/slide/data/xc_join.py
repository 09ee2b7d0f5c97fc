"""Join the XC repository's newer two-file format into the one file the suite reads.

Newer downloads split a set into a features file (first line ``N D``, then one line of
``f:v f:v ...`` a point: ``trn_X_Xf.txt``) and a labels file (first line ``N L``, then one
line a point: ``l1,l2``, ``l1 l2`` or ``l1:1.0 l2:1.0``: ``trn_X_Y.txt``; a label's value
other than 1, a weight, is dropped and the label kept, said on stderr with their count).
``python -m impls.slide.data.xc_join FEATURES LABELS OUT`` writes ``OUT`` as ``N D L`` and
``l1,l2 f:v ...`` lines (:mod:`impls.slide.data.xc_format`). Both inputs must be regular
files (they are read more than once) and hold N points, one line each (a blank line is a
point with nothing; blank lines after the N-th are ignored); otherwise nothing is written
and the error says which file and why. A point with neither labels nor features is written
as a blank line, at the end as anywhere (the reader takes blank lines at the end as points
as far as N counts them). Inputs that look given in swapped order (by
the names the repository gives them, or by their first lines' tokens) are refused, with the
command that has them the other way round. ``OUT`` appears whole or not at all
(:func:`impls.harness.atomic.replacing`). Two passes over the inputs, one line of each in memory.
"""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from impls.harness import atomic, cli
from impls.slide.data import xc_format


class JoinError(ValueError):
    """The two files cannot be joined (one line: which file, what, what was expected)."""


_HEADER_BYTES = 1 << 16    # at most this much of a first line is read: a packed file may hold no newline for long


def _header(path: Path, what: str) -> tuple[int, int]:
    """The two numbers of ``path``'s first line; raises :class:`JoinError` (one line, no raw
    bytes: :func:`~impls.slide.data.xc_format.shown`) when it is not two numbers, saying
    when the file looks compressed, has a byte-order mark, is UTF-16, ends its lines in CR
    alone (:func:`~impls.slide.data.xc_format.encoding_hint`) or is already one XC file."""
    with open(path, "rb") as f:
        line = f.readline(_HEADER_BYTES).rstrip(b"\r\n")
    first = line.split()
    if len(first) != 2 or not all(p.isdigit() for p in first):
        hint = xc_format.encoding_hint(line)
        if hint is None and len(first) == 3 and all(p.isdigit() for p in first):
            hint = (f"got {xc_format.shown(line)}, the header of an XC file already joined ('N D L'): give it "
                    "to --train/--test as it is")
        raise JoinError(f"{path}:1: expected the {what} file's header 'N {'D' if what == 'features' else 'L'}' "
                        f"(two numbers), {hint or 'got ' + xc_format.shown(line)}")
    return int(first[0]), int(first[1])


SNIFF_LINES = 1000   # the first non-blank data lines of each file checked for the other file's form
SWAP_RATIO = 2.0     # labels a point over this many times its features: the pair is likely swapped (a warning)


def _swap_advice(features: Path, labels: Path, out: Path) -> str:
    """The order the arguments go in, and the command with the two inputs swapped."""
    swapped = " ".join(shlex.quote(str(p)) for p in (labels, features, out))
    return (f"the arguments are FEATURES LABELS OUT (e.g. trn_X_Xf.txt trn_X_Y.txt train.txt); if the two are "
            f"swapped, run {xc_format.JOIN_COMMAND} {swapped}")


def _check_order(features: Path, labels: Path, out: Path) -> None:
    """Raise :class:`JoinError` when the two inputs look given in swapped order: by their names
    (the repository names the features file ``*X_Xf*`` and the labels file ``*X_Y*``) or by
    their first :data:`SNIFF_LINES` non-blank data lines (a features token is ``f:v``: one
    without ':' is a label list). A labels token is ``l`` or ``l:v``; a v other than 1 is
    refused as a feature's only when neither the names (first ``*X_Xf*``, second ``*X_Y*``)
    nor the features file's values (some other than 1) confirm the order; otherwise the value
    is dropped at the join (:func:`join` warns with their count). Without names that confirm
    the order, when those lines of the labels file hold over :data:`SWAP_RATIO` times the
    features file's tokens on average (XC points have several times fewer labels than
    features), a warning (:func:`~impls.slide.data.xc_format.warn`) says they may be swapped."""
    advice = _swap_advice(features, labels, out)
    if "X_Y" in features.name:
        raise JoinError(f"{features}: named like a labels file (X_Y) but given first, as the features file: {advice}")
    if "X_Xf" in labels.name:
        raise JoinError(f"{labels}: named like a features file (X_Xf) but given second, as the labels file: {advice}")
    named = "X_Xf" in features.name and "X_Y" in labels.name
    odd, feature_tokens, weighted = _sniff(features, lambda t: b":" not in t, commas=False, marked=_weighted)
    if odd:
        said = (f"{features}:{odd[0]}: the features file (the first argument) has {xc_format.shown(odd[1], 40)}, "
                "not 'feature:value' (a label list?)")
        if named:
            raise JoinError(f"{said}, though the names say features (X_Xf) then labels (X_Y): check which file is "
                            "which and that each is whole")
        raise JoinError(f"{said}: {advice}")
    odd, label_tokens, _ = _sniff(labels, _weighted, commas=True)
    if odd and not named and not weighted:
        raise JoinError(f"{labels}:{odd[0]}: the labels file (the second argument) has {xc_format.shown(odd[1], 40)}, "
                        f"a value other than 1 (a feature?), and {features}'s first lines have none (weighted labels "
                        f"in the right order? name the files like the repository, *X_Xf* then *X_Y*): {advice}")
    if not named and label_tokens > SWAP_RATIO * feature_tokens:
        xc_format.warn(f"{labels}: its first lines hold {label_tokens:.1f} labels a point on average, over "
                       f"{SWAP_RATIO:g}x the {feature_tokens:.1f} features of {features}'s; XC points have fewer "
                       f"labels than features, so the two may be swapped: {advice}")


_ONES = frozenset((b"1", b"1.0", b"1.00", b"1.000", b"1.0000", b"1.00000", b"1.000000"))


def _weighted(token: bytes) -> bool:
    """Whether ``token`` is ``x:v`` with v other than 1 (a feature's value, or a label's weight)."""
    if b":" not in token:
        return False
    value = token.split(b":", 1)[1]
    return value not in _ONES and not _is_one(value)


def _is_one(value: bytes) -> bool:
    try:
        return float(value) == 1.0
    except ValueError:
        return False


def _sniff(path: Path, odd, commas: bool, marked=None) -> tuple[tuple[int, bytes] | None, float, int]:
    """Over ``path``'s first :data:`SNIFF_LINES` non-blank data lines, tokens split at
    whitespace (and at commas with ``commas``): ``((line number, token) of the first token for
    which odd(token) holds, or None; the mean tokens a line, 0.0 with no such line; the
    number of tokens for which marked(token) holds, 0 without ``marked``)``."""
    lines = tokens_seen = count = 0
    first = None
    with open(path, "rb") as f:
        f.readline()
        for number, line in enumerate(f, start=2):
            tokens = (line.replace(b",", b" ") if commas else line).split()
            if first is None:
                token = next((t for t in tokens if odd(t)), None)
                if token is not None:
                    first = (number, token)
            if marked is not None:
                count += sum(map(marked, tokens))
            lines += bool(tokens)
            tokens_seen += len(tokens)
            if lines >= SNIFF_LINES:
                break
    return first, tokens_seen / max(lines, 1), count


def _labels(line: bytes) -> bytes:
    """``l1,l2`` from a labels line in any of the three forms (values dropped)."""
    return b",".join(token.split(b":", 1)[0] for token in line.replace(b",", b" ").split())


def _weights(line: bytes) -> int:
    """The number of a labels line's values other than 1 (which :func:`_labels` drops)."""
    return sum(map(_weighted, line.replace(b",", b" ").split())) if b":" in line else 0


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


EXAMPLE_NAMES = {"features": "trn_X_Xf.txt", "labels": "trn_X_Y.txt"}   # the repository's own names


def _check_inputs(features: Path, labels: Path, out: Path) -> None:
    for path, what in ((features, "features"), (labels, "labels")):
        if not path.exists():
            raise JoinError(f"{path}: the {what} file does not exist")
        if path.is_dir():
            raise JoinError(f"{path}: the {what} file is a folder; expected the {what} file in it")
        if not path.is_file():
            raise JoinError(f"{path}: the {what} file must be a regular file, read more than once (not a pipe "
                            f"or process substitution): save it to a file first, e.g. unzip -p SET.zip "
                            f"{EXAMPLE_NAMES[what]} > {EXAMPLE_NAMES[what]}")
    if features.resolve() == labels.resolve():
        raise JoinError(f"{features}: given as both the features and the labels file")
    if out.resolve() in (features.resolve(), labels.resolve()):
        raise JoinError(f"{out}: the output would overwrite an input; name another file")
    if not out.resolve().parent.is_dir():
        raise JoinError(f"{out}: its folder {out.resolve().parent} does not exist")


def join(features: str | os.PathLike, labels: str | os.PathLike, out: str | os.PathLike) -> int:
    """Write the joined file ``out``; return the points written (the headers' N). Raises
    :class:`JoinError` before writing anything when an input is not a regular file, a header
    is not two numbers, the headers' N differ, the inputs look given in swapped order
    (:func:`_check_order`), or a file holds another number of points than its N; ``out`` is
    replaced only once it is whole, and then a warning
    (:func:`~impls.slide.data.xc_format.warn`) counts the label values other than 1 dropped."""
    features, labels, out = Path(features), Path(labels), Path(out)
    _check_inputs(features, labels, out)
    n, d = _header(features, "features")
    m, n_labels = _header(labels, "labels")
    if n != m:
        raise JoinError(f"{features} holds {n} points (its header) but {labels} holds {m}: not one set's pair")
    _check_order(features, labels, out)
    for path in (features, labels):
        _points(path, n)
    with open(features, "rb") as x, open(labels, "rb") as y, atomic.replacing(out) as w:
        x.readline()
        y.readline()
        w.write(f"{n} {d} {n_labels}\n".encode())
        weighted = 0
        for _, a, b in zip(range(n), x, y):
            weighted += _weights(b)
            w.write(_labels(b) + b" " + a.strip() + b"\n")
    if weighted:
        xc_format.warn(f"{labels}: {weighted} label values other than 1 are dropped; each label is kept")
    return n


@cli.command("python -m impls.slide.data.xc_join")
def main(argv: list[str] | None = None) -> int:
    """Join the two files; 0 on success, 2 on bad input (nothing written), 130 on Ctrl-C
    (``out`` not replaced)."""
    p = cli.parser(prog="python -m impls.slide.data.xc_join", description=__doc__.split("\n\n")[0])
    p.add_argument("features", help="the features file (first line 'N D')")
    p.add_argument("labels", help="the labels file (first line 'N L')")
    p.add_argument("out", help="the XC file to write ('N D L', lines 'l1,l2 f:v ...')")
    args = p.parse_args(argv)
    print(f"wrote {args.out}: {join(args.features, args.labels, args.out)} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
