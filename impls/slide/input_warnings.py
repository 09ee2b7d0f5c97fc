"""What the SLIDE command line warns of in its inputs before it trains, and in its result
after: data a model cannot learn from as given (unlabelled, featureless or unscaled rows,
labels no training point carries, test points that are training points; the real-data
experiment logs the same lines), and
settings that do not fit the data (another set's defaults, too few labels for hash tables
to be sparse). A warning never stops a run."""
from __future__ import annotations

import numpy as np

from impls.harness import cli, profiles

ROW_NORM_WARN = 3.0          # a median training-row L2 norm above it is warned of (TF-IDF rows are near 1)
LARGEST_USUAL_VALUE = 1e6   # a feature value above it is warned of: no TF-IDF weight or count is near it
UNSEEN_LABELS_SUSPECT = 0.05  # above this share of test points with only unseen labels, two sets are suspected
DENSE_ACTIVE_SHARE = 0.25    # SLIDE computing this share of the labels a sample or more is not sparse
SHARED_WARN = 0.01           # test points that are training points too, from this share up, are warned of
# the flags of the suite's own SLIDE run on Delicious-shaped data (the paper's choice for it)
DELICIOUS_FLAGS = ("lsh", "K", "L", "batch", "padding", "lr")


def warn_about_inputs(args, train_data, test_data) -> None:
    """Warn (stderr) of what in the training and test data (XCData) a model cannot learn from
    as given (:func:`data_warnings`, at ``args.lr``), and of defaults chosen for another set
    than the one given (:func:`set_defaults_note`)."""
    for line in data_warnings(train_data, test_data, args.lr, "--lr"):
        cli.warn(line)
    note = set_defaults_note(args)
    if note:
        cli.warn(note)


def data_warnings(train_data, test_data, lr: float, lr_name: str) -> list[str]:
    """The warnings (lines, without "warning: ") of what in the training and test data (XCData)
    a model cannot learn from as given: unlabelled, repeated-feature, featureless or huge-valued
    rows, test points no training label reaches, test points that are training points
    (:func:`shared_points`, from :data:`SHARED_WARN` of them), and training rows whose median L2 norm
    (:func:`~impls.slide.data.xc_format.median_row_norm`) is far from 1 for a run at
    learning rate ``lr`` (``lr_name`` says where that rate is set); [] when none applies."""
    from impls.slide.core.config import SlideConfig
    from impls.slide.data.xc_format import median_row_norm, repeated_feature_points, row_norms

    lines = []
    for split, data in (("training", train_data), ("test", test_data)):
        unlabelled = data.n_points - data.labelled_rows().size
        if unlabelled:
            lines.append(f"{unlabelled} of {data.n_points} {split} points have no labels: "
                         + ("left out of training" if split == "training" else "each counts as a miss in P@k"))
        repeats = repeated_feature_points(data.indptr, data.indices)
        if repeats:
            lines.append(f"{repeats} of {data.n_points} {split} points list a feature more than once: the model "
                         "sums their values, as one feature with the sum")
        featureless = data.n_points - int(np.count_nonzero(row_norms(data)))   # norms of the rows with features
        if featureless:
            lines.append(f"{featureless} of {data.n_points} {split} points have no features (or only zero values): "
                         "a model sees the same all-zero input for each, so it can only rank the labels by "
                         "popularity there")
        largest = float(np.abs(data.values).max()) if data.values.size else 0.0
        if largest > LARGEST_USUAL_VALUE:
            lines.append(f"the {split} file holds a feature value of {largest:.3g}: XC values are TF-IDF weights "
                         f"or counts, far below {LARGEST_USUAL_VALUE:g}; activations this large lose precision in "
                         "float32 and training may diverge or learn nothing (were the rows scaled?)")
    unlearnable = unseen_label_points(train_data, test_data)
    if unlearnable:
        n = max(test_data.n_points, 1)
        share = unlearnable / n
        why = ("are the two files of one set, with the same label ids?" if share > UNSEEN_LABELS_SUSPECT
               else "a few, as a real set's tail labels give")
        unlabelled = test_data.n_points - test_data.labelled_rows().size      # each a miss as well
        also = f", and the {unlabelled} without labels are misses too" if unlabelled else ""
        lines.append(f"{unlearnable} of {test_data.n_points} test points carry only labels that no training "
                     f"point carries: no model learns to rank those labels first{also}, so P@1 is at most "
                     f"{below_one(1 - (unlearnable + unlabelled) / n)} ({why})")
    shared = shared_points(train_data, test_data)
    if shared and shared >= SHARED_WARN * test_data.n_points:
        lines.append(f"{shared} of {test_data.n_points} test points are also training points (the same features, "
                     "values and labels): P@k on them measures memorisation, not generalisation (is the test file a copy "
                     "or a part of the training file?)")
    norm = median_row_norm(train_data)
    if norm > ROW_NORM_WARN:
        lines.append(f"the training rows' median L2 norm is {norm:.3g} (raw counts?): the default learning rate "
                     f"{SlideConfig.lr:g} was chosen on TF-IDF rows of norm about 1, and at this scale a model may "
                     f"never leave the most popular label; scale each row to unit L2 norm, or lower {lr_name} "
                     f"({lr:g} now)")
    return lines


def below_one(x: float) -> str:
    """``x`` (a share, 0-1) with 3 significant digits, more where those would round a value
    below 1 up to "1"."""
    text = f"{x:.3g}"
    if x < 1 and float(text) >= 1:
        text = f"{x:.6f}".rstrip("0")
    return text


DIGEST_CHUNK = 1 << 20   # entries mixed at once by :func:`row_digests`: its temporaries stay ~50 MB


def row_digests(data) -> np.ndarray:
    """One uint64 per point of ``data`` (XCData) that is the same for two points with the same
    features, values and labels, whatever their order in the row (a sum of each entry's
    64-bit mix, wrapping); two other points share one with probability about 2**-64. Works
    through the entries :data:`DIGEST_CHUNK` at a time: memory beyond the result is bounded
    whatever the file's size."""
    values = np.ascontiguousarray(data.values, dtype=np.float32).view(np.uint32)
    features = _row_sums(data.indices, values, np.asarray(data.indptr), 1)
    labels = _row_sums(data.labels, None, np.asarray(data.label_indptr), 2)
    with np.errstate(over="ignore"):
        return features + labels * np.uint64(3)


def _mixed(ids: np.ndarray, bits: np.ndarray | None, salt: int) -> np.ndarray:
    """splitmix64's finaliser of each (id, value bits, salt) entry, as uint64."""
    with np.errstate(over="ignore"):
        x = ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(salt)
        if bits is not None:
            x += bits.astype(np.uint64)
        for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
            x = (x ^ (x >> np.uint64(shift))) * np.uint64(factor)
        return x ^ (x >> np.uint64(31))


def _row_sums(ids: np.ndarray, bits: np.ndarray | None, indptr: np.ndarray, salt: int) -> np.ndarray:
    """Per row of CSR ``indptr``, the wrapping sum of its entries' :func:`_mixed` values."""
    at = np.zeros(len(indptr), np.uint64)       # the sum of the first indptr[i] entries
    carry = np.uint64(0)
    for start in range(0, len(ids), DIGEST_CHUNK):
        stop = min(start + DIGEST_CHUNK, len(ids))
        with np.errstate(over="ignore"):
            running = np.cumsum(_mixed(ids[start:stop], None if bits is None else bits[start:stop], salt),
                                dtype=np.uint64) + carry
        first, last = np.searchsorted(indptr, start + 1, "left"), np.searchsorted(indptr, stop, "right")
        at[first:last] = running[indptr[first:last] - start - 1]
        carry = running[-1]
    with np.errstate(over="ignore"):
        return at[1:] - at[:-1]


def shared_points(train, test) -> int:
    """How many ``test`` points (XCData) are also points of ``train``: the same features, values
    and labels (:func:`row_digests`)."""
    if not train.n_points or not test.n_points:
        return 0
    return int(np.count_nonzero(np.isin(row_digests(test), row_digests(train))))


def unseen_label_points(train, test) -> int:
    """How many labelled ``test`` points (XCData) carry no label that any ``train`` point
    carries (0 when the two splits share every test label)."""
    rows = test.labelled_rows()
    if not rows.size:
        return 0
    seen = (train.label_counts() > 0).astype(np.int64)[test.labels]
    return int(np.count_nonzero(np.add.reduceat(seen, test.label_indptr[rows]) == 0))


def delicious_flags(profile: str | None = None) -> dict[str, object]:
    """The flags of :data:`DELICIOUS_FLAGS` the profile's Delicious experiment
    (``slide_delicious``, impls/profiles.toml) gives its SLIDE run, as ``{flag: value}``."""
    runs = profiles.sizes("slide_delicious", profile).get("runs", [])
    run = next((r for r in runs if r.get("method") == "slide"), {})
    return {flag: run[flag] for flag in DELICIOUS_FLAGS if flag in run}


def set_defaults_note(args) -> str | None:
    """For a SLIDE run on Delicious-200K's files (``--real`` names or recognises them) or on the
    registry's Delicious-shaped set, with some of the Delicious run's flags left at the command
    line's defaults (chosen for Amazon-670K): a line naming the flags the suite's Delicious
    experiment uses; None otherwise."""
    delicious = getattr(args, "real_set", None) == "delicious-200k" or str(
        getattr(args, "dataset", None) or "").startswith("slide-delicious")
    if not delicious or getattr(args, "method", "slide") != "slide":
        return None
    wanted = delicious_flags(getattr(args, "profile", None))
    left = {flag: value for flag, value in wanted.items() if flag not in args.given and getattr(args, flag) != value}
    if not left:
        return None
    flags = " ".join(f"--{flag.replace('_', '-')} {value}" for flag, value in left.items())
    return (f"this is a Delicious-200K-shaped set, and the command line's defaults are the Amazon-670K runs': "
            f"the suite's Delicious experiment (slide_delicious in impls/profiles.toml, SimHash as the paper "
            f"chose for this set) trains SLIDE with {flags}")


def sparsity_note(result: dict) -> str | None:
    """For a SLIDE result whose tables gave each sample :data:`DENSE_ACTIVE_SHARE` of the labels
    or more (not ``--mode all``, which computes every label by design): a line saying the run is not sparse (too few labels for the tables to pick a few)
    and what its recall against a random set's means then; None otherwise."""
    share = result.get("active_fraction")
    if result.get("method") != "slide" or share is None or not share >= DENSE_ACTIVE_SHARE:
        return None
    if (result.get("params") or {}).get("mode") == "all":      # every label by design: nothing hashed
        return None
    labels = round(result.get("mean_active", 0.0) / share)
    ratio = result.get("lsh_recall_min_ratio")
    recall = f" (worst recall of the best-scoring wrong labels {ratio:.2g}x a random set's)" if ratio is not None else ""
    return (f"SLIDE computed {share:.0%} of the {labels} labels a sample{recall}: with this few labels the hash "
            "tables cannot pick a small set, so this is close to sampling labels at random; the dense "
            "baseline (--method dense) is the natural run here")
