"""Edit a valid store file with SQL and seal it again: what a hostile or buggy writer produces.

The checksums then match the edited content, so only the reader's and the model's value checks
stand between the edit and the user.
"""

from __future__ import annotations

import pathlib
import shutil
import sqlite3
from typing import Any
from unittest import mock

from profcompare.errors import ProfcompareError
from profcompare.readers import store


def _content_checksums(path: pathlib.Path) -> dict[str, tuple[int, int]]:
    """(rows, crc) of meta, dictionary, the catalogue and every table as the reader computes them."""
    seen: dict[str, tuple[int, int]] = {}

    def record(file: Any, name: str, checksums: Any, rows: int, crc: int) -> None:
        seen[name] = (rows, crc)

    with mock.patch.object(store, "_verify", record):
        try:
            store.read_report(path)  # every table is read (and recorded) before meta is decoded
        except ProfcompareError:
            pass
    return seen


def edited_store(src: str | pathlib.Path, dst: pathlib.Path, *statements: tuple[str, tuple[Any, ...]]) -> pathlib.Path:
    """Copy store ``src`` to ``dst``, run ``statements`` (SQL, parameters) on it and reseal it."""
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    try:
        for sql, parameters in statements:
            con.execute(sql, parameters)
        con.commit()
    finally:
        con.close()
    sums = _content_checksums(dst)
    con = sqlite3.connect(dst)
    try:
        for name, (rows, crc) in sums.items():
            if name != "checksums":
                con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = ?", (rows, crc, name))
        others = [r for r in con.execute("SELECT table_name, rows, crc32 FROM checksums") if r[0] != "checksums"]
        con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'checksums'", (store._checksums_checksum(others),))
        con.commit()
    finally:
        con.close()
    return dst
