"""Terminal text fits the reader's screen: no line wider than the width, every figure whole,
names shortened in the middle (and said so), nothing cut when there is no width (a file)."""

from __future__ import annotations

import re

import pytest
from render_text_helpers import samples

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison, compare
from profcompare.model import Report
from profcompare.render.sections import Cell, Column, Table, VariablesView, build_document
from profcompare.render.table_fit import atoms, fit_table, shorten_name
from profcompare.render.text import TextRenderer, render_table

LONG = "fc1.weight_sharded_slice_all_gathered"
LONGER = "encoder/" * 6 + "layer_norm/weight_sharded_slice_all_gathered"


# ------------------------------------------------------------------ the pieces


def test_a_long_name_keeps_its_start_and_end_around_an_ellipsis() -> None:
    # 26 columns: 12 + ellipsis + 13 would cut "_all_gathered" after its "_": the end part starts
    # after that boundary and the start part gets the character back
    assert shorten_name(LONG, 26) == "fc1.weight_sh\u2026all_gathered"
    assert shorten_name(LONG, 20) == "fc1.weight_\u2026gathered"
    assert shorten_name(LONG, len(LONG)) == LONG
    assert all(len(shorten_name(LONG, w)) <= w for w in range(1, 40))


def test_a_figure_keeps_its_unit_and_an_arrow_its_figure() -> None:
    assert atoms("8.5 MiB -> 5.4 MiB (-3.1 MiB)") == ["8.5 MiB ->", "5.4 MiB", "(-3.1 MiB)"]
    assert atoms("+12.0% of 512 B") == ["+12.0%", "of", "512 B"]


def test_columns_go_in_the_stated_order_and_the_first_column_stays() -> None:
    columns = (Column("Metric"), Column("Base", True), Column("New", True), Column("Delta", True),
               Column("Delta %", True), Column("Status"), Column("Confidence"))
    row = (Cell("Peak liveness"), Cell("22.0 MiB"), Cell("19.9 MiB"), Cell("-2.0 MiB"), Cell("-9.3%"),
           Cell("shrank"), Cell("modelled"))
    table = Table.of(columns, (row,))
    # natural width: 13+8+8+8+7+6+10 = 60, plus 6 gaps of 3 = 78
    assert fit_table(table, 78).dropped == ()
    # squeezed: gaps of 2 (12), "Confidence" reads "Conf." (the column is then 8, its cells'
    # width) and "Delta %" wraps to "Delta" over "%" (5): 13+8+8+8+5+6+8 = 56, 68 in all
    fitted = fit_table(table, 68)
    assert fitted.dropped == () and fitted.widths == (13, 8, 8, 8, 5, 6, 8)
    assert fitted.headers[4] == ("Delta", "%") and fitted.headers[6] == ("Conf.",)
    # one less: Confidence goes first (68 - 10 = 58), then Delta % (58 - 7 = 51), then Status
    assert fit_table(table, 67).dropped == ("Confidence",)
    assert fit_table(table, 57).dropped == ("Confidence", "Delta %")
    assert fit_table(table, 50).dropped == ("Confidence", "Delta %", "Status")
    assert all(fit_table(table, w).width <= w for w in (78, 68, 67, 57, 51, 50))


# ------------------------------------------------------------------ whole documents

FIGURE = re.compile(r"[-+]?\(?[-+]?\d[\d,]*(?:\.\d+)?(?: (?:B|KiB|MiB|GiB|ms))?%?\)?")


def _report_with_long_names() -> Report:
    return samples.build_report("offchip-sharded", extra_variables=[(LONG, 60_000_000), (LONGER, 55_000_000)])


def _objects() -> dict[str, object]:
    onchip = samples.build_report("onchip")
    offchip = _report_with_long_names()
    view = analysis.variables_view(offchip, top=12, sort="bytes")
    return {
        "show": offchip,
        "compare": compare(onchip, offchip),
        "variables": VariablesView(offchip, view),
    }


OBJECTS = _objects()


def _left_out(text: str) -> set[str]:
    """Columns the notes say were left out (the notes may be wrapped over lines)."""
    flat = " ".join(text.split())
    out: set[str] = set()
    for match in re.finditer(r"columns left out: ([^;.]+)[;.]", flat):
        out.update(name.strip() for name in match.group(1).split(","))
    return out


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("kind", sorted(OBJECTS))
def test_no_line_is_wider_than_the_screen_and_every_figure_is_whole(kind: str, width: int) -> None:
    obj = OBJECTS[kind]
    text = TextRenderer(width=width).render(obj, top=12)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    left_out = _left_out(text)
    document = build_document(obj, top=12)
    checked = 0
    for section in document.sections:
        if section.table is None:
            continue
        for index, column in enumerate(section.table.columns):
            if not column.numeric or column.header in left_out:
                continue
            for row in section.table.rows:
                for piece in atoms(row[index].text):
                    # the figure stands on one line, not run into another number
                    pattern = r"(?<![\w.,])" + re.escape(piece) + r"(?![\w.,%])"
                    assert any(re.search(pattern, line) for line in lines), (piece, section.title)
                    checked += 1
    assert checked >= 12  # at least a column of figures
    if width == 200:
        assert LONG in text and LONGER in text  # a wide screen shows whole names


def test_names_shortened_at_80_columns_are_findable_and_said_to_be_shortened() -> None:
    text = TextRenderer(width=80).render(OBJECTS["variables"], top=12)
    assert LONG in text or shorten_name(LONG, 24) in text or re.search(r"fc1\.weight_\S*\u2026\S*gathered", text)
    shortened = re.findall(r"(\S+)\u2026(\S+)", text)
    assert any(LONGER.startswith(head) and LONGER.endswith(tail) for head, tail in shortened)
    assert "long names shortened in the middle" in " ".join(text.split())
    # no piece of a name is left on a line of its own (the old folding did that)
    assert not any(line.strip() in ("ered", "gathered", "weight") for line in text.splitlines())


def test_pinned_summary_figures_read_back_at_80_columns(comparison: Comparison) -> None:
    text = TextRenderer(width=80).render(comparison, top=6)
    rows = {line.split("  ")[0]: line for line in text.splitlines() if re.match(r"^(Device cycles per step|Always-live memory)", line)}
    # cycles: 905,300 - 840,250 = 65,050 more in the new report, +7.7% of the base
    assert FIGURE.findall(rows["Device cycles per step"])[:3] == ["840,250", "905,300", "+65,050"]
    assert FIGURE.findall(rows["Always-live memory"])[:3] == ["21.7 MiB", "17.5 MiB", "-4.2 MiB"]


def test_without_a_width_nothing_is_shortened_or_left_out() -> None:
    for obj in OBJECTS.values():
        text = TextRenderer().render(obj, top=12)
        assert "\u2026" not in text and "To fit" not in text
    wide = TextRenderer().render(OBJECTS["compare"], top=12)
    assert "Confidence" in wide and "Always-live" in wide and LONG in wide
    assert max(len(line) for line in wide.splitlines()) > 200  # tables at their natural width


def test_a_lone_table_is_fitted_and_its_cells_keep_their_colour() -> None:
    table = Table.of((Column("run"), Column("status"), Column("variants")),
                     ((Cell("r-" + "x" * 70), Cell("ok", tone="good"), Cell("onchip, offchip-sharded")),))
    text = render_table(table, width=40)
    assert max(len(line) for line in text.splitlines()) <= 40
    assert "onchip," in text and "offchip-sharded" in text
    coloured = render_table(table, width=40, color=True)
    assert "\x1b[32mok" in coloured
