"""Staging directories and the lock that proves their owner alive.

A run is written into a hidden sibling of its final directory, ``<out>/.<name>.tmp-<pid>-<tag>/``,
and renamed into place when complete. Several processes may share ``<out>`` -- runs in other
containers or on other hosts included, whose process ids mean nothing here -- so a staging
directory is never judged by its process id. Its owner proves it is alive instead: it creates
``.owner.lock`` inside the directory, takes an exclusive ``flock`` on it before anything else is
written, writes who it is (host, pid, start time) into it, and keeps the lock until the run is
published or the process ends (the kernel releases the lock of a killed process). Clean-up takes
the lock without waiting and removes the directory only when it gets it: the owner is gone.

Two cases have no lock to take, and both are decided by age:

* a directory without ``.owner.lock``, or with an empty one: its owner is between creating the
  directory and writing the lock file (a few system calls), or was killed right there. Such an
  entry is left alone for :data:`SETUP_GRACE_SECONDS` after it was last changed, then removed.
* an entry that is not a directory (a file or a symlink with a staging name): no run stages into
  one, so it is debris and removed.

``flock`` locks are shared across containers of one host (one kernel) and, on Linux, reach NFS
servers as byte-range locks. Directories this process owns are also remembered here, so
clean-up in the same process never takes them for dead whatever the file system does with locks.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import socket
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from profcompare.errors import ProfcompareError

#: the lock file inside a staging directory (its owner holds an exclusive flock on it)
OWNER_LOCK = ".owner.lock"

#: ASSUMPTION: a process creates a staging directory and writes its lock file within this many
#: seconds (a mkdir, an open, a flock and a write); a younger entry without an owner is being set up
SETUP_GRACE_SECONDS = 60.0

#: ``.<name>.tmp-<pid>-<tag>`` (staging) and ``.<name>.old-<pid>-<tag>`` (a replaced run on its way
#: out); ``-<tag>`` is absent in the names of earlier versions
_STAGING_RE = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)(?:-[0-9a-f]+)?$")

_owned_lock = threading.Lock()
#: (device, inode) of every staging directory this process holds
_owned: set[tuple[int, int]] = set()
#: the lock files this process holds open: a process forked from it closes its copies at once, so
#: that only this process's descriptor keeps the lock (a forked variant that outlives a killed
#: runner must not keep its staging directory looking owned; closing a copy never unlocks)
_held_fds: set[int] = set()


def _close_held_in_child() -> None:
    for fd in list(_held_fds):
        with contextlib.suppress(OSError):
            os.close(fd)
    _held_fds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_held_in_child)


class StagingLostError(ProfcompareError):
    """A run's staging directory was removed or replaced by another process before it was published."""


@dataclass(frozen=True)
class Staging:
    """A staging directory and the open, locked file that proves its owner (this process) alive."""

    path: Path
    lock_fd: int
    identity: tuple[int, int]  # (device, inode) of the directory when it was created

    def check(self) -> None:
        """Raise StagingLostError unless :attr:`path` is still the directory this process created and
        holds its lock file."""
        try:
            directory = os.lstat(self.path)
            lock = os.lstat(self.path / OWNER_LOCK)
            held = os.fstat(self.lock_fd)
        except OSError:
            raise self.lost() from None
        if (directory.st_dev, directory.st_ino) != self.identity or (lock.st_dev, lock.st_ino) != (held.st_dev, held.st_ino):
            raise self.lost()

    def lost(self) -> StagingLostError:
        """The error saying this run's staging directory is gone (nothing was published)."""
        return StagingLostError(f"the staging directory {self.path} of this run was removed or replaced by another "
                                "process while the run was in progress; nothing was published")

    def release(self) -> None:
        """Give up the directory: forget it and release the lock (call once, after publishing or removing)."""
        with _owned_lock:
            _owned.discard(self.identity)
            _held_fds.discard(self.lock_fd)
        with contextlib.suppress(OSError):
            os.close(self.lock_fd)

    def discard(self) -> None:
        """Remove the directory if it is still this process's, then :meth:`release` it."""
        with contextlib.suppress(StagingLostError):
            self.check()
            shutil.rmtree(self.path, ignore_errors=True)
        self.release()


def create_staging(out: Path, name: str, kind: str = "tmp") -> Staging:
    """Create and lock a new staging directory for run ``name`` in ``out`` (``kind`` tmp or old).

    The lock is taken before anything else is written and held until :meth:`Staging.release`.
    """
    for _ in range(100):
        path = out / f".{name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 32 random bits
        raise FileExistsError(f"cannot create a staging directory in {out}")
    fd = -1
    try:
        fd = os.open(path / OWNER_LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocking: a clean-up that looks at the fresh file lets go at once
        owner = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}
        os.write(fd, (json.dumps(owner) + "\n").encode())
        st = os.lstat(path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
        raise
    staging = Staging(path, fd, (st.st_dev, st.st_ino))
    with _owned_lock:
        _owned.add(staging.identity)
        _held_fds.add(fd)
    return staging


def _staging_entries(out: Path) -> list[Path]:
    try:
        return sorted(entry for entry in out.iterdir() if _STAGING_RE.match(entry.name))
    except OSError:
        return []


@contextlib.contextmanager
def _claim(entry: Path) -> Iterator[bool]:
    """Yield True, holding the entry's lock if it has one, when the entry's owner is gone."""
    try:
        st = os.lstat(entry)
    except OSError:
        yield False
        return
    with _owned_lock:
        ours = (st.st_dev, st.st_ino) in _owned
    if ours:
        yield False
        return
    if not stat.S_ISDIR(st.st_mode):
        yield True
        return
    young = time.time() - st.st_mtime < SETUP_GRACE_SECONDS
    try:
        fd = os.open(entry / OWNER_LOCK, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        yield not young
        return
    except OSError:
        yield False  # cannot look: leave it
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False  # held: the owner is alive (or a clean-up is looking at it)
            return
        lock = os.fstat(fd)
        yield lock.st_size > 0 or time.time() - lock.st_mtime >= SETUP_GRACE_SECONDS
    finally:
        os.close(fd)


def leftover_staging(out: Path) -> list[Path]:
    """Hidden staging entries in ``out`` whose owner is gone (see the module docstring).

    They are what killed runs leave behind: no process can finish or publish them. Entries of
    runs in progress, here or in any other process sharing ``out``, are not included.
    """
    found = []
    for entry in _staging_entries(out):
        with _claim(entry) as gone:
            if gone:
                found.append(entry)
    return found


def _remove_entry(path: Path) -> None:
    """Remove a directory tree, a file or a symlink (never following the link)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def remove_stale_staging(out: Path) -> list[Path]:
    """Delete every leftover of killed runs in ``out`` (see :func:`leftover_staging`); return them.

    Each is removed while its lock is held, so two clean-ups never race a new owner. Any run
    name's leftovers go: the process that could have used them is gone.
    """
    removed = []
    for entry in _staging_entries(out):
        with _claim(entry) as gone:
            if gone:
                _remove_entry(entry)
                removed.append(entry)
    return removed


__all__ = ["OWNER_LOCK", "SETUP_GRACE_SECONDS", "Staging", "StagingLostError", "create_staging", "leftover_staging",
           "remove_stale_staging"]
