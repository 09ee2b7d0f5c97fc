"""Start a child process that stops with its parent: SIGINT, the Ctrl-C way, when the parent
dies (SIGKILL included; Linux), and SIGINT at its default whatever the parent inherited.

A process that a non-interactive shell starts in the background inherits SIGINT ignored,
and so would its children: a SIGINT sent to stop one (the suite's runner forwards SIGTERM
to asv that way) would do nothing. A child whose parent is killed outright runs on with no
parent: asv would go on measuring beside the next run and then overwrite its results.
Elsewhere than Linux the child gets no signal when its parent dies.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from typing import Callable

PR_SET_PDEATHSIG = 1           # <sys/prctl.h>
PARENT_DEATH_SIGNAL = signal.SIGINT


def _libc_prctl():
    """Return libc's ``prctl`` (Linux), else None: no other system has it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()   # looked up here: the child between fork and exec only calls it


def child_setup(parent: int, own_group: bool) -> Callable[[], None]:
    """Return what a child of process ``parent`` runs between fork and exec (Popen's
    ``preexec_fn``): SIGINT back to its default, so the child's Python stops on it even
    where ``parent`` inherited it ignored; a process group of its own when ``own_group`` (a
    Ctrl-C the parent ignores must not reach the child from the terminal either); and, on
    Linux, :data:`PARENT_DEATH_SIGNAL` once the thread that started it dies, SIGKILL
    included. SIGINT, not SIGTERM: asv stops its benchmark's process group on it and saves
    nothing. A child whose parent is already gone exits at once, status 1. It takes no lock
    (a ``preexec_fn`` that needs one another thread held at the fork deadlocks): libc's
    ``prctl`` was looked up at import.
    """
    def setup() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if own_group:
            os.setpgid(0, 0)
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, ctypes.c_ulong(PARENT_DEATH_SIGNAL))
            if os.getppid() != parent:   # died before the line above: no signal will come
                os._exit(1)
    return setup


def start(command: list[str], **popen) -> subprocess.Popen:
    """Start ``command`` (``popen``: Popen's other arguments but ``preexec_fn``) as
    :func:`child_setup` describes, in its own process group when this process ignores
    SIGINT, and return it. Call it from a thread that lives as long as the child (the
    parent-death signal follows the thread that started it: the main thread, say)."""
    own_group = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    return subprocess.Popen(command, preexec_fn=child_setup(os.getpid(), own_group), **popen)
