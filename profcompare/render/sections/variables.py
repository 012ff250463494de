"""The Variables section of a report and of a comparison, drawn alike by the terminal, the
Markdown and the HTML page: one row per variable (the largest, or the largest changes), the
"other" row summing the rest and the notes saying why that sum is not memory in use."""

from __future__ import annotations

from typing import Any

import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.analysis.views import TopN
from profcompare.comparison import STATUSES, Comparison
from profcompare.model import Report
from profcompare.render.format import format_bytes, format_count, is_missing
from profcompare.render.html_model import bytes_cell, diff_cells, sort_key, text_cell
from profcompare.render.labels import VARIABLES_SUM_NOTE, live_label
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.page.notes import cut_note
from profcompare.render.sections.document import _live_steps, _missing_sides, _str, limit
from profcompare.render.sections.listing import (
    DIFF_COLUMNS,
    blank,
    empty_word,
    other_diff_row,
    other_label,
    side_by_side,
    yes_no,
)

#: the title of the section in every medium, and its anchor on a page
VARIABLES_TITLE = "Variables"
VARIABLES_ID = "variables"
#: the id of its table (the page's filter finds the table by it)
VARIABLES_TABLE_ID = "variables-table"

#: the order of a comparison's variables, said above its table
MATCHED_FIRST_TEXT = ("Variables found in both reports that grew or shrank first, then those in one report only "
                      "(added, removed), then the unchanged; each group by |Delta|.")

_REPORT_COLUMNS = (
    Column("Variable", key="name"),
    Column("Kind", key="kind"),
    Column("Bytes", True, key="bytes"),
    Column(live_label(True, title=True), key="always_live"),
    Column("Dtype", key="dtype"),
    Column("Shape", key="shape"),
    Column("Tiles", True, key="tiles"),
    Column("Live steps", key="live_steps"),
)


def _steps_key(first: Any, last: Any) -> str | None:
    """The sort key of a "Live steps" cell: by first step, then last (zero-padded, so a page
    sorting the column as text puts step 9 before step 10); None (by its text) for none."""
    if is_missing(first) or is_missing(last):
        return None
    return f"{int(first):012d}-{int(last):012d}"


def report_variables_section(report: Report, top: int | None = None, *, view: TopN | None = None) -> Section:
    """Return the Variables section of one report: its ``top`` largest variables (None: all), or
    the rows of ``view`` when the caller has cut them already (the ``variables`` command's
    selection, the page that also writes them to its data block), with an "other" footer row
    summing the rest and notes saying what was cut and why that sum can exceed memory in use."""
    if view is None:
        view = analysis.variables_view(report, top=limit(top))
    rows = tuple(
        Row(
            (
                text_cell(r.name),
                text_cell(r.kind),
                bytes_cell(r.bytes),
                Cell("yes" if bool(r.always_live) else "no"),
                text_cell(r.dtype),
                text_cell(r.shape),
                Cell(format_count(r.tiles), sort_key(r.tiles)),
                Cell(_live_steps(r.first_step, r.last_step, bool(r.always_live)), _steps_key(r.first_step, r.last_step)),
            ),
            {"name": str(r.name), "filter": live_label(bool(r.always_live))},
        )
        for r in view.shown_rows.itertuples(index=False)
    )
    other = view.other
    footer: tuple[Row, ...] = ()
    notes: tuple[str, ...] = (cut_note(view, "variables"),) if view.total else ()
    if other is not None:
        footer = (Row((Cell(other_label(view, "variables")), Cell(""), bytes_cell(other["bytes"]),
                       *(Cell("") for _ in range(len(_REPORT_COLUMNS) - 3)))),)
        notes = (cut_note(view, "variables", other["bytes"]), VARIABLES_SUM_NOTE)
    table = Table(_REPORT_COLUMNS, rows, id=VARIABLES_TABLE_ID, footer=footer,
                  empty=empty_word(report.meta, "variables", "No variables in this report."))
    return Section(VARIABLES_TITLE, (table,), notes, id=VARIABLES_ID, notes_on_table=True)


def comparison_variables_view(cmp: Comparison, top: int | None) -> TopN:
    """Return the variable diff cut to the ``top`` largest changes (by |delta_bytes|, then name).

    Rows are :attr:`Comparison.variables` rows; the "other" row sums base_bytes, new_bytes and
    delta_bytes of the cut rows. ``top`` None or 0 keeps all rows.
    """
    return cmp.top("variables", limit(top))


#: the order of the variables table: changes of matched pairs (0), then variables in one report
#: only (1), then the unchanged (2); within each, the largest |delta_bytes| first
_VARIABLE_GROUPS = {"grew": 0, "shrank": 0, "added": 1, "removed": 1}


def _ranked_variables(cmp: Comparison) -> pd.DataFrame:
    """:attr:`Comparison.variables` in the order of :func:`matched_changes_first` (index 0..n-1)."""
    frame = cmp.variables
    order = pd.DataFrame({
        "group": frame["status"].astype(str).map(_VARIABLE_GROUPS).fillna(2).to_numpy(),
        "magnitude": -frame["delta_bytes"].abs().to_numpy(dtype="float64"),
        "name": frame["name"].astype(str).to_numpy(),
    }).sort_values(["group", "magnitude", "name"], kind="mergesort").index.to_numpy()
    return frame.iloc[order].reset_index(drop=True)


def matched_changes_first(cmp: Comparison, top: int | None) -> TopN:
    """Return the variable diff ordered for reading and cut to ``top`` rows: the variables found
    in both reports that grew or shrank first, then those in one report only (added, removed),
    then the unchanged; within each group by |delta_bytes| descending, then name.

    Rows are :attr:`Comparison.variables` rows; the "other" row sums base_bytes, new_bytes and
    delta_bytes of the cut rows (its delta_pct recomputed from the sums). ``top`` None or 0
    keeps all rows.
    """
    ranked = _ranked_variables(cmp)
    ranked.insert(len(ranked.columns), "_rank", range(len(ranked)))
    view = analysis.top_n(ranked, limit(top), "_rank", label_column="name", ascending=True,
                          sum_columns=("base_bytes", "new_bytes", "delta_bytes"))
    rows = view.rows.drop(columns="_rank")
    if view.cut:
        last = rows.index[-1]
        base_sum, delta_sum = float(rows.at[last, "base_bytes"]), float(rows.at[last, "delta_bytes"])
        rows.at[last, "delta_pct"] = 100.0 * delta_sum / base_sum if base_sum else float("nan")
    return TopN(rows=rows, shown=view.shown, total=view.total, cut=view.cut)


def _match_text(r: Any) -> str:
    match = _str(r["match"])
    if match == "normalised" and _str(r["base_name"]) and _str(r["new_name"]) and r["base_name"] != r["new_name"]:
        return f"normalised (base: {r['base_name']})"
    return match


def _call_instances(names: pd.Series) -> int:
    """How many of ``names`` are call instances (``name@3``). Names without an ``@`` anywhere
    are counted at once, so a page of a million variables does no Python step per name."""
    if not len(names) or "@" not in "".join(names.to_numpy(dtype=object)):
        return 0
    return int((analysis.call_instance_stems(names) != names).sum())


def _other_note(cmp: Comparison, view: TopN) -> str:
    """Why the "other" row's bytes can exceed the memory in use beside it: it sums the sizes of
    the variables left out, and those overlap in memory (not-always-live variables live at
    different steps share addresses; a tensor of a graph called from several sites is listed
    once per call)."""
    rest = _ranked_variables(cmp).iloc[view.shown:]
    not_always = int(((rest["base_always_live"] == False) | (rest["new_always_live"] == False))  # noqa: E712
                     .fillna(False).to_numpy(dtype=bool).sum())
    instances = _call_instances(rest["name"].astype(str))
    reasons = []
    if not_always:
        reasons.append(f"{not_always:,} are not-always-live, each live over its own steps (variables live at "
                       "different steps share addresses)")
    if instances:
        reasons.append(f"{instances:,} are call instances (name@1, name@2, ...) of a tensor listed once per call")
    peak = cmp.summary.loc["peak_liveness_bytes"]
    text = f"The 'other' row sums the sizes of the {view.cut:,} variables not shown"
    if reasons:
        text += ", which is not memory in use: " + " and ".join(reasons)
    return (text + f". Memory in use is peak liveness, {format_bytes(peak['base'])} -> {format_bytes(peak['new'])} "
            "(see the Summary).")


def _status_counts(statuses: pd.Series) -> str:
    counts = statuses.astype(str).value_counts()
    return ", ".join(f"{int(counts.get(s, 0)):,} {s}" for s in STATUSES)


def comparison_variables_section(cmp: Comparison, top: int | None = None, *, view: TopN | None = None) -> Section:
    """Return the Variables section of a comparison: the variables of :func:`matched_changes_first`
    cut to ``top`` rows (None: all), or the rows of ``view`` when the caller has cut them already
    (the page, which also writes them to its data block); base, new and delta bytes, status,
    always-live and shape on each side (``base → new`` where they differ) and, when any pair was
    matched by a normalised name, the match. An "other" footer row sums the rest; the notes say
    what was cut, why that sum is not memory in use and how many variables have each status."""
    frame = cmp.variables
    if view is None:
        view = matched_changes_first(cmp, top)
    show_match = bool((frame["match"].astype(str) == "normalised").any()) if len(frame) else False
    columns = (
        Column("Variable", key="name"),
        Column("Kind", key="kind"),
        *DIFF_COLUMNS,
        Column(live_label(True, title=True), key="always_live"),
        Column("Shape", key="shape"),
        *((Column("Match", key="match"),) if show_match else ()),
    )
    rows = []
    for rec in view.shown_rows.to_dict("records"):
        status = str(rec["status"])
        name = str(rec["name"])
        title = f"base: {rec['base_name']}; new: {rec['new_name']}" if rec["match"] == "normalised" else None
        rows.append(Row(
            (
                Cell(name, name, None, title),
                text_cell(rec["kind"]),
                *diff_cells(rec),
                Cell(side_by_side(yes_no(rec["base_always_live"]), yes_no(rec["new_always_live"]), status)),
                Cell(side_by_side(blank(rec["base_shape"]), blank(rec["new_shape"]), status)),
                *((Cell(_match_text(rec)),) if show_match else ()),
            ),
            {"name": name, "filter": status},
        ))
    footer = other_diff_row(view, "variables", leading=1, trailing=len(columns) - 7)
    table = Table(columns, tuple(rows), id=VARIABLES_TABLE_ID, footer=footer, empty="no variables in either report")
    notes: list[str] = []
    if len(frame):
        notes.append(cut_note(view, "variables"))
        if view.has_other:
            notes.append(_other_note(cmp, view))
        notes.append(f"Status over all variables: {_status_counts(frame['status'])}.")
    notes += _missing_sides(cmp, "variables")
    return Section(VARIABLES_TITLE, (table,), tuple(notes), id=VARIABLES_ID, text=MATCHED_FIRST_TEXT if len(frame) else "",
                   notes_on_table=True)


__all__ = ["MATCHED_FIRST_TEXT", "VARIABLES_TABLE_ID", "VARIABLES_TITLE", "comparison_variables_section",
           "comparison_variables_view", "matched_changes_first", "report_variables_section"]
