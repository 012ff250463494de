"""The writer's text-column dictionary, factorized a chunk of rows at a time, is pandas' own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from profcompare.readers import store_write as store


@pytest.mark.parametrize("seed", range(20))
def test_chunked_codes_and_levels_are_pandas_factorize(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "_FACTORIZE_ROWS", 7)
    rng = np.random.default_rng(seed)
    pool = ["a", "b", "c", "", "é", None, "d", "x/y"]
    values = np.array([pool[i] for i in rng.integers(0, len(pool), int(rng.integers(0, 60)))], dtype=object)
    codes, levels = store._factorize_in_chunks(values)
    expected_codes, expected_levels = pd.factorize(values, use_na_sentinel=True)
    assert codes.tolist() == expected_codes.tolist()
    assert levels == list(expected_levels)


def test_a_value_first_seen_in_a_later_chunk_gets_the_next_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "_FACTORIZE_ROWS", 2)
    codes, levels = store._factorize_in_chunks(np.array(["b", "a", None, "b", "c", "a"], dtype=object))
    assert codes.tolist() == [0, 1, -1, 0, 2, 1]
    assert levels == ["b", "a", "c"]
