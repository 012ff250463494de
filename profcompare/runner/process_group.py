"""A job's subprocess and everything it starts end together.

Each job runs in a session of its own (``start_new_session=True``), so the job's subprocess leads
a process group holding every process the program starts (forks, ``multiprocessing`` workers,
shell commands) unless one deliberately leaves it. The group is ended, SIGTERM first and SIGKILL
after :data:`GRACE_SECONDS`, on every way a job ends:

* the job's subprocess exited (normally or not): the run is over and its directory is about to
  be published, so processes it left running in the background are ended too;
* profcompare was interrupted (Ctrl-C, SIGTERM, SIGHUP) or a job failed to start;
* profcompare itself was killed (SIGKILL): the job's subprocess notices (see
  :mod:`profcompare.runner.process.parent_watch`) and kills its own group.

A process of the group that is a zombie (ended, waiting to be reaped by whoever adopted it) no
longer counts as running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterable

#: seconds a group has between SIGTERM and SIGKILL (a choice: long enough to flush and close files)
GRACE_SECONDS = 2.0

#: how often a group is looked at while it is given time to end (seconds)
_POLL_SECONDS = 0.02


def _linux_members(pgid: int) -> list[int] | None:
    """Pids of the running (not zombie) processes of group ``pgid`` from /proc; None without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    members = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                text = f.read()
        except OSError:
            continue  # ended meanwhile
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
        fields = text[text.rfind(b")") + 2:].split()
        if len(fields) > 2 and fields[0] not in (b"Z", b"X") and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def group_members(pgid: int) -> list[int]:
    """The processes still running in process group ``pgid`` (on systems without /proc, the group id
    itself when any process of the group exists)."""
    if sys.platform.startswith("linux"):
        found = _linux_members(pgid)
        if found is not None:
            return found
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    return [pgid]


def signal_group(pgid: int, signum: int) -> None:
    """Send ``signum`` to every process of group ``pgid`` (nothing when the group is gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def end_groups(pgids: Iterable[int], grace: float = GRACE_SECONDS) -> None:
    """End every process of the groups ``pgids``: SIGTERM (and SIGCONT, so stopped processes get it),
    then SIGKILL for whatever still runs after ``grace`` seconds. Returns at once for groups that
    are already empty."""
    alive = [pgid for pgid in dict.fromkeys(pgids) if group_members(pgid)]
    if not alive:
        return
    for pgid in alive:
        signal_group(pgid, signal.SIGTERM)
        signal_group(pgid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
        alive = [pgid for pgid in alive if group_members(pgid)]
    for pgid in alive:
        signal_group(pgid, signal.SIGKILL)


__all__ = ["GRACE_SECONDS", "end_groups", "group_members", "signal_group"]
