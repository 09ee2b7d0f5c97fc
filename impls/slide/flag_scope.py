"""Which of ``python -m impls.slide.train``'s flags a run uses: one table (:data:`SCOPES`,
:data:`FLAG_SCOPE`), checked once after parsing (:func:`warn_unused`), so that a flag the user
gave and the run ignores is named in a warning instead of passing silently.

A flag left at its default never warns (:func:`given_flags` tells them apart); flags that
every run uses (``--lr``, ``--batch``, ``--hidden``, ``--seed``, ...) are not in the table.
"""
from __future__ import annotations

import argparse
from typing import Callable


def builds_tables(method: str, mode: str) -> bool:
    """Whether a run of ``method`` (slide / dense / sampled) in SLIDE ``mode`` draws hash
    functions and builds tables: SLIDE outside mode "all"."""
    return method == "slide" and mode != "all"


def _tables(method: str, args: argparse.Namespace) -> bool:
    return builds_tables(method, args.mode)


# scope: (the runs that use a flag, in words; does this run use it? from the resolved method
# (slide / dense / sampled) and the parsed flags)
SCOPES: dict[str, tuple[str, Callable[[str, argparse.Namespace], bool]]] = {
    "torch": ("the torch baselines (--method dense or sampled)", lambda m, a: m != "slide"),
    "sampled": ("--method sampled", lambda m, a: m == "sampled"),
    "slide": ("--method slide", lambda m, a: m == "slide"),
    "tables": ("--method slide outside --mode all (SLIDE's hash tables)", _tables),
    "bins": ("--method slide --lsh wta or dwta, outside --mode all", lambda m, a: _tables(m, a) and a.lsh != "simhash"),
    "dwta": ("--method slide --lsh dwta, outside --mode all", lambda m, a: _tables(m, a) and a.lsh == "dwta"),
    "topk": ("--method slide --mode topk", lambda m, a: m == "slide" and a.mode == "topk"),
    "threshold": ("--method slide --mode threshold", lambda m, a: m == "slide" and a.mode == "threshold"),
    "pool": ("--method slide --padding batch, outside --mode all", lambda m, a: _tables(m, a) and a.padding == "batch"),
    "eval_first": ("--eval-first", lambda m, a: a.eval_first_s is not None),
}

FLAG_SCOPE = {   # argparse dest: scope; the flag is "--" + dest with "-" for "_"
    "warmup_steps": "torch", "sample_fraction": "sampled", "sampler": "sampled",
    "adam": "slide", "mode": "slide",
    **dict.fromkeys(("K", "L", "lsh", "index", "bucket_capacity", "bucket_policy", "min_active", "padding",
                     "rehash_every", "rebuild_every", "rebuild_at_first_rehash", "schedule", "upkeep"), "tables"),
    "binsize": "bins", "dwta_zeros": "dwta", "topk": "topk", "threshold": "threshold",
    "padding_sampler": "pool", "eval_growth": "eval_first",
}


def given_flags(parser: argparse.ArgumentParser, argv: list[str] | None, parsed: argparse.Namespace) -> set[str]:
    """Return the dests of the flags ``argv`` names (a flag left at its default is not one):
    ``parser``, the one that gave ``parsed``, parses ``argv`` again into a namespace whose
    every dest already holds a marker, which argparse keeps in place of the default."""
    unset = object()
    again = parser.parse_args(argv, argparse.Namespace(**dict.fromkeys(vars(parsed), unset)))
    return {dest for dest, value in vars(again).items() if value is not unset}


def unused(method: str, args: argparse.Namespace) -> dict[str, list[str]]:
    """Return, per scope's words, the flags (``--name``) in ``args.given`` that a run of
    ``method`` with ``args`` does not use, in :data:`FLAG_SCOPE`'s order ({} when it uses all)."""
    out: dict[str, list[str]] = {}
    for dest, scope in FLAG_SCOPE.items():
        where, uses = SCOPES[scope]
        if dest in args.given and not uses(method, args):
            out.setdefault(where, []).append("--" + dest.replace("_", "-"))
    return out


def warn_unused(method: str, args: argparse.Namespace) -> None:
    """Warn (one line per scope) of each flag the user gave that this run does not use."""
    from impls.harness import cli

    for where, flags in unused(method, args).items():
        one = len(flags) == 1
        cli.warn(f"{', '.join(flags)} {'has' if one else 'have'} no effect in this run: "
                 f"{'it applies' if one else 'they apply'} only with {where}")
