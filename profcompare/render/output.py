"""Writing rendered output to a file: atomically, and never over an existing file unless asked."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from profcompare.errors import OutputExistsError, ProfcompareError

#: Characters of a text encoded and written at a time.
_PIECE = 1 << 22


def write_output(content: str | bytes | Iterable[str], path: str | os.PathLike[str], *, force: bool = False) -> None:
    """Write ``content`` to ``path`` atomically; returns None.

    The content goes to a temporary file in the same directory which then replaces ``path``
    (``os.replace``), so readers see either the old file or the complete new one and an error
    leaves no partial file behind. ``str`` content (or texts, written one after the other as
    they come) is written as UTF-8.

    Raises :class:`OutputExistsError` when ``path`` exists and ``force`` is false, and
    :class:`ProfcompareError` when the directory does not exist or cannot be written.
    """
    target = Path(path)
    if target.is_dir():
        raise ProfcompareError(f"{target} is a directory; give a file name")
    # lexists: a symlink is an existing entry even when it dangles
    if os.path.lexists(target) and not force:
        raise OutputExistsError(f"{target} exists; use --force to overwrite")
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise ProfcompareError(f"cannot write {target}: directory {directory} does not exist")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise ProfcompareError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(content, bytes):
                handle.write(content)
            else:  # encoded a piece at a time: no second copy of a large text
                for text in [content] if isinstance(content, str) else content:
                    for start in range(0, len(text), _PIECE):
                        handle.write(text[start:start + _PIECE].encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600; give the file the permissions a plain open() would
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_name, 0o666 & ~umask)
        if not force and os.path.lexists(target):
            raise OutputExistsError(f"{target} exists; use --force to overwrite")
        os.replace(tmp_name, target)
    except BaseException as exc:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise ProfcompareError(f"cannot write {target}: {exc.strerror or exc}") from exc
        raise


__all__ = ["write_output"]
