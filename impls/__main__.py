"""``python -m impls list | run <experiment>``: see :mod:`impls.harness.commands`."""
from impls.harness.commands import main

raise SystemExit(main())
