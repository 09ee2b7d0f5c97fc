"""Experiment sizes per profile (smoke / quick / full), read from ``impls/profiles.toml``.

A profile is data: each experiment has one table per profile, and code asks for
``sizes("fio_sweep")`` instead of branching on the profile name. Every table is checked,
for every profile, against the schema its system declares (``sizes_schema`` in
``impls/<system>/catalog.py``) when the file is first read: an unknown, missing or
mistyped key is an error naming the table.
"""
from __future__ import annotations

import functools
import os
import tomllib
from pathlib import Path
from typing import Any

PROFILES = ("smoke", "quick", "full")
DEFAULT_PROFILE = "quick"
PROFILE_TABLE = Path(__file__).resolve().parent.parent / "profiles.toml"


class ProfileError(ValueError):
    """``DLSYSBENCH_PROFILE`` names no profile."""


def current_profile() -> str:
    """Return the profile named by ``DLSYSBENCH_PROFILE`` (default ``quick``); raise
    :class:`ProfileError` (one line: what, where, what was expected) for another name."""
    raw = os.environ.get("DLSYSBENCH_PROFILE", DEFAULT_PROFILE)
    name = raw.strip().lower() or DEFAULT_PROFILE
    if name not in PROFILES:
        raise ProfileError(
            f"unknown profile {raw!r}, in the environment variable DLSYSBENCH_PROFILE, "
            f"expected one of {', '.join(PROFILES)}"
        )
    return name


def versioned(pinned: str, profile: str) -> str:
    """The asv version of a benchmark pinned at ``pinned`` when run under ``profile``: the
    pin itself under the default profile, ``"<pin>+<profile>"`` under any other.

    A profile changes what a number measures (sizes, budgets, thread counts), and asv never
    compares two versions, so results of two profiles filed under one machine name (a plain
    ``asv run`` without ``--machine <host>-<profile>``) can never be read as one history."""
    return pinned if profile == DEFAULT_PROFILE else f"{pinned}+{profile}"


# The commit from which a benchmark's version names every profile but the default
# (:func:`versioned`): at it and after, a version naming none is the default profile's.
VERSIONED_SINCE = "4324e4276bdf265ac0d319139935ae5928d8137c"


def machine_profile(machine: str) -> str | None:
    """The profile a machine name ``<host>-<profile>`` (as the suite files results) names, else None."""
    return next((p for p in PROFILES if machine.endswith(f"-{p}")), None)


def profile_of_version(version: str) -> str | None:
    """The profile a benchmark ``version`` made by :func:`versioned` names, or None where it
    names none (the default profile's, or a version from before profiles were versioned)."""
    base, plus, suffix = version.rpartition("+")
    return suffix if plus and base and suffix in PROFILES else None


def other_profile_of_machine(machine: str, profile: str) -> str | None:
    """The profile, other than ``profile``, that asv machine name ``machine`` is filed under
    (its ``-<profile>`` suffix, as ``make`` names machines); None where it names ``profile``
    or none (a machine named by hand)."""
    named = machine.rpartition("-")[2] if "-" in machine else ""
    return named if named in PROFILES and named != profile else None


def pin_of_version(version: str) -> str:
    """``version`` without the profile :func:`versioned` added to it."""
    return version[:-len(profile) - 1] if (profile := profile_of_version(version)) else version


def name_of(text: str) -> str:
    """``text`` as a profile name: stripped and lower-cased (the ``type`` of every --profile)."""
    return str(text).strip().lower()


def resolve(profile: str | None, what: str = "") -> str:
    """Return the profile to use: the current one (:func:`current_profile`) for None, else
    ``profile`` lower-cased and stripped; raise :class:`ProfileError` for a name that is no
    profile (``""`` included). ``what`` ("for dataset 'x'") goes into the message."""
    if profile is None:
        return current_profile()
    name = name_of(profile)
    if name not in PROFILES:
        raise ProfileError(f"unknown profile {profile!r}{' ' + what if what else ''}, "
                           f"expected one of {', '.join(PROFILES)}")
    return name


@functools.cache
def _table(path: Path = PROFILE_TABLE) -> dict[str, dict[str, dict[str, Any]]]:
    try:
        with open(path, "rb") as handle:
            table = tomllib.load(handle)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: not valid TOML: {err}") from err
    for experiment, by_profile in table.items():
        missing = [p for p in PROFILES if p not in by_profile]
        if missing:
            raise ValueError(f"{path}: [{experiment}] has no table for profile(s) {missing}")
    if path == PROFILE_TABLE:
        from impls.harness import experiments

        schemas = experiments.schemas()
        for name, by_profile in table.items():
            if name not in schemas:
                raise ValueError(f"{path}: [{name}] has no sizes schema (declare one with sizes_schema "
                                 "in its system's catalog.py)")
            for profile in PROFILES:
                experiments.validate_sizes(name, profile, by_profile[profile], schemas[name])
    return table


def experiments() -> list[str]:
    """Return the names of every experiment that has sizes."""
    return sorted(_table())


def sizes(experiment: str, profile: str | None = None) -> dict[str, Any]:
    """Return a copy of the sizes in table ``[experiment.<profile>]`` (default profile: the
    current one); ``KeyError`` naming the missing table and the file when there is none."""
    table = _table()
    profile = resolve(profile)
    if experiment not in table:
        raise KeyError(
            f"no profile table [{experiment}.{profile}] in {PROFILE_TABLE}; expected one of the tables "
            f"{', '.join(sorted(table))}, or a new [{experiment}.<profile>] for each of {', '.join(PROFILES)}"
        )
    return dict(table[experiment][profile])
