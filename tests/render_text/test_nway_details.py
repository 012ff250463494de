"""The run's index shows, per variant, the operations' total code and the fullest tile, where
every variant records them (``NWayTable.details``)."""

from __future__ import annotations

import pandas as pd

from profcompare.analysis.nway import nway_table
from profcompare.model import UNATTRIBUTED_OPERATION, Report, ReportMeta, Target, make_frame, operations_from_rows
from profcompare.render.nway import detail_rows, render_nway_html


def _report(source: str, used: list[int], code: list[int]) -> Report:
    meta = ReportMeta(source=source, format="store", producer="test", simulated=False,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=len(used), bytes_per_tile=4096,
                                    clock_hz=1.33e9, num_replicas=1, ipus_per_replica=1))
    tiles = make_frame("tiles", {
        "tile": list(range(len(used))), "ipu": [0] * len(used), "bytes_including_gaps": used,
        "bytes_excluding_gaps": used, "always_live_bytes": used, "not_always_live_peak_bytes": [0] * len(used),
    })
    ops = operations_from_rows([(f"op{i}", f"op{i}", "MatMul", "", 0, c, 0, 0, None, None, None, "")
                                for i, c in enumerate(code)])
    return Report.build(meta, tiles=tiles, operations=ops)


BASE = _report("base", [1000, 3000, 2000], [1024, 2048])
# code no op claims is not an op: it counts in neither figure
BASE = Report.build(BASE.meta, tiles=BASE.tiles, operations=operations_from_rows(
    [(str(r.name), str(r.debug_name), str(r.type), "", 0, int(r.code_bytes), 0, 0, None, None, None, "")
     for r in BASE.operations.itertuples()] + [(UNATTRIBUTED_OPERATION, "", "", "", None, 5000, 0, 0, None, None, None, "")]))
NEW = _report("new", [2500, 1500, 2600], [512, 512, 1024])


def test_details_side_by_side_where_every_variant_records_them() -> None:
    table = nway_table([("base", BASE), ("new", NEW)])
    expected = pd.DataFrame({"base": [3072.0, 2.0, 1.0, 3000.0], "new": [2048.0, 3.0, 2.0, 2600.0]},
                            index=["operations_code_bytes", "operations", "fullest_tile", "fullest_tile_bytes"])
    pd.testing.assert_frame_equal(table.details, expected)
    assert table.to_dict()["details"]["fullest_tile_bytes"] == {"base": 3000, "new": 2600}
    rows = detail_rows(table)
    assert rows == (("Operations' code", ("3.0 KiB (2 ops)", "2.0 KiB (3 ops)")),
                    ("Fullest tile (incl. gaps)", ("2.9 KiB, tile 1", "2.5 KiB, tile 2")))
    page = render_nway_html(table, title="t", extra_rows=rows)
    assert ('<tr class="extra"><td>Fullest tile (incl. gaps)</td>\n<td class="base">2.9 KiB, tile 1</td>\n'
            '<td>2.5 KiB, tile 2</td>') in page
    assert "<td>Operations&#39; code</td>" in page


def test_no_detail_row_when_a_variant_lacks_it() -> None:
    without_ops = Report.build(NEW.meta, tiles=NEW.tiles)
    table = nway_table([("base", BASE), ("new", without_ops), ("failed", None)])
    assert table.details.empty and detail_rows(table) == ()
    table = nway_table([("base", BASE), ("new", without_ops)])
    assert list(table.details.index) == ["fullest_tile", "fullest_tile_bytes"]
    assert [title for title, _ in detail_rows(table)] == ["Fullest tile (incl. gaps)"]


def test_the_index_ledger_keeps_the_rows_that_differ_most_and_sums_the_rest() -> None:
    import dataclasses

    from profcompare.render.nway import ledger_rows

    index = pd.MultiIndex.from_tuples([("p0", "weight", "always_live"), ("p1", "weight", "always_live"),
                                       ("p2", "gradient", "not_always_live"), ("p3", "weight", "always_live"),
                                       ("p4", "optimizer_state", "streaming_memory")],
                                      names=["parameter", "role", "location"])
    ledger = pd.DataFrame({"base": [100.0, 100.0, 50.0, 1000.0, 10.0], "new": [100.0, 300.0, 0.0, 1000.0, 510.0]},
                          index=index)
    table = dataclasses.replace(nway_table([("base", BASE), ("new", NEW)]), ledger=ledger)
    rows = ledger_rows(table, top=2)
    # p4 (+500 B) and p1 (+200 B) differ most; they stay in the ledger's order, the rest are summed
    assert [r.parameter for r in rows] == ["p1", "p4", "other (3 rows)"]
    assert [(c.text, c.delta) for c in rows[-1].cells] == [("1.1 KiB", ""), ("1.1 KiB", "-50 B")]
    assert [(c.text, c.delta) for c in rows[1].cells] == [("10 B", ""), ("510 B", "+500 B")]
    assert len(ledger_rows(table, top=4)) == 5  # one row over the cut: nothing to sum
    page = render_nway_html(table, title="run")
    assert "other (3 rows)" not in page and "rows that differ most" not in page  # 5 rows: all shown
    assert page.count("<tr>", page.index('id="ledger-table"')) == 1 + 5
