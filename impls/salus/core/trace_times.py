"""Times and zones of job traces: a trace's number or date as seconds, read in a time zone.

:func:`time_seconds` reads a number of some unit or a date, :func:`date_seconds` a date
(ISO 8601, ``2017-10-07 01:11:39``): a date that names no zone is the wall-clock time of
``zone``, and one that zone shows twice or never (a clock change) raises
:class:`RepeatedTime` / :class:`SkippedTime`. :func:`zone_name` and :func:`time_zone` check
a zone name against the time-zone database.
"""
from __future__ import annotations

import functools
import math
from datetime import datetime, timezone, tzinfo
from zoneinfo import ZoneInfo, available_timezones

ZONE_EXPECTED = "expected an IANA name such as UTC or America/Los_Angeles"
PHILLY_ZONE = "America/Los_Angeles"   # Philly's job log's: the utilisation files of the same trace write PDT / PST


class SkippedTime(ValueError):
    """A wall-clock time that does not exist in the zone it is read in: clocks skipped it."""


class RepeatedTime(ValueError):
    """A wall-clock time that the zone it is read in shows twice, when clocks go back: which
    instant it was is not known."""


def zone_name(name: str | None) -> str:
    """The IANA name of zone ``name`` as the time-zone database spells it ("UTC" for None or
    any case of "utc"). ValueError for a name the database does not list (a typo, a folder
    such as "America", a machine-dependent one such as "localtime")."""
    if name is None or name.strip().upper() == "UTC":
        return "UTC"
    if name not in _zone_names():
        raise ValueError(f"time zone {name!r}; {ZONE_EXPECTED}")
    return name


@functools.cache
def _zone_names() -> frozenset[str]:
    """The database's zone names less those that mean another thing on each machine
    (``localtime``) or count leap seconds (``right/...``)."""
    return frozenset(n for n in available_timezones()
                     if n not in ("localtime", "posixrules", "Factory") and not n.startswith(("right/", "posix/")))


def time_zone(name: str | None) -> tzinfo:
    """The zone IANA name ``name`` names (:func:`zone_name`); UTC for None. ValueError for a
    name the time-zone database does not list."""
    name = zone_name(name)
    return timezone.utc if name == "UTC" else ZoneInfo(name)


DATE_EXAMPLE = "2017-10-07 01:11:39"   # the form of date a trace writes (ISO 8601)


def time_seconds(text: str, where: str, column: str, unit_s: float = 1.0, zone: tzinfo = timezone.utc) -> float:
    """A time as seconds: a finite number of units of ``unit_s`` seconds, or a date as
    :func:`date_seconds` reads it. ValueError for anything else that is no time."""
    value = text.strip()
    try:
        number = float(value) * unit_s
    except ValueError:
        return date_seconds(text, where, column, zone, "seconds or a date")
    if not math.isfinite(number):
        raise ValueError(f"{where}: {column} {text!r}; expected a finite number of seconds")
    return number


def date_seconds(text: str, where: str, column: str, zone: tzinfo = timezone.utc, expected: str = "a date") -> float:
    """Date ``text`` (ISO 8601, ``YYYY-MM-DD HH:MM:SS``) as POSIX seconds, the wall-clock time
    read in ``zone`` where it names none (only differences are used). :class:`SkippedTime`
    for a date without a zone that ``zone`` never shows (clocks went forward over it),
    :class:`RepeatedTime` for one it shows twice (clocks went back over it); ValueError,
    naming ``where``, ``column`` and ``expected``, for text that is no such date."""
    value = text.strip()
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{where}: {column} {text!r}; expected {expected} such as {DATE_EXAMPLE}") from None
    if stamp.tzinfo is None:
        first, second = stamp.replace(tzinfo=zone), stamp.replace(tzinfo=zone, fold=1)
        if first.utcoffset() > second.utcoffset():      # clocks went back over it: the zone shows it twice
            early, late = _offset(first), _offset(second)
            raise RepeatedTime(f"{where}: {column} {text!r} is shown twice in {zone} (clocks went back over it: "
                               f"first at UTC{early}, then again at UTC{late}), so which of the two instants it "
                               f"was is not known; expected a date that names its offset ({value}{early} or "
                               f"{value}{late}), or no date within the hour that repeats")
        if first.utcoffset() < second.utcoffset():      # clocks went forward over it: the zone never shows it
            raise SkippedTime(f"{where}: {column} {text!r} does not exist in {zone} (clocks went forward over it), "
                              f"so the file's clock was likely not {zone}'s; expected --time-zone of the clock that "
                              "wrote it, or a date that names its offset")
        stamp = first
    return stamp.timestamp()


def clock_change(zone: str, err: ValueError) -> str:
    """Why a job with a date ``zone`` shows twice or never (``err``: :class:`RepeatedTime` or
    :class:`SkippedTime`) is left out, as every reader says it."""
    if isinstance(err, RepeatedTime):
        return f"a time {zone} shows twice (clocks went back)"
    return f"a time {zone} never shows (clocks went forward)"


def _offset(stamp: datetime) -> str:
    """The UTC offset of aware ``stamp`` as ISO 8601 writes it (``-07:00``)."""
    minutes = round(stamp.utcoffset().total_seconds() / 60)
    return f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
