"""Where the suite keeps things: repository root, caches, results, artifacts.

Longer than 400 lines: where a result is filed includes which commit it is of and where that
commit stands in git's history, and every git question shares :func:`_git`'s guard against
answering from an enclosing repository.

Under ``asv run`` in virtualenv mode the package is installed into asv's own
environment and the benchmarks run in a scratch directory; asv exports
``ASV_CONF_DIR`` (the directory holding asv.conf.json), which is the root then.
"""
from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
from pathlib import Path

_MARKER = "asv.conf.json"


def _looks_like_root(path: Path) -> bool:
    return (path / _MARKER).is_file() and (path / "impls").is_dir()


_BENCHMARKS_ROOT: list[Path] = []   # the checkout the benchmarks were imported from (see set_benchmarks_root)


def set_benchmarks_root(root: Path) -> None:
    """Name ``root`` as the checkout the asv benchmarks were imported from, when it is one:
    :func:`repo_root` takes it after the variables and the current directory, before the
    place ``impls`` is installed (asv runs ``setup_cache`` in a scratch directory, and under
    ``--python=same`` without ``ASV_CONF_DIR``). Sets no environment variable, so that no
    other process or test inherits it."""
    root = Path(root).resolve()
    if _looks_like_root(root) and root not in _BENCHMARKS_ROOT:
        _BENCHMARKS_ROOT.append(root)
        repo_root.cache_clear()


@functools.cache
def repo_root() -> Path:
    """Return the checkout's root directory (absolute): ``DLSYSBENCH_ROOT``, else
    ``ASV_CONF_DIR``, else the checkout holding the current directory, else the one the
    benchmarks were imported from (:func:`set_benchmarks_root`), else the one holding
    ``impls``."""
    for var in ("DLSYSBENCH_ROOT", "ASV_CONF_DIR"):
        value = os.environ.get(var)
        if value and (Path(value) / _MARKER).is_file():
            return Path(value).resolve()
    for start in (Path.cwd(), *_BENCHMARKS_ROOT[:1], Path(__file__).resolve().parent):
        for candidate in (start, *start.parents):
            if _looks_like_root(candidate):
                return candidate
    raise RuntimeError(
        "cannot find the dlsysbench checkout (a directory with asv.conf.json and impls/); "
        "run from inside it or set DLSYSBENCH_ROOT"
    )


def asv_dir() -> Path:
    """Return ``.asv/`` under the root: asv results, html, environments, artifacts."""
    return repo_root() / ".asv"


def results_dir() -> Path:
    return asv_dir() / "results"


def env_path(var: str) -> Path | None:
    """Return the path environment variable ``var`` names, as where it was typed (``~``
    expanded, a relative path made absolute against the current directory); None when it
    is unset or empty. Raises ValueError naming ``var`` for a ``~user`` that does not exist
    (a folder named ``~user`` under the current directory is never what was meant)."""
    value = os.environ.get(var)
    if not value:
        return None
    try:
        return Path(value).expanduser().absolute()
    except RuntimeError:
        raise ValueError(f"{var}={value!r}: cannot expand {value.split('/')[0]!r} (no such user), "
                         "expected a path") from None


def artifacts_root() -> Path:
    return env_path("DLSYSBENCH_ARTIFACTS") or asv_dir() / "artifacts"


def datasets_dir() -> Path:
    """Return ``datasets/`` of the commit being measured: manifests (*.toml) and small
    checked-in fixtures. That is the checkout's, except under ``asv run`` in an environment
    asv built (``asv run A..B``), where it is the measured commit's own checkout
    (:func:`measured_checkout`): an older commit's code must read its own data recipes."""
    return (measured_checkout() or repo_root()) / "datasets"


@functools.cache
def measured_checkout() -> Path | None:
    """The checkout of the commit asv is measuring, when that is not the working tree: asv
    checks it out into ``$ASV_ENV_DIR/project`` and installs it from there, in every
    environment it builds (not under ``--python=same``, which sets no ``ASV_ENV_DIR``). None
    outside asv, under ``--python=same``, or when that folder is not a dlsysbench checkout at
    ``$ASV_COMMIT``."""
    env_dir, commit = os.environ.get("ASV_ENV_DIR"), os.environ.get("ASV_COMMIT")
    if not env_dir or not commit or os.environ.get("ASV_ENV_TYPE") == "existing":
        return None
    project = Path(env_dir) / "project"
    if not _looks_like_root(project):
        return None
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return project.resolve() if head == commit else None


def cache_dir() -> Path:
    """Return the directory for generated and downloaded data (git-ignored): the
    checkout's ``datasets/cache`` (shared by every commit asv measures) unless
    ``DLSYSBENCH_CACHE`` names another."""
    return env_path("DLSYSBENCH_CACHE") or repo_root() / "datasets" / "cache"


def reports_dir() -> Path:
    return repo_root() / "reports"


def default_nvm_target_path() -> Path:
    """The suite's own NVM target file, used when ``DLSYSBENCH_NVM_PATH`` is unset."""
    return cache_dir() / "nvm-target.bin"


def missing_directory_reason(target: Path, setting: str) -> str | None:
    """Why the directory of ``target`` cannot be used: it does not exist and lies outside the
    suite's cache (:func:`cache_dir`), where the suite creates directories; None when it
    exists or would be created. ``setting``: what chose the path, for the message."""
    target = Path(target).absolute()
    if target.parent.is_dir() or cache_dir().absolute() in (target.parent, *target.parent.parents):
        return None
    above = next(p for p in target.parents if p.exists() or p == p.parent)   # the root exists
    what = f"directory {target.parent} does not exist" if above.is_dir() else f"{above} is not a directory"
    return (f"{what} ({setting} names a path in it); expected an existing directory on the drive to "
            "measure (is the drive mounted?)")


def ensure_directory_of(target: Path, setting: str) -> None:
    """Make sure the directory of ``target`` exists: created when it is the suite's cache or
    inside it; ValueError (:func:`missing_directory_reason`) when another directory is
    missing. A path the user gave in a directory that is not there (a drive not mounted at
    its mount point, a typo) must not be created on whatever drive holds its parent: the
    suite would measure that drive instead."""
    why = missing_directory_reason(target, setting)
    if why:
        raise ValueError(why)
    Path(target).absolute().parent.mkdir(parents=True, exist_ok=True)


def nvm_target_path() -> Path:
    """Return the file or block device the NVM experiments read (``DLSYSBENCH_NVM_PATH``, with
    ``~`` expanded and a relative path made absolute against the current directory)."""
    return env_path("DLSYSBENCH_NVM_PATH") or default_nvm_target_path()


def typed_path(value: str) -> Path:
    """The path ``value`` means where the user typed it: ``~`` expanded (taken as written for
    a user that does not exist, so that it is reported missing, not a crash), a relative
    path made absolute against the current directory."""
    try:
        return Path(value).expanduser().absolute()
    except RuntimeError:
        return Path(value).absolute()


def check_machine_name(value: str, where: str) -> str:
    """Return ``value`` if it is one directory name of letters, digits, '.', '_' and '-' (a
    machine's results and artifacts folder); raise ValueError naming ``where`` otherwise."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", value):
        raise ValueError(f"{where}={value!r}: expected one name of letters, digits, '.', '_' "
                         "and '-' (it names the results' and artifacts' directory)")
    return value


def machine_name() -> str:
    """Return the asv machine name results are filed under (asv's default: the host name);
    raises ValueError for a ``DLSYSBENCH_MACHINE`` that is not one directory name."""
    value = os.environ.get("DLSYSBENCH_MACHINE")
    if value is not None and value.strip():
        return check_machine_name(value, "DLSYSBENCH_MACHINE")
    # the host name as a directory name: '(none)', 'lab box' or 'büro-pc' would break asv's and ours
    host = re.sub(r"[^A-Za-z0-9._-]+", "-", platform.node()).strip("-._")
    return host or "unknown-machine"


def machine_for_profile(machine: str, profile: str) -> str:
    """Return the asv machine name for ``machine`` running ``profile``: ``<machine>-<profile>``.

    A name that already ends in ``-<profile>`` is returned unchanged.
    """
    suffix = f"-{profile}"
    return machine if machine.endswith(suffix) else machine + suffix


def suite_machine() -> str:
    """The machine name results and artifacts of the current profile are filed under:
    ``<host or DLSYSBENCH_MACHINE>-<profile>``, whoever runs the benchmarks (make, a plain
    ``asv run``, ``python -m impls run``)."""
    from impls.harness.profiles import current_profile

    return machine_for_profile(machine_name(), current_profile())


def _git(*args: str, input: str | None = None, timeout: float = 10) -> subprocess.CompletedProcess:
    """Run ``git args`` in the checkout's root and return what it did (output as text), with git's
    search for a repository stopped at that root (``GIT_CEILING_DIRECTORIES``): a checkout that
    is no repository of its own (an archive unpacked inside another checkout) then fails as one
    without git, instead of answering with the enclosing repository's commit and files. Raises
    what :mod:`subprocess` raises (OSError: no git), RuntimeError: no checkout."""
    root = repo_root().resolve()
    env = _git_env()
    if _foreign_repository(root):
        env["GIT_CEILING_DIRECTORIES"] = str(root.parent)
    return subprocess.run(["git", *args], cwd=root, env=env, input=input, capture_output=True, text=True,
                          timeout=timeout)


# variables that point git at a repository other than the one it finds from the checkout
_GIT_LOCATORS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


def _git_env() -> dict[str, str]:
    """This process's environment without :data:`_GIT_LOCATORS`: git then reads the repository
    it finds from the checkout, whatever repository a calling script or hook pointed it at."""
    return {k: v for k, v in os.environ.items() if k not in _GIT_LOCATORS}


@functools.lru_cache(maxsize=16)
def _foreign_repository(root: Path) -> Path | None:
    """The enclosing repository git finds from ``root`` when it is not ``root``'s own and does not
    track ``root``'s files (an archive unpacked inside another checkout); None when git's top
    level is ``root``, when the enclosing repository tracks the suite (a monorepo: its commits
    are the suite's), or without git. Asked once per root and process (two git calls), not
    before every git command :func:`_git` runs."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True,
                             timeout=10, env=_git_env())
        if top.returncode != 0 or not top.stdout.strip() or Path(top.stdout.strip()).resolve() == root:
            return None
        tracked = subprocess.run(["git", "ls-files", "--", "asv.conf.json"], cwd=root, capture_output=True,
                                 text=True, timeout=10, env=_git_env())
    except (OSError, subprocess.SubprocessError):
        return None
    return None if tracked.returncode == 0 and tracked.stdout.strip() else Path(top.stdout.strip()).resolve()


def git_absent_reason() -> str | None:
    """Why git cannot tell what this checkout holds, as a phrase to follow "not a git checkout:"
    (git not installed, no repository here, or git's top level is another directory: an archive
    unpacked inside another repository); None when ``git rev-parse --show-toplevel`` is the
    checkout's root (both resolved)."""
    try:
        root = repo_root().resolve()
        done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True,
                              text=True, timeout=10, env=_git_env())
    except FileNotFoundError:
        return "git is not installed"
    except (OSError, subprocess.SubprocessError, RuntimeError) as err:
        return f"git did not run ({' '.join(str(err).split())})"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [""])[0]
        if said and "not a git repository" not in said:     # e.g. "detected dubious ownership"
            return f"git refuses {root}: {said}"
        return f"{root} holds no git repository (an unpacked archive?)"
    top = _foreign_repository(root)
    if top is not None:
        return f"git's repository is {top}, which holds {root} untracked (an unpacked archive?)"
    return None


def resolve_commit(revision: str) -> str | None:
    """Return the full hash git gives ``revision`` (a branch, tag, ``HEAD~1``, a prefix) in
    this checkout, or None when git cannot resolve it (or is absent, :func:`_git`)."""
    if not revision or revision.startswith("-"):
        return None
    try:
        done = _git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    except (OSError, subprocess.SubprocessError, RuntimeError):
        return None
    found = done.stdout.strip()
    return found if done.returncode == 0 and found else None


def is_shallow_clone() -> bool:
    """Whether this checkout is a shallow clone (``git clone --depth N``); False without git."""
    try:
        return _git("rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    except (OSError, subprocess.SubprocessError, RuntimeError):
        return False


def commit_ranks(commits: list[str]) -> dict[str, int] | None:
    """The commits among ``commits`` (full hashes) that this checkout's git has, ranked in
    git's order, parents before children (``git rev-list --topo-order``); None when git is
    absent (:func:`_git`) or has none of them. A commit git lacks is left out: in a full clone
    one a rebase replaced and ``git gc`` removed, in a shallow clone one outside its history
    (older than it, or on a branch it did not fetch).
    Unlike a date, the order survives a rebase or a cherry-pick, which keep a commit's author
    date (the date asv records)."""
    commits = sorted({c for c in commits if c and not c.startswith("-")})
    if not commits:
        return None
    try:
        known = _git("cat-file", "--batch-check", input="\n".join(commits) + "\n", timeout=30)
        present = [c for c, line in zip(commits, known.stdout.splitlines())
                   if known.returncode == 0 and not line.endswith("missing")]
        if not present:
            return None
        done = _git("rev-list", "--topo-order", "--reverse", *present, timeout=60)
    except (OSError, subprocess.SubprocessError, RuntimeError):
        return None
    if done.returncode != 0:
        return None
    order = {c: i for i, c in enumerate(done.stdout.split())}
    return {c: order[c] for c in present if c in order} or None


def descendants(ancestor: str, commits: list[str]) -> set[str] | None:
    """Those of ``commits`` whose history holds commit ``ancestor`` (one is its own): a commit
    git lacks is none. None where git cannot tell: no usable git, or a clone without
    ``ancestor`` (a shallow one). One ``git merge-base --is-ancestor`` a commit."""
    try:
        if _git("cat-file", "-e", f"{ancestor}^{{commit}}").returncode:
            return None
        return {c for c in commits if _git("merge-base", "--is-ancestor", ancestor, c).returncode == 0}
    except (OSError, RuntimeError, subprocess.SubprocessError):
        return None


def commit_places(commits: list[str]) -> dict[str, int]:
    """Each of ``commits`` -> its place in git's history (:func:`commit_ranks`, parents first);
    -1 for one git lacks while it has others (one a rebase replaced, or in a shallow clone one
    outside its history, most often older than it): before every commit git has, so the
    checkout's HEAD is never placed before its ancestors; 0 for all when git gives no ranks.
    Equal places leave the order to the commits' dates (:func:`date_order_note`)."""
    ranks = commit_ranks(commits) or {}
    unknown = -1 if ranks else 0
    return {c: ranks.get(c, unknown) for c in commits}


def date_order_note(commits: list[str]) -> str | None:
    """One line (no final period) saying which of ``commits`` (full hashes) are ordered by
    their dates because git cannot place them (:func:`commit_places`): every one without
    usable git (:func:`git_absent_reason`), in a shallow clone those outside its history.
    None when git places them all, and in a full clone, where a commit git lacks was rebased
    away (the report lists those)."""
    commits = sorted({c for c in commits if c and not c.startswith("-")})
    if not commits:
        return None
    why = git_absent_reason()
    if why:
        return (f"not a git checkout: {why}; the {len(commits)} commit(s) with runs are ordered by the dates "
                "asv recorded (author dates, which a rebase keeps)")
    if not is_shallow_clone():
        return None
    ranks = commit_ranks(commits) or {}
    dated = [c for c in commits if c not in ranks]
    if not dated:
        return None
    return (f"this checkout is a shallow clone: {len(dated)} of the {len(commits)} commit(s) with runs "
            f"({', '.join(c[:8] for c in dated[:3])}{', ...' if len(dated) > 3 else ''}) are not in its "
            "history (older than it, or on a branch it did not fetch), placed before the others and ordered "
            "by their dates (author dates, which a rebase keeps); `git fetch --unshallow` lets git order them")


DOCUMENTATION = ("*.md", "*.markdown", "*.rst")   # files no run reads: their edits change no measurement


def uncommitted_code() -> list[str] | None:
    """The files whose working copy differs from the commit (what a run measures beyond
    :func:`git_commit`): under ``impls/`` and ``benchmarks/``, and the dataset recipes
    ``datasets/*.toml`` (not ``datasets/cache``), which set the data measured; tracked files
    edited, and files git does not track nor ignore (a new engine module); paths relative to the
    checkout's root, sorted; [] when clean; None when git is absent or unusable here
    (:func:`_git`), so that which code ran is not known. Every file there counts (code, its
    configuration and data) but documentation (:data:`DOCUMENTATION`). Under ``asv run A..B`` the code and
    the recipes measured are asv's clean checkout of the commit (:func:`measured_checkout`,
    :func:`datasets_dir`), and only ``benchmarks/``, which asv takes from the working tree, is
    listed."""
    folders = (["benchmarks"] if measured_checkout() is not None
               else ["impls", "benchmarks", ":(glob)datasets/*.toml"])
    docs = [f":(exclude,glob)**/{pattern}" for pattern in DOCUMENTATION]
    try:
        prefix = _git("rev-parse", "--show-prefix").stdout.strip()   # the suite inside a monorepo
        done = _git("status", "--porcelain", "--untracked-files=all", "--", *docs, *folders)
    except (OSError, subprocess.SubprocessError, RuntimeError):
        return None
    if done.returncode != 0:
        return None
    return sorted(path[len(prefix):] if prefix and path.startswith(prefix) else path
                  for path in (line[3:].strip() for line in done.stdout.splitlines() if line.strip()))


def git_commit(short: bool = False) -> str:
    """Return the commit being measured: asv's ``ASV_COMMIT``, else ``git rev-parse HEAD`` of
    this checkout's own repository (:func:`_git`), else "unknown" (:func:`git_absent_reason`
    says why)."""
    commit = os.environ.get("ASV_COMMIT")
    if not commit:
        try:
            done = _git("rev-parse", "--verify", "HEAD")
            commit = done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"
        except (OSError, subprocess.SubprocessError, RuntimeError):
            commit = "unknown"
    return commit[:8] if short and commit != "unknown" else commit
