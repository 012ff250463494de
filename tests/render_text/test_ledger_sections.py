"""The ledger in text and markdown: a comparison leads with the ledger moves, the memory ledger
(per parameter, then every row) and what changed the peak; ``show`` lists the ledger and what
is live at the peak. The page draws the same sections (tests/render_html)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from render_text_helpers import ledger_pair

from profcompare.comparison import Comparison, compare
from profcompare.model import Report
from profcompare.render.json_out import JsonRenderer
from profcompare.render.ledger_words import BOLD_TONE_LEGEND, TONE_LEGEND
from profcompare.render.markdown import MarkdownRenderer
from profcompare.render.page.model import drawn_rows
from profcompare.render.sections import comparison_document, report_document
from profcompare.render.sections.ledger import comparison_moves_section
from profcompare.render.text import TextRenderer


@pytest.fixture(scope="module")
def pair() -> tuple[Report, Report]:
    return ledger_pair()


@pytest.fixture(scope="module")
def diff(pair: tuple[Report, Report]) -> Comparison:
    return compare(*pair)


def _section(document, title):  # type: ignore[no-untyped-def]
    return next(s for s in document.sections if s.title == title)


def test_comparison_leads_with_the_ledger_before_the_variables(diff: Comparison) -> None:
    ids = [s.id for s in comparison_document(diff).sections]
    # the verdict, what differs, the ledger, the views over time and what changed the peak, then
    # the summary and the details: the order of every medium
    assert ids[:4] == ["verdict", "config", "moves", "ledger"]
    assert ids.index("liveness") < ids.index("peak") < ids.index("summary") < ids.index("variables")


def test_moves_in_plain_words(diff: Comparison) -> None:
    section = _section(comparison_document(diff), "Where the memory moved")
    # 3,200,000 B = 3.1 MiB always-live; 800,000 B = 781.2 KiB in Streaming Memory and staging
    assert section.lines == (
        "fc1.weight optimizer_state: 3.1 MiB always-live -> 781.2 KiB Streaming Memory",
        "fc1.weight remote_staging: nothing -> 781.2 KiB not-always-live (steps 2-3)",
        "<b>x|y</b> weight: nothing -> 1000 B always-live",
        "(no parameter) other: nothing -> 4 B always-live",
    )
    assert section.notes == ("All 4 (parameter, role) moves, largest first; bytes per replica.",)


def test_moves_cut_say_how_many_there_are(diff: Comparison) -> None:
    section = comparison_moves_section(diff, 2)
    assert len(section.items) == 2
    assert section.notes == ("The 2 largest of 4 (parameter, role) moves, by bytes moved (the sum of |delta| over "
                             "locations); bytes per replica.",)


def test_ledger_by_parameter_table(diff: Comparison) -> None:
    section = _section(comparison_document(diff), "Memory ledger")
    table = section.table
    assert table is not None and table.id == "ledger-parameters"
    assert [c.header for c in table.columns] == ["Parameter", "Always-live", "Not-always-live", "Base tile memory",
                                                 "New tile memory", "Delta tile memory", "Streaming Memory"]
    rows = [[cell.text for cell in row] for row in table.rows]
    # fc1.weight: 6,400,000 B always-live -> 3,200,000 always-live + 800,000 not-always-live = 4,000,000 B of
    # tile memory (-2,400,000 B = -2.3 MiB); its 800,000 B of Streaming Memory is not tile memory
    assert rows == [
        ["fc1.weight", "6.1 MiB -> 3.1 MiB (-3.1 MiB)", "0 B -> 781.2 KiB (+781.2 KiB)",
         "6.1 MiB", "3.8 MiB", "-2.3 MiB", "0 B -> 781.2 KiB (+781.2 KiB)"],
        ["<b>x|y</b>", "0 B -> 1000 B (+1000 B)", "", "0 B", "1000 B", "+1000 B", ""],
        ["(no parameter)", "0 B -> 4 B (+4 B)", "97.7 KiB", "97.7 KiB", "97.7 KiB", "+4 B", ""],
    ]
    # a change is coloured by what it costs in tile memory; Streaming Memory (off chip) never is
    assert [row[5].tone for row in table.rows] == ["good", "bad", "bad"]
    assert table.rows[0][6].tone is None
    assert table.note.endswith("not in the tile totals. All 3 parameters shown.")
    assert section.notes == (TONE_LEGEND,)


def test_comparison_ledger_lists_every_row(diff: Comparison) -> None:
    table = _section(comparison_document(diff), "Memory ledger").tables[1]
    assert table.id == "ledger-rows"
    assert [c.header for c in table.columns] == ["Parameter", "Role", "Location", "Base", "New", "Delta",
                                                 "Delta %", "Status", "Base steps", "New steps"]
    rows = [[cell.text for cell in row] for row in table.rows]
    assert rows == [
        ["fc1.weight", "optimizer_state", "always-live", "3.1 MiB", "0 B", "-3.1 MiB", "-100.0%", "removed", "", ""],
        ["fc1.weight", "optimizer_state", "Streaming Memory", "0 B", "781.2 KiB", "+781.2 KiB", "n/a", "added", "",
         ""],
        ["fc1.weight", "remote_staging", "not-always-live", "0 B", "781.2 KiB", "+781.2 KiB", "n/a", "added", "",
         "2-3"],
        ["<b>x|y</b>", "weight", "always-live", "0 B", "1000 B", "+1000 B", "n/a", "added", "", ""],
        ["(no parameter)", "other", "always-live", "0 B", "4 B", "+4 B", "n/a", "added", "", ""],
        ["(no parameter)", "activation", "not-always-live", "97.7 KiB", "97.7 KiB", "0 B", "0.0%", "unchanged",
         "1-2", "1-2"],
        ["fc1.weight", "weight", "always-live", "3.1 MiB", "3.1 MiB", "0 B", "0.0%", "unchanged", "", ""],
    ]
    # Streaming Memory is off chip: its change is not coloured as a cost
    assert [row[5].tone for row in table.rows[:3]] == ["good", None, "bad"]
    assert table.note == ("Every (parameter, role, location) row, largest |delta| first; steps: the not-always-live "
                          "first-last step. All 7 rows shown.")


def test_ledger_by_parameter_cuts_to_top_with_an_other_row(diff: Comparison) -> None:
    section = _section(comparison_document(diff, top=1), "Memory ledger")
    table, rows = section.tables
    assert [row[0].text for row in table.rows] == ["fc1.weight"]
    assert [row[0].text for row in table.footer] == ["other (2 parameters)"]
    # the other row reads as an aggregate (muted), its change not coloured as one parameter's cost
    assert table.footer[0][5].text == "+1004 B" and drawn_rows(table)[-1][5].tone == "muted"
    assert table.note.endswith("Top 1 of 3 parameters shown; 2 more in the 'other' row (every row: --format csv "
                               "--table ledger, or --format json).")
    assert [[c.text for c in row] for row in rows.footer] == [
        ["other (6 rows)", "", "", "3.1 MiB", "4.7 MiB", "+1.5 MiB", "", "", "", ""]]


def test_peak_composition_explains_the_peak(diff: Comparison) -> None:
    section = _section(comparison_document(diff), "What changed the not-always-live peak")
    assert section.table is not None
    rows = [[cell.text for cell in row] for row in section.table.rows]
    assert rows == [["fc1.weight", "remote_staging", "0 B", "781.2 KiB", "+781.2 KiB"],
                    ["(no parameter)", "activation", "97.7 KiB", "97.7 KiB", "0 B"]]
    assert section.table.rows[0][-1].tone == "bad"
    assert section.text == ("Tile memory live at each report's own peak: base at step 1 (p1), new at step 2 (p2). "
                            "These rows change the peak by +781.2 KiB; the not-always-live peak changed by "
                            "+781.2 KiB.")
    assert section.table.note == "All 2 rows shown."


def test_show_lists_the_ledger_and_what_is_live_at_the_peak(pair: tuple[Report, Report]) -> None:
    document = report_document(pair[1])
    ledger = _section(document, "Memory ledger")
    assert ledger.table is not None
    assert [[c.text for c in row] for row in ledger.table.rows] == [
        ["fc1.weight", "weight", "always-live", "3.1 MiB", "3.1 MiB", "", "1"],
        ["fc1.weight", "optimizer_state", "Streaming Memory", "781.2 KiB", "0 B", "", "1"],
        ["fc1.weight", "remote_staging", "not-always-live", "781.2 KiB", "781.2 KiB", "2-3", "1"],
        ["(no parameter)", "activation", "not-always-live", "97.7 KiB", "97.7 KiB", "1-2", "1"],
        ["<b>x|y</b>", "weight", "always-live", "1000 B", "1000 B", "", "1"],
        ["(no parameter)", "other", "always-live", "4 B", "4 B", "", "1"],
    ]
    assert ledger.text.endswith(" Unattributed (no parameter, role other): 4 B in 1 row.")
    assert ledger.table.note == "All 6 rows shown."
    live = _section(document, "Live at the not-always-live peak")
    assert live.table is not None
    assert [[c.text for c in row] for row in live.table.rows] == [
        ["fc1/w/adam_m/staging", "fc1.weight", "remote_staging", "781.2 KiB", "2-3"],
        ["fc1/out", "(no parameter)", "activation", "97.7 KiB", "1-2"],
    ]
    assert live.text == "At step 2 (p2): 2 variables, 878.9 KiB of the peak's 878.9 KiB."
    assert live.table.note == "All 2 variables shown."


def test_markdown_escapes_parameter_names(diff: Comparison, pair: tuple[Report, Report]) -> None:
    for text in (MarkdownRenderer().render(diff), MarkdownRenderer().render(pair[1])):
        assert "<b>" not in text
        assert "&lt;b&gt;x\\|y&lt;/b&gt;" in text
    assert "- fc1.weight optimizer\\_state: 3.1 MiB always-live -&gt; 781.2 KiB Streaming Memory" in \
        MarkdownRenderer().render(diff)
    # markdown has no colour: the ledger's legend says a cost is in bold
    assert f"_{BOLD_TONE_LEGEND}_" in MarkdownRenderer().render(diff)


def test_text_prints_the_moves_as_a_list(diff: Comparison) -> None:
    text = TextRenderer().render(diff)
    assert text.index("Where the memory moved") < text.index("\nSummary\n")
    assert "\n- fc1.weight remote_staging: nothing -> 781.2 KiB not-always-live (steps 2-3)\n" in text


def test_control_characters_in_parameters_never_reach_the_terminal() -> None:
    base, new = ledger_pair()
    variables = new.variables.copy()
    variables.loc[variables["parameter"] == "<b>x|y</b>", "parameter"] = "evil\x1b[31m"
    diff = compare(base, dataclasses.replace(new, variables=variables))
    text = TextRenderer().render(diff)
    assert "\x1b" not in text


# ------------------------------------------------------------------ json


def test_comparison_json_carries_the_ledger(diff: Comparison) -> None:
    data = json.loads(JsonRenderer().render(diff))
    assert data["schema_version"] == 9
    assert data["ledger_moves"][0] == {
        "parameter": "fc1.weight", "role": "optimizer_state",
        "base_always_live": 3_200_000, "base_not_always_live": 0, "base_streaming_memory": 0,
        "new_always_live": 0, "new_not_always_live": 0, "new_streaming_memory": 800_000,
        "base_steps": "", "new_steps": "", "moved_bytes": 4_000_000,
    }
    assert [(m["parameter"], m["role"], m["moved_bytes"]) for m in data["ledger_moves"]] == [
        ("fc1.weight", "optimizer_state", 4_000_000), ("fc1.weight", "remote_staging", 800_000),
        ("<b>x|y</b>", "weight", 1_000), ("", "other", 4)]
    assert data["ledger_by_parameter"][0]["parameter"] == "fc1.weight"
    # tile memory only (always-live 6.4 MB -> 3.2 MB + 0.8 MB not-always-live); Streaming Memory apart
    assert data["ledger_by_parameter"][0]["delta_tile_memory"] == 3_200_000 + 800_000 - 6_400_000
    assert data["ledger_by_parameter"][0]["delta_streaming_memory"] == 800_000
    assert data["peak_composition"] == [
        {"parameter": "fc1.weight", "role": "remote_staging", "base_bytes": 0, "new_bytes": 800_000,
         "delta_bytes": 800_000},
        {"parameter": "", "role": "activation", "base_bytes": 100_000, "new_bytes": 100_000, "delta_bytes": 0}]
    staging = next(r for r in data["ledger"] if r["role"] == "remote_staging")
    assert staging["status"] == "added" and staging["new_first_step"] == 2 and staging["new_last_step"] == 3
    assert staging["base_first_step"] is None
    assert len(data["ledger"]) == len(diff.ledger) and list(data["ledger"][0]) == list(diff.ledger.columns)


def test_report_json_carries_the_ledger_and_the_peak(pair: tuple[Report, Report]) -> None:
    data = json.loads(JsonRenderer().render(pair[1]))
    assert data["schema_version"] == 9
    assert data["peak_step"] == 2 and data["unattributed_bytes"] == 4
    assert list(data["ledger"][0]) == ["parameter", "role", "location", "bytes", "bytes_at_peak", "first_step",
                                       "last_step", "rows"]
    assert sum(r["bytes"] for r in data["ledger"] if r["location"] == "streaming_memory") == 800_000
    assert [(r["name"], r["bytes"]) for r in data["live_at_peak"]] == [("fc1/w/adam_m/staging", 800_000),
                                                                      ("fc1/out", 100_000)]
