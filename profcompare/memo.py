"""Results computed once per immutable object: a report's summary and ledger, a comparison's
ledger views are asked for by the page, the markdown, the JSON, the terminal summary and the
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
        kept = self.__dict__.get(key)
        if kept is None:
            kept = method(self)
            object.__setattr__(self, key, kept)  # frozen dataclass: set around its __setattr__
        return kept.copy()  # type: ignore[attr-defined, no-any-return]

    return wrapper


__all__ = ["memoized_copy"]
