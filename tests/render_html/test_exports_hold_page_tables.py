"""The JSON export's ``sections`` and ``--format csv --table ID`` hold every table the page shows,
figure for figure."""

from __future__ import annotations

import csv
import io
import json

import pytest

from profcompare import compare
from profcompare.errors import ProfcompareError
from profcompare.model import Report
from profcompare.render.base import get_renderer
from profcompare.render.csv_out import page_table_csv
from profcompare.render.html import build_page
from profcompare.render.page.export import table_data


def _page_tables(obj: Report | object) -> dict[str, dict[str, object]]:
    page = build_page(obj)  # type: ignore[arg-type]
    tables = [t for s in page.sections for t in s.tables] + [page.variables]
    return {t.id: table_data(t) for t in tables if t.id}


@pytest.mark.parametrize("kind", ["report", "comparison"])
def test_the_json_sections_hold_every_page_table_with_its_figures(onchip: Report, offchip: Report, kind: str) -> None:
    obj = onchip if kind == "report" else compare(onchip, offchip)
    data = json.loads(get_renderer("json").render(obj))
    assert data["schema_version"] == 9
    exported = {t["id"]: t for s in data["sections"] for t in s["tables"] if t["id"]}
    page = _page_tables(obj)
    assert set(page) <= set(exported)
    for table_id, table in page.items():
        # the page moves a section's notes to its table; rows and footers are the same figures
        assert (exported[table_id]["rows"], exported[table_id]["footer"]) == (table["rows"], table["footer"]), table_id
        assert exported[table_id]["columns"] == table["columns"]
    titles = [s["title"] for s in data["sections"]]
    assert titles == [s.title for s in build_page(obj).sections]  # type: ignore[arg-type]


def test_a_page_table_as_csv_is_its_rows_then_its_footer(onchip: Report, offchip: Report) -> None:
    cmp = compare(onchip, offchip)
    rows = list(csv.reader(io.StringIO(page_table_csv(cmp, "categories-table"))))
    assert rows[0] == ["Category", "Group", "Base", "New", "Delta", "Delta %", "Status"]
    body = {r[0]: r for r in rows[1:]}
    # exact bytes, as the comparison's categories hold them
    for r in cmp.categories.itertuples(index=False):
        if r.base_bytes or r.new_bytes:
            assert (int(body[r.category][2]), int(body[r.category][3])) == (int(r.base_bytes), int(r.new_bytes))
    assert rows[-1][:5] == ["total", "", str(int(cmp.categories["base_bytes"].sum())),
                            str(int(cmp.categories["new_bytes"].sum())),
                            str(int(cmp.categories["new_bytes"].sum() - cmp.categories["base_bytes"].sum()))]


def test_an_unknown_page_table_is_refused_naming_the_tables(onchip: Report) -> None:
    with pytest.raises(ProfcompareError, match=r"no table 'nope' on this page; its tables: summary-table, .*code-table"):
        page_table_csv(onchip, "nope")
