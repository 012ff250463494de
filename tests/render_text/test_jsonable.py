"""What the JSON export makes of each kind of value (plain types take a shorter path)."""

from __future__ import annotations

import enum
import math
from collections import OrderedDict

import numpy as np
import pandas as pd

from profcompare.render.json_out import jsonable


class _Level(enum.IntEnum):
    HIGH = 3


class _Name(str):
    pass


def test_each_kind_of_value() -> None:
    assert jsonable("text") == "text" and jsonable(7) == 7 and jsonable(None) is None
    assert jsonable(2.5) == 2.5 and jsonable(math.nan) is None and jsonable(-math.inf) is None
    assert jsonable(True) is True and jsonable(np.bool_(False)) is False
    assert type(jsonable(_Level.HIGH)) is int and jsonable(_Level.HIGH) == 3
    assert type(jsonable(np.int64(4))) is int and type(jsonable(np.float32(0.5))) is float
    assert jsonable(np.float64("nan")) is None and jsonable(pd.NA) is None and jsonable(pd.NaT) is None
    assert type(jsonable(_Name("a"))) is _Name
    assert jsonable({1: [1.0, math.inf, (2, "x")], "k": {"n": np.int32(3)}}) == {"1": [1.0, None, [2, "x"]], "k": {"n": 3}}
    assert jsonable(OrderedDict(b=1, a={2, 1})) == {"b": 1, "a": [1, 2]}
    assert jsonable(np.array([[1, 2], [3, 4]])) == [[1, 2], [3, 4]]
    assert jsonable(pd.Timestamp(0, unit="s")) == "1970-01-01 00:00:00"
