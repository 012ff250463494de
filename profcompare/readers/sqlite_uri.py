"""The SQLite URI that opens a database file read-only."""

from __future__ import annotations

import pathlib
import urllib.parse


def read_only_uri(file: pathlib.Path) -> str:
    """``file:<absolute path, percent-encoded>?mode=ro`` for ``sqlite3.connect(uri, uri=True)``.

    The path is encoded as ``urllib.request.pathname2url`` encodes a POSIX path (its
    ``quote``), without importing ``urllib.request`` (which pulls in the HTTP client and the
    e-mail package: tens of milliseconds in every process that reads or writes a report); a
    path starting with ``//`` gets an empty authority so it is not read as a host name.
    """
    path = urllib.parse.quote(str(file.resolve()))
    if path.startswith("//"):
        path = "//" + path
    return f"file:{path}?mode=ro"


__all__ = ["read_only_uri"]
