"""The names a Salus profile table holds (policies, workloads, lane rules), checked before any work.

A misspelt name in ``impls/profiles.toml`` would otherwise surface only where it is first
used, after minutes of runs, without saying which table holds it; and "FIFO" would run as
FIFO while the FIFO/SRTF ratio and the benchmarks, which read policies by their lower-case
names, silently went missing.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

POLICY_KEYS = ("policies", "repeat_policy")
WORKLOAD_KEYS = ("mix", "workloads", "models")
RULE_KEYS = ("rules", "rule")
# (table, key) -> the kind of workload it must name: the inference experiment serves forward
# passes (a training name would be timed as "inference"), the hyperparam one sets learning rates
KIND_OF = {("salus_inference", "models"): "inference", ("salus_hyperparam", "workloads"): "training"}


def _listed(value: Any, key: str, where: str, single: bool) -> list[str]:
    """The names ``value`` holds under ``key``: a list of strings, or for a ``single`` key one
    string ("" or None: none); ValueError naming ``where`` otherwise."""
    if single:
        value = [value] if value else []
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        shape = "a name" if single else "a list of names"
        raise ValueError(f"{where}: {key}: {value!r} is not {shape}")
    return value


def checked_names(sizes: Mapping[str, Any], table: str) -> dict:
    """A copy of ``sizes`` after checking every policy, workload and lane-rule name under
    :data:`POLICY_KEYS`, :data:`WORKLOAD_KEYS` and :data:`RULE_KEYS` (absent keys are not
    checked). Raises ValueError naming ``[table]`` of ``impls/profiles.toml``, the key and
    the known names: an unknown name, a training workload where :data:`KIND_OF` asks for an
    inference one or the reverse, one listed twice, an empty list (a list key holds at
    least one name; ``repeat_policy`` and ``rule`` may be empty: none), or a name in another
    case than the known one ("FIFO": the experiment's results and the benchmarks key
    policies by name)."""
    from impls.salus.core.policies import POLICIES
    from impls.salus.core.workloads import WORKLOADS, workload_names
    from impls.salus.memory.lanes import BASELINES, RULES

    where = f"[{table}] of impls/profiles.toml"
    kinds = ((POLICY_KEYS, POLICIES, "policy"), (WORKLOAD_KEYS, WORKLOADS, "workload"),
             (RULE_KEYS, RULES + BASELINES, "lane rule"))
    for keys, known, what in kinds:
        for key in keys:
            if key not in sizes:
                continue
            single = key in ("repeat_policy", "rule")
            listed = _listed(sizes[key], key, where, single=single)
            if not single and not listed:
                raise ValueError(f"{where}: {key}: the list is empty; name at least one {what} "
                                 f"(known: {', '.join(known)})")
            unknown = [n for n in listed if n not in known]
            if unknown:
                case = " (names are lower case)" if unknown[0].lower() in known else ""
                raise ValueError(f"{where}: {key}: unknown {what} {unknown[0]!r}{case}; known: {', '.join(known)}")
            kind = KIND_OF.get((table, key))
            wrong = [n for n in listed if kind is not None and WORKLOADS[n].train != (kind == "training")]
            if wrong:
                fits = workload_names(train=kind == "training")
                article = "an" if kind == "inference" else "a"
                raise ValueError(f"{where}: {key}: {wrong[0]!r} is not {article} {kind} workload; expected one of "
                                 f"{', '.join(fits)}")
            twice = next((n for i, n in enumerate(listed) if n in listed[:i]), None)
            if twice is not None:
                raise ValueError(f"{where}: {key}: {sizes[key]!r} names one {what} twice ({twice!r}); "
                                 f"list each once")
    return dict(sizes)
