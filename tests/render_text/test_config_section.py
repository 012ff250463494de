"""The "What differs" section: what a user reads about the two sides' configuration."""

from __future__ import annotations

from render_text_helpers import samples

from profcompare.comparison import Comparison, compare
from profcompare.model import Report, Target
from profcompare.render.sections.config import comparison_config_section
from workloads.mnist import layout

CONFIG = {"replicas": 4, "grad_accum": 8, "micro_batch": 8, "sharded_threshold": 512}


def _texts(section_table) -> list[list[str]]:
    return [[cell.text for cell in row] for row in section_table.rows]


def test_the_sample_pair_differs_in_its_variant_only(comparison: Comparison) -> None:
    section = comparison_config_section(comparison)
    assert (section.title, section.id, section.notes) == ("What differs", "config", ())
    table = section.table
    assert table is not None and table.id == "config-table"
    assert [c.header for c in table.columns] == ["Setting", "Base", "New", "Kind", "Note"]
    assert _texts(table) == [["variant", "onchip", "offchip-sharded", "intended",
                              "The variant names the layout under study."]]
    assert table.note == ("Intended: the layout knobs the variants choose. Unexpected: everything else, which "
                          "should be the same on both sides for the figures to show the layout alone.")


def _with(report: Report, **changes: object) -> Report:
    return report.with_meta(report.meta.replace(**changes))


def test_layout_rows_first_then_unexpected_ones_with_their_warnings(onchip: Report, offchip: Report) -> None:
    base = _with(onchip, config=CONFIG, layout=layout("onchip", CONFIG))
    new_target = Target("Mk2", 4, 1472, 638_976, 1.85e9, num_replicas=4)
    new = _with(offchip, config={**CONFIG, "micro_batch": 16, "seed": 1}, layout=layout("offchip-sharded", CONFIG),
                target=new_target)
    section = comparison_config_section(compare(base, new))
    table = section.table
    assert table is not None
    assert _texts(table) == [
        ["variant", "onchip", "offchip-sharded", "intended", "The variant names the layout under study."],
        ["optimizer state", "on chip", "Streaming Memory", "intended",
         "Where the optimizer state lives: tile memory (on chip) or Streaming Memory; moves always-live and "
         "Streaming Memory bytes."],
        ["replicated tensor sharding", "off", "on", "intended",
         "Whether the optimizer state and its update are sharded over the replicas (RTS): each replica holds a "
         "slice."],
        ["RTS threshold", "not set", "512 elements", "intended",
         "Tensors with at least this many elements are sharded over the replicas."],
        ["clock", "1.33 GHz", "1.85 GHz", "unexpected (moves figures)",
         "The clock converts cycles to seconds: time figures move, memory does not."],
        ["micro_batch", "8", "16", "unexpected (moves figures)",
         "The micro-batch: activation bytes and compute time per step move."],
        ["seed", "not set", "1", "unexpected",
         "The seed moves the initial weights, the synthetic data and so the losses; memory and time figures do "
         "not depend on it."],
    ]
    assert [row[3].tone for row in table.rows] == [None, None, None, None, "bad", "bad", None]
    assert [dict(row.data) for row in table.rows][4] == {"name": "clock", "kind": "unexpected"}
    assert section.notes == (
        "Clock differs (1.33 GHz in base, 1.85 GHz in new); the clock converts cycles to seconds: time figures "
        "move, memory does not.",
        "micro_batch differs (8 in base, 16 in new); the micro-batch: activation bytes and compute time per step "
        "move.",
    )


def test_nothing_differs() -> None:
    report = samples.build_report("onchip")
    section = comparison_config_section(compare(report, report))
    table = section.table
    assert table is not None and table.rows == () and table.note == ""
    assert table.empty == "No setting differs between the two reports."
    assert section.notes == ()
