"""A runner child dies with its parent: no orphaned variant keeps computing after ``kill -9``.

The runner can clean up its children on SIGINT/SIGTERM, but SIGKILL gives it no chance. So the
child takes care of itself, two ways:

* on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills the child the moment the
  thread that started it exits (the runner starts children from worker threads that live until
  every child has finished);
* everywhere, a daemon thread that polls the parent's PID and exits the process when the child
  has been re-parented (the parent is gone).

The parent passes its PID in :data:`PARENT_PID_VARIABLE`, so a parent that died before the child
got here is noticed too.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PARENT_PID_VARIABLE = "PROFCOMPARE_PARENT_PID"
_PR_SET_PDEATHSIG = 1
#: How often the fallback thread looks at the parent (seconds).
POLL_SECONDS = 0.5


def _expected_parent() -> int:
    try:
        return int(os.environ.get(PARENT_PID_VARIABLE, ""))
    except ValueError:
        return os.getppid()


def _set_death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the polling thread still covers it


def _orphaned(parent: int) -> bool:
    return os.getppid() != parent


def _watch(parent: int) -> None:
    while True:
        if _orphaned(parent):
            os._exit(1)  # nothing to clean: the run directory is the parent's staging area
        time.sleep(POLL_SECONDS)


def exit_with_parent() -> None:
    """Arrange for this process to end when its parent does (call first thing in the child)."""
    parent = _expected_parent()
    _set_death_signal()
    if _orphaned(parent):
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="profcompare-parent-watch", daemon=True).start()


__all__ = ["PARENT_PID_VARIABLE", "POLL_SECONDS", "exit_with_parent"]
