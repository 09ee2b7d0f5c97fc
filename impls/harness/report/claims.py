"""The paper claims the report checks: ``reports/claims.toml`` read into :class:`Claim`\\ s.

Longer than 400 lines: one reader of one file format, whose every key is checked where it
is read so that every problem is reported with its line; splitting it would split the format.

The schema is documented at the top of ``reports/claims.toml``. Loading checks
every entry and fails with one :class:`ClaimsError` that lists every problem as
``<file>:<line>: [[claim]] #<n> (id "<id>"): <what was expected>``.
"""
from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from impls.harness import capabilities, experiments

# As reports/PAPERS.md labels each fact; "peer" for a peer or follow-up paper's number.
SOURCES = ("abstract", "text", "code", "approx", "peer")
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")

REQUIRED_KEYS = ("id", "system", "figure", "statement", "paper_value", "unit", "source",
                 "approx", "tolerance", "requires")
OPTIONAL_KEYS = ("baseline", "peer", "note", "measured", "measured_cuda", "lower_bound_when", "upper_bound_when",
                 "unmeasured_reason", "applies_when", "sampling_interval", "sampling_interval_cuda")
MEASURED_KINDS = ("benchmark", "ratio", "trend", "artifact")
MEASURED_KEYS = {
    "benchmark": {"benchmark", "params"},
    "ratio": {"ratio", "params"},
    "trend": {"trend", "over", "params", "bounds"},
    "artifact": {"artifact", "path"},
}

Scalar = str | int | float | bool


class ClaimsError(ValueError):
    """The claims file is missing, not TOML, or breaks the schema."""


@dataclasses.dataclass(frozen=True)
class PointRef:
    """One point of an asv benchmark: its name and the parameter values that pick it."""

    benchmark: str
    params: Mapping[str, Scalar] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class BenchmarkSource:
    """The measured value is one benchmark point."""

    point: PointRef


@dataclasses.dataclass(frozen=True)
class RatioSource:
    """The measured value is numerator / denominator, two benchmark points."""

    numerator: PointRef
    denominator: PointRef


@dataclasses.dataclass(frozen=True)
class TrendSource:
    """The measured value is Spearman's rank correlation of a benchmark with parameter ``over``.
    ``lower_flag`` / ``upper_flag`` name benchmarks swept over the same parameters whose point is
    1 where the value at that point is only a lower / upper bound (a speed-up over a run that
    never reached the target): a rank correlation of bounds is no measurement."""

    benchmark: str
    over: str
    params: Mapping[str, Scalar] = dataclasses.field(default_factory=dict)
    lower_flag: str | None = None
    upper_flag: str | None = None


@dataclasses.dataclass(frozen=True)
class ArtifactSource:
    """The measured value is the number at dotted ``path`` inside the newest artifact ``artifact``."""

    artifact: str
    path: str


MeasuredSource = BenchmarkSource | RatioSource | TrendSource | ArtifactSource

SAMPLING_ERROR = "the test points' sampling error"
SAMPLING_METHOD = "bootstrap over the test points (95%)"


@dataclasses.dataclass(frozen=True)
class SamplingSource(ArtifactSource):
    """A ``[low, high]`` pair at dotted ``path`` of artifact ``artifact`` (the measured run's)
    that bounds the value's sampling error. ``error`` names that error (a noun phrase: "the
    test points' sampling error"), ``method`` says how the run found the pair ("bootstrap
    over the test points (95%)")."""

    error: str = SAMPLING_ERROR
    method: str = SAMPLING_METHOD


@dataclasses.dataclass(frozen=True)
class Condition:
    """The setting a claim is about: the value at dotted ``path`` of the newest artifact
    ``artifact`` must equal ``equals`` (e.g. the thread count a profile ran the pair at), or,
    given ``at_least`` instead, be a number >= it. Exactly one of the two is set (not None)."""

    artifact: str
    path: str
    equals: Any = None
    at_least: float | None = None
    what: str = ""  # the setting's name in words ("SLIDE's threads"); the path where empty
    hint: str = ""  # how a user gets to the setting ("the full profile on 44 or more cores")

    @property
    def name(self) -> str:
        """The setting's name as the report shows it: :attr:`what`, else the dotted path."""
        return self.what or self.path

    @property
    def wanted(self) -> str:
        """The setting in words: ``<name> = <equals>`` or ``<name> ≥ <at_least>``."""
        if self.at_least is not None:
            return f"{self.name} ≥ {self.at_least:g}"
        return f"{self.name} = {self.equals!r}"


@dataclasses.dataclass(frozen=True)
class Claim:
    id: str
    system: str
    figure: str
    statement: str
    paper_value: float | tuple[float, float]
    unit: str
    source: str
    approx: bool
    tolerance: float  # relative: |measured - paper| <= tolerance * |paper| reproduces
    requires: tuple[str, ...]
    baseline: float | None = None  # the "no effect" value that defines the claim's direction
    peer: str | None = None  # set when the number comes from a peer or follow-up paper
    note: str = ""
    measured: MeasuredSource | None = None
    # the same measurement in the run on a CUDA device (the paper's): judged instead of
    # ``measured`` wherever it has a value
    measured_cuda: MeasuredSource | None = None
    # a benchmark point that is 1 when the measured value is only a lower bound
    # (e.g. a speed-up over a run that never reached the target within its budget)
    lower_bound_when: MeasuredSource | None = None
    # ... and one that is 1 when it is only an upper bound (the run that should be faster
    # never reached the target, the other one did)
    upper_bound_when: MeasuredSource | None = None
    # an artifact's text that says why the measured benchmark has no value, when it has none
    # (e.g. no run left the most-popular-label plateau, so there is no target to time)
    unmeasured_reason: ArtifactSource | None = None
    # the setting the claim is about, where a profile may run another (e.g. 2 threads, not 44)
    applies_when: Condition | None = None
    # an artifact's [low, high]: the measured value's interval from the sampling of its data
    # (a bootstrap over the test points, the draws of a synthetic trace), of the same run as the value
    sampling_interval: SamplingSource | None = None
    # ... and the CUDA run's, read where ``measured_cuda`` is judged
    sampling_interval_cuda: SamplingSource | None = None

    @property
    def paper_range(self) -> tuple[float, float]:
        """Return (low, high); a single paper value is the range (value, value)."""
        if isinstance(self.paper_value, tuple):
            return self.paper_value
        return (self.paper_value, self.paper_value)


class _Lines:
    """Finds the line of a ``[[claim]]`` header, or of a key inside one claim's block."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.headers = [i + 1 for i, line in enumerate(self.lines)
                        if re.match(r"^\s*\[\[\s*claim\s*\]\]", line)]

    def of_claim(self, index: int) -> int | None:
        return self.headers[index] if index < len(self.headers) else None

    def of_key(self, index: int, key: str) -> int | None:
        start = self.of_claim(index)
        if start is None:
            return None
        end = self.headers[index + 1] - 1 if index + 1 < len(self.headers) else len(self.lines)
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=|^\s*\[\s*claim\.{re.escape(key)}\s*\]")
        for number in range(start, end + 1):
            if pattern.match(self.lines[number - 1]):
                return number
        return start


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _key_of(where: str) -> str:
    """The claim's key that ``where`` ("measured.ratio[0]", "lower_bound_when") lies under."""
    return where.split(".", 1)[0].split("[", 1)[0]


def _describe(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


class _Checker:
    """Collects the problems of one ``[[claim]]`` entry."""

    def __init__(self, path: Path, lines: _Lines, index: int, entry: Any):
        self.path, self.lines, self.index, self.entry = path, lines, index, entry
        self.problems: list[str] = []

    def fail(self, key: str | None, expected: str) -> None:
        line = self.lines.of_key(self.index, key) if key else self.lines.of_claim(self.index)
        where = f"{self.path}:{line}" if line else str(self.path)
        claim_id = self.entry.get("id") if isinstance(self.entry, dict) else None
        label = f"[[claim]] #{self.index + 1}" + (f" (id {claim_id!r})" if isinstance(claim_id, str) else "")
        self.problems.append(f"{where}: {label}: {expected}")

    def string(self, key: str, *, choices: tuple[str, ...] = (), optional: bool = False) -> str | None:
        value = self.entry.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"{key} must be a non-empty string, got {_describe(value)}")
            return None
        if choices and value not in choices:
            self.fail(key, f"{key} must be one of {', '.join(choices)}; got {value!r}")
            return None
        return value

    def paper_value(self) -> float | tuple[float, float] | None:
        value = self.entry.get("paper_value")
        expected = ("paper_value must be a number or [low, high] with low <= high "
                    "(high may be inf, or low -inf, not both)")
        if _is_number(value) and math.isfinite(value):
            return float(value)
        if (isinstance(value, list) and len(value) == 2 and all(_is_number(v) for v in value)
                and not any(math.isnan(v) for v in value) and value[0] <= value[1]
                and (math.isfinite(value[0]) or math.isfinite(value[1]))):   # low <= high: [inf, inf] fails here
            return (float(value[0]), float(value[1]))
        self.fail("paper_value", f"{expected}, got {_describe(value)}")
        return None

    def number(self, key: str, *, minimum: float | None = None, optional: bool = False) -> float | None:
        value = self.entry.get(key)
        if value is None and optional:
            return None
        if not _is_number(value) or not math.isfinite(value) or (minimum is not None and value < minimum):
            bound = f" >= {minimum:g}" if minimum is not None else ""
            self.fail(key, f"{key} must be a finite number{bound}, got {_describe(value)}")
            return None
        return float(value)

    def requires(self) -> tuple[str, ...]:
        value = self.entry.get("requires")
        known = tuple(capabilities.CHECKS)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail("requires", f"requires must be a list of capability names ({', '.join(known)}), "
                                  f"got {_describe(value)}")
            return ()
        unknown = [v for v in value if v not in known]
        if unknown:
            self.fail("requires", f"unknown capability {', '.join(map(repr, unknown))} in requires; "
                                  f"known: {', '.join(known)}")
        return tuple(value)

    def params(self, value: Any, where: str) -> dict[str, Scalar]:
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(
                isinstance(v, (str, int, float, bool)) for v in value.values()):
            self.fail(_key_of(where), f"{where} must be a table of parameter name = value "
                                  f"(strings, numbers, booleans), got {_describe(value)}")
            return {}
        return dict(value)

    def point(self, value: Any, shared: dict[str, Scalar], where: str) -> PointRef | None:
        if isinstance(value, str) and value:
            return PointRef(value, dict(shared))
        if isinstance(value, dict) and isinstance(value.get("benchmark"), str) and set(value) <= {
                "benchmark", "params"}:
            return PointRef(value["benchmark"], {**shared, **self.params(value.get("params"), where)})
        self.fail(_key_of(where), f"{where} must be a benchmark name or "
                              f"{{ benchmark = \"...\", params = {{...}} }}, got {_describe(value)}")
        return None

    def bound_flag(self, key: str) -> MeasuredSource | None:
        value = self.entry.get(key)
        if value is None:
            return None
        point = self.point(value, {}, key)
        return BenchmarkSource(point) if point else None

    def reason_source(self, key: str) -> ArtifactSource | None:
        table = self.entry.get(key)
        if table is None:
            return None
        if not isinstance(table, dict) or set(table) != {"artifact", "path"} \
                or not isinstance(table["artifact"], str) or not isinstance(table["path"], str) or not table["path"]:
            self.fail(key, f"{key} must be {{ artifact = \"<name>\", path = \"data.key.key\" }}, "
                      f"got {_describe(table)}")
            return None
        return ArtifactSource(table["artifact"], table["path"])

    def sampling_source(self, key: str) -> SamplingSource | None:
        table = self.entry.get(key)
        if table is None:
            return None
        texts = ("error", "method")
        if (not isinstance(table, dict) or not {"artifact", "path"} <= set(table) <= {"artifact", "path", *texts}
                or not all(isinstance(table[k], str) and table[k].strip() for k in table)
                or str(table.get("method", "")).strip().lower().startswith("unbounded")):
            self.fail(key, f"{key} must be {{ artifact = \"<name>\", path = \"data.key.key\" }}, optionally with "
                      f"error = \"<what it bounds>\" and method = \"<how the run found it>\" (not starting "
                      f"'unbounded', which marks an interval nothing bounds), got {_describe(table)}")
            return None
        return SamplingSource(table["artifact"], table["path"], **{k: table[k].strip() for k in texts if k in table})

    def condition(self, key: str) -> Condition | None:
        table = self.entry.get(key)
        if table is None:
            return None
        if (not isinstance(table, dict) or not {"artifact", "path"} <= set(table) <= {"artifact", "path", "equals",
                                                                                        "at_least", "what", "hint"}
                or not isinstance(table["artifact"], str) or not isinstance(table["path"], str) or not table["path"]
                or not all(isinstance(table.get(k, ""), str) for k in ("what", "hint"))):
            self.fail(key, f"{key} must be {{ artifact = \"<name>\", path = \"data.key.key\", equals = <number or "
                      f"text> }} or {{ artifact = ..., path = ..., at_least = <number> }}, with optional texts what "
                      f"and hint, got {_describe(table)}")
            return None
        words = {"what": table.get("what", "").strip(), "hint": table.get("hint", "").strip()}
        bounds = [k for k in ("equals", "at_least") if k in table]
        if len(bounds) != 1:
            self.fail(key, f"{key} must have exactly one of equals = <number or text> (the setting) or "
                      f"at_least = <number> (its lowest value); got {' and '.join(bounds) or 'neither'}")
            return None
        if "at_least" in table:
            if not _is_number(table["at_least"]) or not math.isfinite(table["at_least"]):
                self.fail(key, f"{key}.at_least must be a finite number, got {_describe(table['at_least'])}")
                return None
            return Condition(table["artifact"], table["path"], at_least=float(table["at_least"]), **words)
        if not isinstance(table["equals"], (str, int, float)) or isinstance(table["equals"], bool):
            self.fail(key, f"{key}.equals must be a number or text, got {_describe(table['equals'])}")
            return None
        return Condition(table["artifact"], table["path"], table["equals"], **words)

    def measured(self, key: str = "measured") -> MeasuredSource | None:
        table = self.entry.get(key)
        if table is None:
            return None
        if not isinstance(table, dict):
            self.fail(key, f"{key} must be a table, got {_describe(table)}")
            return None
        kinds = [k for k in MEASURED_KINDS if k in table]
        if len(kinds) != 1:
            self.fail(key, f"{key} must have exactly one of "
                      f"{', '.join(MEASURED_KINDS)}; got keys {sorted(table)}")
            return None
        kind = kinds[0]
        extra = set(table) - MEASURED_KEYS[kind]
        if extra:
            self.fail(key, f"{key} ({kind}) takes only {sorted(MEASURED_KEYS[kind])}; "
                      f"unexpected {sorted(extra)}")
            return None
        shared = self.params(table.get("params"), f"{key}.params")
        if kind == "benchmark":
            point = self.point(table["benchmark"], shared, f"{key}.benchmark")
            return BenchmarkSource(point) if point else None
        if kind == "ratio":
            sides = table["ratio"]
            if not isinstance(sides, list) or len(sides) != 2:
                self.fail(key, f"{key}.ratio must be [numerator, denominator], "
                          f"got {_describe(sides)}")
                return None
            top = self.point(sides[0], shared, f"{key}.ratio[0]")
            bottom = self.point(sides[1], shared, f"{key}.ratio[1]")
            return RatioSource(top, bottom) if top and bottom else None
        if kind == "trend":
            over = table.get("over")
            if not isinstance(table["trend"], str) or not isinstance(over, str) or over in shared:
                self.fail(key, f"{key}.trend must be a benchmark name with over = "
                          "\"<parameter swept>\" (not also in params)")
                return None
            bounds = table.get("bounds", {})
            if (not isinstance(bounds, dict) or not set(bounds) <= {"lower", "upper"}
                    or not all(isinstance(v, str) and v for v in bounds.values())):
                self.fail(key, f"{key}.bounds must be {{ lower = \"<benchmark>\", upper = \"<benchmark>\" }} "
                          f"(either may be left out), got {_describe(bounds)}")
                return None
            return TrendSource(table["trend"], over, shared, bounds.get("lower"), bounds.get("upper"))
        name, path = table["artifact"], table.get("path")
        if not isinstance(name, str) or not isinstance(path, str) or not path:
            self.fail(key, f"{key}.artifact must be an artifact name with "
                      "path = \"data.key.key\" (dotted, from the record's top)")
            return None
        return ArtifactSource(name, path)

    def claim(self) -> Claim | None:
        if not isinstance(self.entry, dict):
            self.fail(None, f"expected a table, got {_describe(self.entry)}")
            return None
        missing = [k for k in REQUIRED_KEYS if k not in self.entry]
        if missing:
            self.fail(None, f"missing key(s) {', '.join(missing)}; every claim needs "
                            f"{', '.join(REQUIRED_KEYS)}")
        unknown = sorted(set(self.entry) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
        if unknown:
            self.fail(unknown[0], f"unknown key(s) {', '.join(unknown)}; allowed: "
                                  f"{', '.join(REQUIRED_KEYS + OPTIONAL_KEYS)}")
        claim_id = self.string("id")
        if claim_id and not ID_PATTERN.match(claim_id):
            self.fail("id", f"id must be lower-case letters, digits and '-', got {claim_id!r}")
        fields: dict[str, Any] = {
            "id": claim_id,
            "system": self.string("system", choices=experiments.systems()),
            "figure": self.string("figure"),
            "statement": self.string("statement"),
            "paper_value": self.paper_value(),
            "unit": self.string("unit"),
            "source": self.string("source", choices=SOURCES),
            "tolerance": self.number("tolerance", minimum=0.0),
            "requires": self.requires(),
            "baseline": self.number("baseline", optional=True),
            "peer": self.string("peer", optional=True),
            "note": self.string("note", optional=True) or "",
            "measured": self.measured(),
            "measured_cuda": self.measured("measured_cuda"),
            "lower_bound_when": self.bound_flag("lower_bound_when"),
            "upper_bound_when": self.bound_flag("upper_bound_when"),
            "unmeasured_reason": self.reason_source("unmeasured_reason"),
            "applies_when": self.condition("applies_when"),
            "sampling_interval": self.sampling_source("sampling_interval"),
            "sampling_interval_cuda": self.sampling_source("sampling_interval_cuda"),
        }
        approx = self.entry.get("approx")
        if not isinstance(approx, bool):
            self.fail("approx", f"approx must be true or false, got {_describe(approx)}")
        elif fields["source"] == "approx" and not approx:
            self.fail("approx", "approx must be true when source = \"approx\"")
        fields["approx"] = approx
        if (fields["source"] == "peer") != (fields["peer"] is not None) and fields["source"]:
            self.fail("peer", "source = \"peer\" and a peer = \"<paper>\" go together")
        self._check_baseline(fields["paper_value"], fields["baseline"])
        if "measured_cuda" in self.entry and "measured" not in self.entry:
            self.fail("measured_cuda", "measured_cuda goes with measured (the CPU run's, judged where there is "
                                       "no CUDA run)")
        if "measured_cuda" in self.entry and any(k in self.entry for k in ("lower_bound_when", "upper_bound_when",
                                                                           "unmeasured_reason", "applies_when")):
            self.fail("measured_cuda", "measured_cuda does not go with bound flags, unmeasured_reason or applies_when: "
                                       "those would read the CPU run's sources beside a CUDA value")
        if "measured_cuda" in self.entry and ("sampling_interval" in self.entry) != ("sampling_interval_cuda" in self.entry):
            self.fail("sampling_interval_cuda" if "sampling_interval_cuda" in self.entry else "sampling_interval",
                      "with measured_cuda, sampling_interval and sampling_interval_cuda go together (each run's "
                      "interval is in its own artifact)")
        if "sampling_interval_cuda" in self.entry and "measured_cuda" not in self.entry:
            self.fail("sampling_interval_cuda", "sampling_interval_cuda goes with measured_cuda (it is the CUDA run's)")
        if "sampling_interval" in self.entry and "measured" not in self.entry:
            self.fail("sampling_interval", "sampling_interval goes with measured (it is the measured value's)")
        if self.problems:
            return None
        return Claim(**fields)

    def _check_baseline(self, paper: Any, baseline: float | None) -> None:
        if paper is None or baseline is None:
            return
        low, high = paper if isinstance(paper, tuple) else (paper, paper)
        if low < baseline < high or low == high == baseline:
            self.fail("baseline", f"baseline {baseline:g} must not lie inside the paper value "
                                  f"{low:g}..{high:g} (one of its ends may be it): it says which side is the "
                                  "paper's direction")


def benchmark_references(claim: Claim) -> list[tuple[str, dict]]:
    """Every asv benchmark ``claim`` reads, with the parameters it names (a trend's ``over``
    parameter named with value None): from measured, measured_cuda and the bound flags."""
    refs = []
    for source in (claim.measured, claim.measured_cuda, claim.lower_bound_when, claim.upper_bound_when):
        if isinstance(source, BenchmarkSource):
            refs.append((source.point.benchmark, dict(source.point.params)))
        elif isinstance(source, RatioSource):
            refs += [(p.benchmark, dict(p.params)) for p in (source.numerator, source.denominator)]
        elif isinstance(source, TrendSource):
            refs += [(name, {**source.params, source.over: None})
                     for name in (source.benchmark, source.lower_flag, source.upper_flag) if name]
    return refs


def unknown_references(claims: list[Claim], *declared: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """By claim id, each benchmark a claim names that none of ``declared`` ({benchmark: its
    parameter names}, e.g. asv's benchmarks.json and the benchmark code) has with the
    parameters the claim names: a typo in the claims file."""
    problems: dict[str, list[str]] = {}
    for claim in claims:
        for name, params in benchmark_references(claim):
            having = [d[name] for d in declared if name in d]
            if not having:
                problems.setdefault(claim.id, []).append(f"benchmark {name}")
            elif not any(set(params) == set(names) for names in having):
                problems.setdefault(claim.id, []).append(
                    f"benchmark {name} with parameters {sorted(params)} (it takes {sorted(having[0])})")
    return problems


def load_claims(path: Path) -> list[Claim]:
    """Return the claims in ``path``, in file order; raise :class:`ClaimsError` listing every problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ClaimsError(f"{path}: cannot read the claims file: {err.strerror or err}") from err
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ClaimsError(f"{path}: not valid TOML: {err}") from err
    lines = _Lines(text)
    problems: list[str] = []
    unexpected = sorted(set(document) - {"claim"})
    if unexpected:
        problems.append(f"{path}: unexpected top-level key(s) {', '.join(unexpected)}; "
                        "the file holds only [[claim]] entries")
    entries = document.get("claim", [])
    if not isinstance(entries, list):
        problems.append(f"{path}: 'claim' must be an array of tables ([[claim]]), got a "
                        f"{type(entries).__name__}")
        entries = []
    claims: list[Claim] = []
    first_seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        checker = _Checker(path, lines, index, entry)
        claim = checker.claim()
        problems.extend(checker.problems)
        if claim is None:
            continue
        if claim.id in first_seen:
            line = lines.of_key(index, "id")
            problems.append(f"{path}:{line}: [[claim]] #{index + 1} (id {claim.id!r}): duplicate id; "
                            f"[[claim]] #{first_seen[claim.id] + 1} already uses it")
            continue
        first_seen[claim.id] = index
        claims.append(claim)
    if problems:
        raise ClaimsError(f"{len(problems)} problem(s) in {path}:\n  " + "\n  ".join(problems))
    return claims
