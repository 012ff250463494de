"""A runner child dies with its parent, and takes the processes it started with it: nothing keeps
computing after ``kill -9`` of profcompare.

The runner can clean up its children on SIGINT/SIGTERM, but SIGKILL gives it no chance. So the
child takes care of itself, two ways:

* on Linux, ``prctl(PR_SET_PDEATHSIG)``: the kernel signals the child the moment the thread that
  started it exits (the runner starts children from worker threads that live until every child
  has finished); the handler acts only when the parent is really gone;
* everywhere, a daemon thread that polls the parent's PID and acts when the child has been
  re-parented (the parent is gone).

Acting means: when the child leads a process group of its own (the runner starts it with
``start_new_session=True``), SIGKILL to that whole group -- the program's forks and helpers
included, which neither mechanism reaches on its own (a forked process keeps no parent-death
signal and no threads); otherwise the child exits.

The parent passes its PID in :data:`PARENT_PID_VARIABLE`, so a parent that died before the child
got here is noticed too.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from typing import Any

PARENT_PID_VARIABLE = "PROFCOMPARE_PARENT_PID"
_PR_SET_PDEATHSIG = 1
#: How often the fallback thread looks at the parent (seconds).
POLL_SECONDS = 0.5


def _expected_parent() -> int:
    try:
        return int(os.environ.get(PARENT_PID_VARIABLE, ""))
    except ValueError:
        return os.getppid()


def _death_signal() -> int | None:
    """The signal the kernel sends when the parent dies: a real-time signal no program is expected
    to use (its default action, before our handler is installed, ends the process too)."""
    rtmin = getattr(signal, "SIGRTMIN", None)
    return None if rtmin is None else int(rtmin) + 3


def _set_death_signal(parent: int) -> None:
    signum = _death_signal()
    if not sys.platform.startswith("linux") or signum is None:
        return

    def on_parent_death(_signum: int, _frame: Any) -> None:
        if _orphaned(parent):
            _end(parent)

    try:
        signal.signal(signum, on_parent_death)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
    except (OSError, AttributeError, ValueError):
        pass  # the polling thread still covers it


def _orphaned(parent: int) -> bool:
    return os.getppid() != parent


def _end(parent: int) -> None:
    """The parent is gone: end this process's group when it leads one of its own, else this process.
    (Nothing to clean: the run directory is the parent's staging area.)"""
    if os.getpgrp() == os.getpid():
        with contextlib.suppress(OSError):
            os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(1)


def _watch(parent: int) -> None:
    while True:
        if _orphaned(parent):
            _end(parent)
        time.sleep(POLL_SECONDS)


def exit_with_parent() -> None:
    """Arrange for this process (and its process group, when it leads one) to end when its parent
    does (call first thing in the child, from the main thread)."""
    parent = _expected_parent()
    _set_death_signal(parent)
    if _orphaned(parent):
        _end(parent)
    threading.Thread(target=_watch, args=(parent,), name="profcompare-parent-watch", daemon=True).start()


__all__ = ["PARENT_PID_VARIABLE", "POLL_SECONDS", "exit_with_parent"]
