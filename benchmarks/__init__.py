"""The asv benchmarks (one module per system; :mod:`benchmarks.common` holds their helpers).

Importing the package names the checkout that holds it to
:func:`impls.harness.paths.set_benchmarks_root`: asv imports these modules from the
checkout, but runs ``setup_cache`` in a scratch directory, with ``--python=same`` without
``ASV_CONF_DIR``, where :func:`impls.harness.paths.repo_root` could not otherwise find the
checkout of an ``impls`` installed elsewhere.
"""
from pathlib import Path

from impls.harness import paths

paths.set_benchmarks_root(Path(__file__).resolve().parent.parent)
