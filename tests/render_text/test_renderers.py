"""Text, markdown, json and csv renderers: golden files, shapes and the promises around them."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from render_text_helpers import check_golden, samples, scrub

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison, compare
from profcompare.errors import ProfcompareError
from profcompare.model import METRICS, Report
from profcompare.render.base import FORMATS, Renderer, get_renderer
from profcompare.render.markdown import escape
from profcompare.render.sections import VariablesView
from profcompare.render.text import TextRenderer

ANSI = "\x1b["


# ------------------------------------------------------------------ golden files


def test_show_text_golden(offchip: Report) -> None:
    check_golden("show_offchip.txt", scrub(get_renderer("text").render(offchip, top=6)))


def test_show_markdown_golden(onchip: Report) -> None:
    check_golden("show_onchip.md", scrub(get_renderer("markdown").render(onchip, top=6)))


def test_compare_text_golden(comparison: Comparison) -> None:
    check_golden("compare.txt", scrub(get_renderer("text").render(comparison, top=6)))


def test_compare_markdown_golden(comparison: Comparison) -> None:
    check_golden("compare.md", scrub(get_renderer("markdown").render(comparison, top=6)))


def test_variables_text_golden(offchip: Report) -> None:
    view = analysis.variables_view(offchip, top=5, filter_regex="moment", always_live=False)
    result = VariablesView(offchip, view, filter_regex="moment", always_live=False)
    check_golden("variables_offchip.txt", scrub(get_renderer("text").render(result)))


# ------------------------------------------------------------------ registry


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_has_a_renderer(fmt: str) -> None:
    renderer = get_renderer(fmt)
    assert isinstance(renderer, Renderer)
    assert renderer.name == fmt
    assert renderer.file_extension.startswith(".")


def test_unknown_format_is_a_clear_error() -> None:
    with pytest.raises(ProfcompareError, match="unknown output format 'xml'; choose from text, markdown"):
        get_renderer("xml")


# ------------------------------------------------------------------ text


def test_text_is_plain_unless_colour_is_asked(comparison: Comparison) -> None:
    plain = TextRenderer().render(comparison)
    assert ANSI not in plain
    coloured = TextRenderer(color=True, width=100).render(comparison)
    assert ANSI in coloured
    # growth of memory is red (31), savings green (32)
    assert "\x1b[31m" in coloured and "\x1b[32m" in coloured


def test_text_names_both_reports_and_says_simulated(comparison: Comparison) -> None:
    text = TextRenderer().render(comparison)
    assert "base:        onchip (simulated, profcompare-sim 0.1.0)" in text
    assert "new:         offchip-sharded (simulated, profcompare-sim 0.1.0)" in text
    assert "SIMULATED" in text


def test_text_output_keeps_to_the_width_when_tables_fit(offchip: Report) -> None:
    text = TextRenderer(width=120).render(offchip)
    assert max(len(line) for line in text.splitlines()) <= 120
    assert "Streaming Memory (remote buffers)" in text  # long lines wrap, they are not cut


def test_markup_in_names_is_printed_verbatim() -> None:
    report = samples.build_report("onchip", extra_variables=[("[bold]x[/bold]", 50_000_000)])
    assert "[bold]x[/bold]" in TextRenderer().render(report)


def test_hardware_report_is_not_called_simulated() -> None:
    report = samples.build_report("onchip", simulated=False)
    text = TextRenderer().render(report)
    assert "onchip (Poplar 3.3.0 (de1f8de2a7))" in text
    assert "simulated" not in text.lower()


def test_mixed_comparison_warns_about_simulator_error() -> None:
    cmp = compare(samples.build_report("onchip", simulated=False), samples.build_report("onchip"))
    text = TextRenderer().render(cmp)
    assert "SIMULATED vs Poplar: the new report is simulated" in text


def test_report_without_execution_profile_says_so() -> None:
    report = samples.build_report("onchip", execution=False)
    text = TextRenderer().render(report)
    assert "No execution profile in this report." in text
    assert re.search(r"^Device cycles per step +n/a +~ modelled$", text, re.MULTILINE)
    assert re.search(r"^Host/runtime time per step +n/a +~ modelled$", text, re.MULTILINE)
    assert re.search(r"^Time per session.run \(device \+ host\) +n/a +~ modelled$", text, re.MULTILINE)


def test_top_n_cut_is_announced_with_the_other_row() -> None:
    extra = [(f"scratch/{i}", 1000 + i) for i in range(200)]
    report = samples.build_report("onchip", extra_variables=extra)
    text = TextRenderer().render(report, top=5)
    total = len(report.variables)
    assert f"Top 5 of {total} variables shown; {total - 5} more in the 'other' row" in text
    assert f"other ({total - 5} variables)" in text


# ------------------------------------------------------------------ markdown


def test_markdown_escapes_names_that_could_break_tables() -> None:
    assert escape("a|b") == "a\\|b"
    assert escape("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"
    assert escape("grad_accum*2") == "grad\\_accum\\*2"
    assert escape("two\nlines") == "two lines"
    report = samples.build_report("onchip", extra_variables=[("</script><b>x|y</b>", 90_000_000)])
    md = get_renderer("markdown").render(report)
    assert "&lt;/script&gt;&lt;b&gt;x\\|y&lt;/b&gt;" in md
    assert "<b>" not in md


def test_markdown_tables_are_well_formed(comparison: Comparison) -> None:
    md = get_renderer("markdown").render(comparison)
    lines = md.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(("|:", "|-")):
            columns = line.count("|") - 1
            j = i + 1
            while j < len(lines) and lines[j].startswith("| "):
                unescaped = lines[j].replace("\\|", "")
                assert unescaped.count("|") - 1 == columns, lines[j]
                j += 1


def test_markdown_says_which_report_is_base_and_new(comparison: Comparison) -> None:
    md = get_renderer("markdown").render(comparison)
    assert "- **base**: onchip (simulated, profcompare-sim 0.1.0)" in md
    assert "- **new**: offchip-sharded (simulated, profcompare-sim 0.1.0)" in md
    assert "**grew**" in md  # regressions stand out in a PR comment


# ------------------------------------------------------------------ json


def test_show_json_shape(offchip: Report) -> None:
    data = json.loads(get_renderer("json").render(offchip))
    assert list(data)[:3] == ["schema_version", "meta", "summary"]
    assert data["schema_version"] == 9
    assert data["meta"]["label"] == "offchip-sharded"
    assert data["meta"]["simulated"] is True
    assert list(data["summary"]) == list(METRICS)
    summary = offchip.summary()
    for metric in ("total_bytes", "peak_liveness_bytes", "streaming_memory_bytes", "tiles_over_budget"):
        assert isinstance(data["summary"][metric]["value"], int)
        assert data["summary"][metric]["value"] == int(summary[metric])
    assert data["summary"]["cycles_per_step"]["value"] == pytest.approx(summary["cycles_per_step"])
    assert {m: v["confidence"] for m, v in data["summary"].items()} == dict(offchip.confidence())


def test_show_json_nan_is_null() -> None:
    report = samples.build_report("onchip", execution=False)
    text = get_renderer("json").render(report)
    assert "NaN" not in text
    data = json.loads(text)
    assert data["summary"]["cycles_per_step"]["value"] is None
    assert data["summary"]["samples_per_second"]["value"] is None


def test_compare_json_shape(comparison: Comparison) -> None:
    data = json.loads(get_renderer("json").render(comparison, top=4))
    assert list(data)[:7] == ["schema_version", "base", "new", "verdict", "liveness_rule", "summary", "ledger_moves"]
    assert data["schema_version"] == 9
    assert data["base"]["label"] == "onchip" and data["new"]["label"] == "offchip-sharded"
    assert list(data["summary"]) == list(METRICS)
    peak = data["summary"]["peak_liveness_bytes"]
    assert list(peak) == ["base", "new", "delta", "delta_pct", "status", "confidence"]
    assert peak["confidence"] == "modelled" and data["summary"]["variable_bytes"]["confidence"] == "exact"
    assert peak["delta"] == peak["new"] - peak["base"]
    assert isinstance(peak["base"], int)
    assert data["summary"]["streaming_memory_bytes"]["delta_pct"] is None  # base 0: undefined
    assert len(data["variables"]) == 4
    expected = comparison.variables.iloc[:4]
    assert [v["name"] for v in data["variables"]] == list(expected["name"])
    assert list(data["variables"][0]) == list(comparison.variables.columns)
    first = data["variables"][0]
    assert isinstance(first["base_bytes"], int) and first["new_always_live"] is None


# ------------------------------------------------------------------ csv


def test_show_csv_is_the_summary(offchip: Report) -> None:
    rows = list(csv.DictReader(io.StringIO(get_renderer("csv").render(offchip))))
    assert [r["metric"] for r in rows] == list(METRICS)
    by_metric = {r["metric"]: r for r in rows}
    assert by_metric["total_bytes"]["unit"] == "bytes"
    assert by_metric["total_bytes"]["value"] == str(int(offchip.summary()["total_bytes"]))


def test_show_csv_missing_is_empty() -> None:
    rows = list(csv.DictReader(io.StringIO(get_renderer("csv").render(samples.build_report("onchip", execution=False)))))
    assert {r["metric"]: r["value"] for r in rows}["cycles_per_step"] == ""


def test_compare_csv_is_the_variable_diff(comparison: Comparison) -> None:
    text = get_renderer("csv").render(comparison, top=5)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert text.splitlines()[0].split(",") == list(comparison.variables.columns)
    assert len(rows) == 5
    assert [r["name"] for r in rows] == list(comparison.variables["name"].iloc[:5])
    for r in rows:
        assert int(r["base_bytes"]) + int(r["delta_bytes"]) == int(r["new_bytes"])
    assert all(r["name"] != "other" for r in rows)


def test_variables_csv_and_json_list_the_selection(offchip: Report) -> None:
    view = analysis.variables_view(offchip, top=3, sort="name", filter_regex="^layer1/")
    result = VariablesView(offchip, view, sort="name", filter_regex="^layer1/")
    rows = list(csv.DictReader(io.StringIO(get_renderer("csv").render(result))))
    assert [r["name"] for r in rows] == sorted(r["name"] for r in rows)
    assert all(r["name"].startswith("layer1/") for r in rows) and len(rows) == 3
    data = json.loads(get_renderer("json").render(result))
    matching = offchip.variables[offchip.variables["name"].str.startswith("layer1/")]
    assert data["total"] == len(matching) and data["shown"] == 3 and data["cut"] == len(matching) - 3
    assert data["other_bytes"] == int(matching["bytes"].sum()) - sum(v["bytes"] for v in data["variables"])
    assert data["selection"] == {"sort": "name", "filter": "^layer1/", "always_live": None, "top": 3}


# ------------------------------------------------------------------ partial and empty reports


def test_missing_table_is_not_reported_as_empty() -> None:
    full = samples.build_report("onchip")
    partial = Report.build(
        full.meta.replace(capabilities=frozenset({"tiles", "categories", "variables", "liveness", "code"})),
        tiles=full.tiles, categories=full.categories, variables=full.variables,
        liveness=full.liveness, code=full.code,
    )
    text = TextRenderer().render(partial)
    # one line for what it lacks, and no Streaming Memory section that would read as "none"
    assert ("This report does not record an execution profile, remote buffers (Streaming Memory), an execution "
            "trace, a program tree, operations or vertex types, compute sets and exchanges: the figures and "
            "sections that need them are left out.") in text
    assert "Streaming Memory (remote buffers)\n" not in text
    assert "This report does not record an execution profile." in text
    assert "nothing is kept in Streaming Memory" not in text
    cmp_text = TextRenderer().render(compare(partial, samples.build_report("offchip-sharded")))
    assert "The base report does not record remote buffers (Streaming Memory); its side reads 0." in cmp_text


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "csv"])
def test_empty_reports_render(fmt: str) -> None:
    meta = samples.build_report("onchip").meta.replace(variant="empty", capabilities=frozenset({"tiles"}))
    empty = Report.build(meta)
    renderer = get_renderer(fmt)
    assert renderer.render(empty)
    assert renderer.render(compare(empty, empty))
    if fmt == "text":
        assert "(no variables in either report)" in renderer.render(compare(empty, empty))


def test_markdown_says_costs_are_bold_not_coloured(comparison: Comparison) -> None:
    markdown = get_renderer("markdown").render(comparison, top=6)
    text = get_renderer("text").render(comparison, top=6)
    # markdown has no colour: its legend names the bold it draws costs in; the terminal keeps colour
    assert "Colour:" not in markdown and "Colour: red = costs tile memory or time" in text
    assert "_Bold = costs tile memory or time (frees or saves: not marked); a change of Streaming Memory is never " \
           "bold" in markdown
    summary = markdown[markdown.index("### Summary"):]
    # time per session.run grew (a cost, bold); samples per second fell (a cost, bold)
    assert re.search(r"\| Time per session\.run \(device \+ host\) \| [^|]+ \| [^|]+ \| \*\*\+", summary)
    assert re.search(r"\| Samples per second \| [^|]+ \| [^|]+ \| \*\*-", summary)


#: the keys of schema version 4, kept by version 5
_V4_SHOW_KEYS = ("schema_version", "meta", "summary", "liveness_rule", "ledger", "unattributed_bytes", "peak_step",
                 "live_at_peak", "categories", "variables", "cut", "liveness", "tiles", "code", "phases",
                 "streaming_memory")
_V4_COMPARE_KEYS = ("schema_version", "base", "new", "verdict", "liveness_rule", "summary", "ledger_moves",
                    "ledger_by_parameter", "peak_composition", "ledger", "lifetimes", "variables", "cut", "categories", "tiles",
                    "code", "liveness", "phases", "streaming_memory")


def test_show_json_holds_every_table_the_page_shows(offchip: Report) -> None:
    data = json.loads(get_renderer("json").render(offchip))
    assert list(data)[:len(_V4_SHOW_KEYS)] == list(_V4_SHOW_KEYS)
    assert list(data)[len(_V4_SHOW_KEYS):] == ["time", "liveness_peak", "tile_stats", "memory_per_ipu", "replicas",
                                               "loaded_code", "streaming_memory_totals", "execution_trace",
                                               "programs", "operations", "vertices", "compute_sets", "exchanges",
                                               "ledger_code", "sections"]
    summary = offchip.summary()
    assert data["time"] == {"clock_hz": 1.33e9, "device_seconds_per_step": summary["cycles_per_step"] / 1.33e9,
                            "host_seconds_per_step": None, "seconds_per_step": summary["seconds_per_step"]}
    peak = analysis.liveness_peak(offchip)
    assert data["liveness_peak"] == peak
    assert data["liveness_peak"]["peak_liveness_bytes"] == data["summary"]["peak_liveness_bytes"]["value"]
    stats = analysis.tile_stats(offchip)
    assert {k: v for k, v in data["tile_stats"].items() if k != "worst_tiles"} == {
        k: v for k, v in stats.items() if k != "worst_tiles"}
    assert [t["tile"] for t in data["tile_stats"]["worst_tiles"]] == stats["worst_tiles"]["tile"].tolist()
    assert data["memory_per_ipu"] == [{"ipu": 0, "tiles": 1472, "always_live_bytes": 18_390_380,
                                       "not_always_live_peak_bytes": 2_547_040, "total_bytes": 20_937_420,
                                       "bytes_including_gaps": 21_078_732}]
    assert data["memory_per_ipu"][0]["total_bytes"] == data["summary"]["total_bytes"]["value"]
    # 4 replicas, each with its own 1,396,224 B of remote buffers (all replica-sharded)
    assert data["streaming_memory_totals"] == {"replicas": 4, "per_replica_bytes": 1_396_224,
                                               "sharded_per_replica_bytes": 1_396_224,
                                               "all_replicas_bytes": 5_584_896, "sharded_all_replicas_bytes": 5_584_896}
    assert data["replicas"] == {"replicas": 4, "io_tiles_per_ipu": 0, "collective_phase_cycles": 180_050.0,
                                "groupings": []}
    assert data["execution_trace"] == {"spans": [], "types": [], "run": None, "runs": []} and data["loaded_code"] == []


def test_show_json_has_no_zero_for_what_a_report_does_not_record() -> None:
    report = samples.build_report("onchip", execution=False)
    data = json.loads(get_renderer("json").render(report))
    assert data["time"]["device_seconds_per_step"] is None and data["time"]["seconds_per_step"] is None


def test_compare_json_holds_every_table_the_page_shows(comparison: Comparison) -> None:
    data = json.loads(get_renderer("json").render(comparison))
    assert list(data)[:len(_V4_COMPARE_KEYS)] == list(_V4_COMPARE_KEYS)
    assert list(data)[len(_V4_COMPARE_KEYS):] == ["time", "memory_per_ipu", "replicas", "base_report", "new_report",
                                                   "headline", "programs", "operations", "vertices", "compute_sets",
                                                   "exchanges", "ledger_code", "sections", "config_differences",
                                                   "time_diff"]
    seconds = data["time"]["seconds_per_step"]
    assert (seconds["base"], seconds["new"]) == (data["summary"]["seconds_per_step"]["base"],
                                                 data["summary"]["seconds_per_step"]["new"])
    assert seconds["delta"] == pytest.approx(data["summary"]["seconds_per_step"]["delta"])
    ipu = data["memory_per_ipu"][0]
    assert (ipu["base_total_bytes"], ipu["new_total_bytes"]) == (data["summary"]["total_bytes"]["base"],
                                                                 data["summary"]["total_bytes"]["new"])
    assert data["replicas"] == []
    for side, report in (("base_report", comparison.base), ("new_report", comparison.new)):
        assert list(data[side]) == ["liveness_peak", "tile_stats", "replicas", "loaded_code",
                                    "streaming_memory_totals", "execution_trace"]
        assert data[side]["liveness_peak"] == analysis.liveness_peak(report)
