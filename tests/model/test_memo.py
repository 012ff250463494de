"""memoized_copy: a frozen object's pandas result computed once, every caller given a copy."""

from __future__ import annotations

import dataclasses

import pandas as pd

from profcompare.perf.memo import memoized_copy


@dataclasses.dataclass(frozen=True, eq=False)
class _Holder:
    values: tuple[int, ...]
    calls: list[int] = dataclasses.field(default_factory=list)

    @memoized_copy
    def frame(self) -> pd.DataFrame:
        self.calls.append(1)
        return pd.DataFrame({"v": list(self.values)})


def test_computed_once_and_every_caller_gets_its_own_copy() -> None:
    holder = _Holder((1, 2, 3))
    first = holder.frame()
    first.loc[0, "v"] = 99  # a caller changing what it got
    second = holder.frame()
    assert second["v"].tolist() == [1, 2, 3] and len(holder.calls) == 1
    assert second is not holder.frame()


def test_a_replaced_object_computes_its_own_result() -> None:
    holder = _Holder((1, 2))
    holder.frame()
    other = dataclasses.replace(holder, values=(5,), calls=[])
    assert other.frame()["v"].tolist() == [5] and len(other.calls) == 1
