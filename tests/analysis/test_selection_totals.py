"""What a selection of variables rows adds up to, and by how much the rows overlap."""

from __future__ import annotations

import pandas as pd

from profcompare.analysis.views import selection_totals


def test_call_instances_count_once_in_the_tensor_figure() -> None:
    rows = pd.DataFrame({
        "name": ["grad@1", "grad@2", "grad@3", "w", "acc@1"],
        "bytes": [100, 100, 100, 40, 7],
        "always_live": [False, False, False, True, False],
    })
    # rows: 3 x 100 + 40 + 7 = 347 B; tensors: grad (100, its 3 instances once), w 40, acc 7 = 147 B;
    # instance rows: only grad is listed more than once (acc@1 alone is one row)
    assert selection_totals(rows) == {"rows": 5, "bytes": 347, "tensors": 3, "tensor_bytes": 147,
                                      "instance_rows": 3, "not_always_live_rows": 4}


def test_an_empty_selection_adds_up_to_nothing() -> None:
    empty = pd.DataFrame({"name": pd.Series([], dtype=object), "bytes": pd.Series([], dtype="int64"),
                          "always_live": pd.Series([], dtype=bool)})
    assert selection_totals(empty)["bytes"] == 0
