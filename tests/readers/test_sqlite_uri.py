"""The read-only SQLite URI of a report file: percent-encoded as urllib.request.pathname2url
encodes a POSIX path, without importing urllib.request where reports are only written."""

from __future__ import annotations

import pathlib
import sqlite3
import subprocess
import sys
import urllib.request

import pytest

from profcompare.readers.sqlite_uri import read_only_uri


@pytest.mark.parametrize("name", ["plain.sqlite", "a b%20c.sqlite", "q?x#y.sqlite", "ünïcode.sqlite", "semi;colon"])
def test_uri_is_pathname2url_of_the_resolved_path(tmp_path: pathlib.Path, name: str) -> None:
    file = tmp_path / name
    assert read_only_uri(file) == "file:" + urllib.request.pathname2url(str(file.resolve())) + "?mode=ro"
    sqlite3.connect(file).close()  # the URI opens that very file, read-only
    con = sqlite3.connect(read_only_uri(file), uri=True)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            con.execute("CREATE TABLE t (x)")
    finally:
        con.close()


def test_writing_a_report_does_not_import_the_http_client() -> None:
    code = "import sys, profcompare.readers.store; print('urllib.request' in sys.modules, 'http.client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
