"""This process's peak resident memory, measured the same way however the process started."""
from __future__ import annotations

import resource
import sys


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far, in bytes: ``VmHWM`` of /proc/self/status
    where there is one, the high-water mark of the pages this process image has mapped
    (a forked child's counts the pages it shares copy-on-write with the process it was
    forked from); elsewhere getrusage's ``ru_maxrss``, which on Linux also carries over
    the peak of the image that exec replaced (so a spawned child's can be its parent's)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(kib * (1 if sys.platform == "darwin" else 1024))
