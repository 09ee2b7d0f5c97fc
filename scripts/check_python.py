"""Check, before ``make`` installs anything, that a Python can run dlsysbench.

``python scripts/check_python.py`` exits 0, silent, when this interpreter's version meets
``requires-python`` of pyproject.toml, and 2 with one line saying which ``PYTHON=`` to use
otherwise. ``--venv DIR`` checks the interpreter of an existing virtual environment: also
that it has pip (a venv made where ``ensurepip`` is missing, as on Debian or Ubuntu without
the ``python3.X-venv`` package, has none), and the line then says to remove ``DIR`` first,
since ``make`` reuses any ``DIR/bin/python`` it finds.

Written for any Python from 2.7 on, so that an old interpreter gets the message rather
than a syntax error.
"""
from __future__ import print_function

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CANDIDATES = ("python3.12", "python3.11")  # tried on PATH for the hint, newest first
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<|~=)\s*(\d+(?:\.\d+)*)\s*$")


def requires_python(pyproject):
    """The ``requires-python`` string of ``pyproject`` (a path); None where it has none."""
    with open(pyproject) as handle:
        match = re.search(r'^\s*requires-python\s*=\s*["\']([^"\']+)["\']', handle.read(), re.M)
    return match.group(1) if match else None


def satisfies(version, spec):
    """Whether ``version`` (a tuple of ints) meets every comma-separated clause of ``spec``
    (``>=3.11,<3.13``; each compared on as many parts as the clause gives). ValueError for a
    clause it cannot read."""
    for clause in spec.split(","):
        if not clause.strip():
            continue
        match = _CLAUSE.match(clause)
        if not match:
            raise ValueError("cannot read requires-python clause {0!r}".format(clause.strip()))
        op, bound = match.group(1), tuple(int(p) for p in match.group(2).split("."))
        have = tuple(version[:len(bound)])
        ok = {">=": have >= bound, "<=": have <= bound, "==": have == bound, "!=": have != bound,
              ">": have > bound, "<": have < bound,
              "~=": have >= bound and tuple(version[:len(bound) - 1]) == bound[:-1]}[op]
        if not ok:
            return False
    return True


def _on_path(name):
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(folder, name)
        if folder and os.path.isfile(path) and os.access(path, os.X_OK):
            return True
    return False


def _hint():
    found = [name for name in CANDIDATES if _on_path(name)]
    return "PYTHON={0}".format(found[0]) if found else "PYTHON=<a Python 3.11 or 3.12>"


def problem(spec, venv=None, version=None, has_pip=None):
    """The one-line reason this interpreter cannot serve (None: it can). ``version`` and
    ``has_pip`` default to this interpreter's."""
    version = tuple(sys.version_info[:3]) if version is None else tuple(version)
    shown = ".".join(str(p) for p in version)
    if not satisfies(version, spec):
        if venv:
            return ("{0} was made with Python {1}; dlsysbench needs Python {2}: remove it (rm -rf {0}) and run "
                    "make again with {3}".format(venv, shown, spec, _hint()))
        return ("{0} is Python {1}; dlsysbench needs Python {2}: run make again with {3}"
                .format(sys.executable, shown, spec, _hint()))
    if venv:
        if has_pip is None:
            try:
                import importlib.util
                has_pip = importlib.util.find_spec("pip") is not None
            except ImportError:  # Python 2
                import imp
                try:
                    imp.find_module("pip")
                    has_pip = True
                except ImportError:
                    has_pip = False
        if not has_pip:
            return ("{0} has no pip (its Python had no ensurepip when it was made; Debian/Ubuntu: "
                    "apt-get install python{1}.{2}-venv): remove it (rm -rf {0}) and run make again"
                    .format(venv, version[0], version[1]))
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", help="the virtual environment this interpreter belongs to")
    parser.add_argument("--pyproject", default=os.path.join(ROOT, "pyproject.toml"))
    args = parser.parse_args(argv)
    spec = requires_python(args.pyproject)
    if spec is None:
        return 0
    try:
        said = problem(spec, args.venv)
    except ValueError as err:   # a clause this reader does not know: pip will judge it
        print("make: warning: {0} in {1}; not checked here".format(err, args.pyproject), file=sys.stderr)
        return 0
    if said:
        print("make: " + said, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
