"""The asv benchmarks (one module per system; :mod:`benchmarks.common` holds their helpers).

Importing the package sets ``DLSYSBENCH_ROOT`` to the checkout that holds it, when it is one
(asv.conf.json and impls/ beside it) and the variable is unset or empty: asv imports these
modules from the checkout, but runs ``setup_cache`` in a scratch directory, with
``--python=same`` without ``ASV_CONF_DIR``, where :func:`impls.harness.paths.repo_root` could
not find the checkout of an ``impls`` installed elsewhere.
"""
import os
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent
if (not os.environ.get("DLSYSBENCH_ROOT") and (_CHECKOUT / "asv.conf.json").is_file()
        and (_CHECKOUT / "impls").is_dir()):
    os.environ["DLSYSBENCH_ROOT"] = str(_CHECKOUT)
