"""The first screen of ``run`` and ``compare``: the headline (one sentence from the comparison's
figures, for every case of memory, time and fit), the screen that fits 50 lines and ends with
the headline, the section names of ``--section`` and the variables table's order and note."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from profcompare.comparison import Comparison
from profcompare.comparison.verdict import (
    MEMORY_METRICS,
    TIME_METRICS,
    Change,
    ComparisonVerdict,
    Fit,
    NWayVerdict,
    VariantVerdict,
    comparison_verdict,
)
from profcompare.render.screen import SCREEN_LINES, comparison_screen, nway_screen
from profcompare.render.sections import SECTION_NAMES, comparison_document, matched_changes_first
from profcompare.render.sections.brief import NEXT_TITLE, comparison_brief
from profcompare.render.verdict_words import headline, nway_headline

NAN = math.nan


def _change(metric: str, base: float, new: float, status: str | None = None) -> Change:
    delta = new - base
    pct = 100.0 * delta / base if base else NAN
    if status is None:
        status = "n/a" if math.isnan(delta) else "grew" if delta > 0 else "shrank" if delta < 0 else "unchanged"
    return Change(metric, base, new, delta, pct, status, "modelled")


def _fit(label: str, *, oom: bool = False, over: float = 0.0) -> Fit:
    return Fit(label, oom, over, 600_000.0 if over else 200_000.0, 638_976)


def _verdict(peak: tuple[float, float], seconds: tuple[float, float], *, base_fits: bool = True,
             new_fits: bool = True, peak_status: str | None = None, seconds_status: str | None = None) -> ComparisonVerdict:
    return ComparisonVerdict(
        base_label="onchip", new_label="offchip-sharded", moves=(),
        memory=(_change("peak_liveness_bytes", *peak, peak_status),),
        time=(_change("seconds_per_step", *seconds, seconds_status),),
        base_fit=_fit("onchip", oom=not base_fits), new_fit=_fit("offchip-sharded", over=0.0 if new_fits else 3.0),
        clock_hz=(1.33e9, 1.33e9),
    )


MIB = 1024.0 * 1024.0


# ------------------------------------------------------------------ the headline


def test_the_headline_of_the_samples_is_written_from_their_figures(comparison: Comparison) -> None:
    # peak liveness 23,024,748 -> 20,877,420 B = -9.3%; time 0.632 -> 0.681 ms = 905,300 / 840,250 = 1.08x
    assert headline(comparison_verdict(comparison)) == "offchip-sharded vs onchip: 9.3% less peak liveness, 1.08x slower; both fit"


@pytest.mark.parametrize(("peak", "seconds", "words"), [
    # the main job: peak liveness 56.8 -> 55.7 MiB = -1.94%; 1.649 -> 3.780 ms = 2.29x
    ((56.8 * MIB, 55.7 * MIB), (1.649e-3, 3.780e-3), "1.9% less peak liveness, 2.3x slower"),
    ((55.0 * MIB, 55.0 * MIB), (1.0e-3, 1.0e-3), "same peak liveness, same speed"),
    # smaller and faster: 100 -> 68 MiB = -32.0%; 2.0 -> 1.0 ms = 2.0x, 1.0 -> 0.87 ms = 1.15x
    ((100.0 * MIB, 68.0 * MIB), (2.0e-3, 1.0e-3), "32.0% less peak liveness, 2.0x faster"),
    ((100.0 * MIB, 112.0 * MIB), (1.0e-3, 0.87e-3), "12.0% more peak liveness, 1.15x faster"),
    # +0.5%: within the 1% a verdict calls "barely moved"
    ((100.0 * MIB, 100.5 * MIB), (1.0e-3, 1.003e-3), "same peak liveness (+0.5%), same speed (+0.3%)"),
    ((0.0, 5.0 * MIB), (1.0e-3, 1.1e-3), "peak liveness 0 B -> 5.0 MiB, 1.10x slower"),
    ((100.0 * MIB, 50.0 * MIB), (NAN, 1.0e-3), "50.0% less peak liveness, time not known"),
])
def test_the_headline_says_memory_and_time_in_words(peak: tuple[float, float], seconds: tuple[float, float],
                                                     words: str) -> None:
    assert headline(_verdict(peak, seconds)) == f"offchip-sharded vs onchip: {words}; both fit"


def test_a_change_within_the_noise_rule_reads_the_same() -> None:
    # 3% more, but the comparison's noise rule called it unchanged (a generous --noise-pct)
    assert headline(_verdict((100.0, 103.0), (1.0, 1.5), peak_status="unchanged", seconds_status="unchanged")) == \
        "offchip-sharded vs onchip: same peak liveness (+3.0%), same speed (+50.0%); both fit"


@pytest.mark.parametrize(("base_fits", "new_fits", "fit"), [
    (True, True, "both fit"),
    (True, False, "onchip fits, offchip-sharded does NOT"),
    (False, True, "offchip-sharded fits, onchip does NOT"),
    (False, False, "neither fits"),
])
def test_the_headline_says_which_side_fits(base_fits: bool, new_fits: bool, fit: str) -> None:
    verdict = _verdict((100.0 * MIB, 100.0 * MIB), (1.0e-3, 2.3e-3), base_fits=base_fits, new_fits=new_fits)
    assert headline(verdict) == f"offchip-sharded vs onchip: same peak liveness, 2.3x slower; {fit}"


def _variant(label: str, peak_pct: float, *, status: str = "ok", fits: bool | None = True) -> VariantVerdict:
    memory = tuple(_change(m, 100.0, 100.0 + peak_pct if m == "peak_liveness_bytes" else 100.0) for m in MEMORY_METRICS)
    return VariantVerdict(label, status, memory, tuple(_change(m, 1.0, 1.0) for m in TIME_METRICS), None, fits)


def _nway(variants: tuple[VariantVerdict, ...], fastest: str | None = "onchip") -> NWayVerdict:
    fitting = ("onchip", *(v.label for v in variants if v.fits))
    not_fitting = tuple(v.label for v in variants if v.fits is False)
    return NWayVerdict("onchip", variants, fitting, not_fitting, fastest, 1000.0)


def test_the_headline_of_several_variants() -> None:
    three = (_variant("offchip", 7.4), _variant("onchip-sharded", -1.1), _variant("offchip-sharded", 4.1))
    assert nway_headline(_nway(three)) == \
        "4 variants against onchip: all 4 fit; least peak liveness onchip-sharded (-1.1%); fastest onchip (the base)"
    bigger = (_variant("offchip", 7.4), _variant("wide", 20.0, status="oom", fits=False),
              _variant("broken", NAN, status="failed", fits=None))
    assert nway_headline(_nway(bigger, fastest="offchip")) == \
        "4 variants against onchip: 2 of 4 fit (wide do NOT), broken failed; least peak liveness onchip (the base); " \
        "fastest offchip"
    same = (_variant("a", 0.5), _variant("b", -0.5))
    assert nway_headline(_nway(same, fastest=None)) == "3 variants against onchip: all 3 fit; same peak liveness (within 1%)"
    assert nway_headline(_nway(())) == "onchip: the only variant, nothing compared; fits"
    assert nway_headline(_nway(three), base_status="failed") == "onchip (the base) failed: nothing compared"


# ------------------------------------------------------------------ the screen


def test_the_screen_fits_50_lines_of_80_columns_and_ends_with_the_headline(comparison: Comparison) -> None:
    steps = ("open reports/r1/compare-onchip-vs-offchip-sharded.html: the whole comparison",)
    text = comparison_screen(comparison, next_steps=steps, width=80)
    lines = text.splitlines()
    words = headline(comparison_verdict(comparison))
    assert len(lines) <= SCREEN_LINES and max(len(line) for line in lines) <= 80
    assert lines[0] == words and lines[-1] == words and lines[-2] == ""
    titles = [lines[i] for i in range(1, len(lines)) if set(lines[i]) == {"-"} and lines[i - 1]]
    assert len(titles) == 3  # Verdict, Where the memory moved, Next: underlined titles
    assert "\nVerdict\n" in text and "\nWhere the memory moved\n" in text and f"\n{NEXT_TITLE}\n" in text
    assert "- open reports/r1/compare-onchip-vs-offchip-sharded.html: the whole comparison\n" in text
    assert text.index("\nVerdict\n") < text.index("\nWhere the memory moved\n") < text.index(f"\n{NEXT_TITLE}\n")


def test_the_screen_names_fewer_moves_when_the_screen_is_short(comparison: Comparison) -> None:
    every = comparison_brief(comparison).sections[1]
    assert every.title == "Where the memory moved" and len(every.lines) == 8  # 8 of the samples' 12 moves

    def moves(text: str) -> int:
        return sum(line.startswith("- layer") for line in text.splitlines())

    whole = comparison_screen(comparison, width=80, lines=200)
    assert moves(whole) == 8
    # three lines fewer: the last moves (a line or two each) give way, the rest stays
    room = len(whole.splitlines()) - 3
    fitted = comparison_screen(comparison, width=80, lines=room)
    assert 1 <= moves(fitted) < 8 and len(fitted.splitlines()) <= room
    assert fitted.splitlines()[:12] == whole.splitlines()[:12]
    # shorter than the verdict alone: the least detail (one move) is drawn
    assert moves(comparison_screen(comparison, width=80, lines=10)) == 1


def test_the_screen_of_several_variants_drops_its_table_before_the_screen_overflows() -> None:
    from profcompare.render.sections import Cell, Column, Section, Table

    table = Table.of((Column("variant"),), tuple((Cell(f"v{i}"),) for i in range(60)))
    verdict = _nway((_variant("offchip", 7.4),))
    short = nway_screen(verdict, sections=(Section("Variants", (table,)),), next_steps=("open index.html",), width=80)
    assert "Variants" not in short and "open index.html" in short and len(short.splitlines()) <= SCREEN_LINES
    assert " ".join(short.split()).endswith(" ".join(nway_headline(verdict).split()))
    small = Table.of((Column("variant"),), ((Cell("v0"),),))
    assert "\nVariants\n" in nway_screen(verdict, sections=(Section("Variants", (small,)),), width=80)


# ------------------------------------------------------------------ --section names


def test_every_section_of_a_comparison_has_a_name_in_document_order(comparison: Comparison) -> None:
    titles = [section.title for section in comparison_document(comparison).sections]
    named = [title for title in SECTION_NAMES.values() if title in titles]
    assert named == titles  # every section is named, in the order the document draws them
    assert len(set(SECTION_NAMES.values())) == len(SECTION_NAMES)
    from profcompare.render.sections.execution import EXECUTION_TITLE

    assert SECTION_NAMES["execution"] == EXECUTION_TITLE


# ------------------------------------------------------------------ the variables table


def _with_statuses(cmp: Comparison) -> Comparison:
    """The samples' variable diff with some matched pairs that grew and shrank."""
    frame = cmp.variables.copy()
    unchanged = frame.index[frame["status"].astype(str) == "unchanged"][:3]
    for position, delta in zip(unchanged, (4096, -100_000, 70_000), strict=True):
        frame.loc[position, "new_bytes"] = frame.loc[position, "base_bytes"] + delta
        frame.loc[position, "delta_bytes"] = delta
        frame.loc[position, "delta_pct"] = 100.0 * delta / frame.loc[position, "base_bytes"]
        frame.loc[position, "status"] = "grew" if delta > 0 else "shrank"
    return dataclasses.replace(cmp, variables=frame)


def test_matched_changes_come_first_then_added_and_removed(comparison: Comparison) -> None:
    cmp = _with_statuses(comparison)
    view = matched_changes_first(cmp, 5)
    shown = view.shown_rows
    assert list(shown["status"].astype(str)) == ["shrank", "grew", "grew", "removed", "removed"]
    assert list(shown["delta_bytes"])[:3] == [-100_000, 70_000, 4096]
    # the two largest changes of one side only: layer0's second moment (-1,605,632 B), then -1,048,576 B
    assert list(shown["delta_bytes"])[3:] == [-1_605_632, -1_048_576]
    rest = cmp.variables.set_index("name").drop(index=list(shown["name"]))
    other = view.other
    assert other is not None and view.cut == len(cmp.variables) - 5 == len(rest)
    assert (other["base_bytes"], other["new_bytes"], other["delta_bytes"]) == (
        rest["base_bytes"].sum(), rest["new_bytes"].sum(), rest["delta_bytes"].sum())
    assert other["delta_pct"] == pytest.approx(100.0 * rest["delta_bytes"].sum() / rest["base_bytes"].sum())
    # all rows: the unchanged last
    everything = matched_changes_first(cmp, None).rows["status"].astype(str).tolist()
    assert everything[:3] == ["shrank", "grew", "grew"] and set(everything[-15:]) == {"unchanged"}
    pd.testing.assert_frame_equal(matched_changes_first(cmp, 0).rows, matched_changes_first(cmp, None).rows)


def test_the_variables_table_says_what_its_other_row_adds_up(comparison: Comparison) -> None:
    section = next(s for s in comparison_document(comparison, top=6).sections if s.title == "Variables")
    assert section.text == (
        "Variables found in both reports that grew or shrank first, then those in one report only (added, removed), "
        "then the unchanged; each group by |Delta|.")
    # 17 of the 32 rows left out are not-always-live; peak liveness 23,024,748 -> 20,877,420 B
    assert section.notes[:2] == (
        "Top 6 of 38 variables shown; 32 more in the 'other' row.",
        "The 'other' row sums the sizes of the 32 variables not shown, which is not memory in use: 17 are "
        "not-always-live, each live over its own steps (variables live at different steps share addresses). Memory "
        "in use is peak liveness, 22.0 MiB -> 19.9 MiB (see the Summary).",
    )
    whole = next(s for s in comparison_document(comparison, top=None).sections if s.title == "Variables")
    assert not any("'other' row sums" in note for note in whole.notes)


def test_a_path_wider_than_the_screen_stays_whole_and_counts_the_rows_it_wraps_to() -> None:
    from profcompare.render.screen import render_screen, screen_rows
    from profcompare.render.sections import Document, Section

    path = "reports/20261207-120101-onchip-vs-offchip-sharded/compare-onchip-vs-offchip-sharded.html"  # 88 characters
    document = Document("headline", (), (), (Section(NEXT_TITLE, notes=(),
                                                     items=(f"open the whole comparison: {path}",)),))
    text = render_screen(lambda level: document, (0,), width=80)
    assert text.splitlines() == ["headline", "", "Next", "----", "- open the whole comparison:", f"  {path}", "",
                                 "headline"]
    assert screen_rows(text, 80) == 9  # the path's line of 90 characters takes two rows
    assert screen_rows("\x1b[1m" + "x" * 80 + "\x1b[0m\n", 80) == 1 and screen_rows("a\n\nb\n", None) == 3
