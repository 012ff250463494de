"""Results computed once per immutable object: a report's summary, ledger, execution by phase and
code by program, a comparison's ledger views are asked for by the page, the markdown, the JSON, the terminal summary and the
run's index in turn (about 70 ms of every headline run went to computing them again)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def memoized_copy(method: Callable[[Any], T]) -> Callable[[Any], T]:
    """Decorate a method without arguments of a frozen dataclass (a Report, a Comparison) whose
    result is a pandas DataFrame or Series: the first call computes it and keeps it on the
    instance, every call returns a copy (a caller may change what it gets; the kept result
    stays as computed). The instance's tables are never changed after it is built, so the result
    cannot go stale; ``dataclasses.replace`` builds a new instance, with nothing kept."""
    key = f"_memo_{method.__name__}"

    @functools.wraps(method)
    def wrapper(self: Any) -> T:
        return kept_copy(self, key, lambda: method(self))

    return wrapper


def kept_copy(instance: Any, key: str, compute: Callable[[], T]) -> T:
    """A copy of ``compute()``'s result, computed once per ``instance`` and ``key`` and kept on the
    instance (as :func:`memoized_copy` keeps a method's): for pure functions of a report that
    several outputs ask for (its execution by phase, its code by program)."""
    kept = instance.__dict__.get(key)
    if kept is None:
        kept = compute()
        object.__setattr__(instance, key, kept)  # frozen dataclass: set around its __setattr__
    # under copy-on-write a shallow copy is as safe as a deep one (a change to either copies
    # the changed column first) and costs nothing: a result of millions of rows is not held twice
    return kept.copy(deep=not copy_on_write())  # type: ignore[attr-defined, no-any-return]


def copy_on_write() -> bool:
    """Whether pandas copies a frame's data on write (always from pandas 3; an option before): a
    shallow copy or a slice of a frame is then independent of it. Read at each call under pandas
    2: the option is switched on for a moment while a large frame is made (tables.make_frame), and
    an answer kept from that moment would be wrong after it."""
    import pandas as pd

    if _pandas_major() >= 3:
        return True
    return bool(pd.get_option("mode.copy_on_write") is True)


@functools.cache
def _pandas_major() -> int:
    import pandas as pd

    return int(pd.__version__.split(".", 1)[0])


__all__ = ["copy_on_write", "kept_copy", "memoized_copy"]
