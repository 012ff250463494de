"""Opening a store without reading its tables: :func:`open_store` reads and verifies the header,
``checksums``, ``meta``, ``dictionary`` and the ``columns`` catalogue and returns a lazy
:class:`~profcompare.model.Report` whose tables a :class:`StoreTables` reads when first asked for.

Each table read is checked as an eager read checks it: its row count and CRC-32 over the decoded
columns (computed as they are decoded, on the arrays the frame keeps), then the Report's checks
of that table. A table is read whole: its checksum covers all its columns, so a subset of them
could not be verified.

The file is held open (a descriptor) from opening on, so that on Linux a store moved after it
was opened (a run's staging directory renamed into place) is still read, found through
``/proc/self/fd``; elsewhere a moved store is refused. A store changed or replaced since is
refused (ReportFormatError) rather than read as a mix of two files. At most
:data:`MAX_HELD_FILES` stores are held open at once (a sweep opens hundreds of reports): opening
one more lets go of the longest held, which can then no longer follow its file if it moves; a
store lets go of its file too once every table has been read.
"""

from __future__ import annotations

import os
import pathlib
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pandas as pd

from profcompare.errors import ReportFormatError
from profcompare.model import TABLES, Report, empty_frame
from profcompare.perf import collector
from profcompare.readers.store_read import (
    OpenedStore,
    _decode_meta,
    _open_database,
    _read_checked,
    _read_table,
    as_store_errors,
    checked_file,
)


def _identity(path: pathlib.Path | str) -> tuple[int, int, int, int] | None:
    """(device, inode, size, modification time in ns) of ``path``; None when it cannot be read."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


class StoreTables:
    """The tables of one opened store, read on demand (a
    :class:`~profcompare.model.TableSource`). Picklable: a copy in another process opens the
    file again by its path (and refuses it if it changed)."""

    def __init__(self, file: pathlib.Path, opened: OpenedStore, identity: tuple[int, int, int, int]) -> None:
        self.file = file
        self.opened = opened
        self.identity = identity
        #: how many times each table was read from the file (what tests look at)
        self.reads: dict[str, int] = {}
        self._frames: dict[str, pd.DataFrame] = {}
        self._fd: int | None = None
        self._hold()

    def _hold(self) -> None:
        try:
            fd = os.open(self.file, os.O_RDONLY)
        except OSError:
            return
        if _fd_identity(fd) != self.identity:
            os.close(fd)
            return
        self._fd = fd
        _HELD[id(self)] = weakref.ref(self)
        while len(_HELD) > MAX_HELD_FILES:
            _, oldest = _HELD.popitem(last=False)
            held = oldest()
            if held is not None:
                held._let_go()

    def _let_go(self) -> None:
        """Close the held descriptor (the store is then followed by its path only)."""
        if _HELD is not None:  # None only while the interpreter shuts down
            _HELD.pop(id(self), None)
        fd, self._fd = self.__dict__.get("_fd"), None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_fd"] = None  # a descriptor means nothing in another process
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._hold()

    def __del__(self) -> None:
        self._let_go()

    def rows(self, table: str) -> int:
        """The recorded row count of ``table`` (verified against the table when it is read)."""
        return self.opened.rows(table)

    def load(self, table: str, check: Callable[[pd.DataFrame], None]) -> pd.DataFrame:
        """``table``'s frame, read once (kept for every Report sharing this source) and checked by
        ``check``; any failure is a ReportFormatError naming the file."""
        frame = self._frames.get(table)
        if frame is None:
            frame = self.read(table)
        as_store_errors(self.file, lambda: check(frame))
        self._frames[table] = frame
        if len(self._frames) == len(TABLES):
            self._let_go()  # every table is in memory: the file is not needed again
        return frame

    def read(self, table: str) -> pd.DataFrame:
        """``table`` read from the file, checked against its checksum and decoded (not kept)."""
        if table not in TABLES:
            raise KeyError(table)
        if not self.opened.stored(table):
            return empty_frame(table)  # an older store: the table reads as empty
        path = self._current_path()
        self.reads[table] = self.reads.get(table, 0) + 1
        with collector.paused():
            return _read_checked(self.file, lambda con: _read_table(con, self.file, self.opened, table), at=path)

    def _current_path(self) -> pathlib.Path:
        """Where the opened file is now: its path, or where the held descriptor says it moved."""
        if _identity(self.file) == self.identity:
            return self.file
        if self._fd is not None and _fd_identity(self._fd) == self.identity:
            try:
                moved = pathlib.Path(os.readlink(f"/proc/self/fd/{self._fd}"))
            except OSError:
                moved = None
            if moved is not None and _identity(moved) == self.identity:
                return moved
        raise ReportFormatError(f"{self.file}: the report changed, moved or went since it was opened; open it again")


#: the most store files held open at once (see the module docstring): well under the usual
#: per-process limits (1,024 on Linux, 256 on macOS), leaving room for everything else
MAX_HELD_FILES = 64

#: the stores holding a descriptor, longest held first
_HELD: OrderedDict[int, weakref.ReferenceType[StoreTables]] = OrderedDict()


def _fd_identity(fd: int) -> tuple[int, int, int, int] | None:
    try:
        stat = os.fstat(fd)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def open_store(path: str | os.PathLike[str]) -> Report:
    """Open the store file ``path`` and return its Report, reading no table (see the module
    docstring). Raises as :func:`~profcompare.readers.store_read.read_report` does for what is
    wrong with the header, ``checksums``, ``meta``, ``dictionary`` or catalogue; what is wrong in a
    table is raised (ReportFormatError) when the table is first used."""
    file = checked_file(path)
    identity = _identity(file)
    opened = _read_checked(file, lambda con: _open_database(con, file))
    if identity is None or _identity(file) != identity:
        raise ReportFormatError(f"{file}: changed while it was being opened; open it again")
    meta = as_store_errors(file, lambda: _decode_meta(file, opened.meta_values))
    return as_store_errors(file, lambda: Report.lazy(meta, StoreTables(file, opened, identity)))


__all__ = ["StoreTables", "open_store"]
